// The table of submit commands. Keys, attributes and forms follow condor_submit (HTCondor 25);
// docs/user-guide.md lists the same table for users.
#include "submit/commands.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/strings.h"

namespace kite::submit {
namespace {

using F = Form;
using U = KiteUse;

constexpr const char* kNoContainers = "Kite does not run containers (docker or container universe)";
constexpr const char* kNoVm = "Kite does not run universe = vm";
constexpr const char* kNoTdp = "Kite has no tool daemons";
constexpr const char* kNoTokens =
    "Kite's credentials are X.509 proxies; it has no credd for tokens";
constexpr const char* kPool = "used by Kite's pool when it matches vanilla jobs";
constexpr const char* kCloud =
    "for HTCondor's grid types; Kite's gridmanager runs kite, arc and gt5 resources";
constexpr const char* kArcLater = "not sent to ARC CEs yet (docs/grid-arc.md)";

// clang-format off
const CommandInfo kCommands[] = {
    // What runs, and how.
    {"universe", "JobUniverse", F::kSpecial, U::kActs, "vanilla, local, grid; standard as vanilla with remote I/O and transparent checkpoints; others are refused", ""},
    {"executable", "Cmd", F::kSpecial, U::kActs, "", ""},
    {"transfer_executable", "TransferExecutable", F::kSpecial, U::kActs, "", ""},
    {"arguments", "Args", F::kSpecial, U::kActs, "old syntax -> Args, new (\"...\") -> Arguments", "args"},
    {"arguments2", "Arguments", F::kSpecial, U::kActs, "new syntax only", ""},
    {"allow_arguments_v1", nullptr, F::kSpecial, U::kActs, "needed to give both arguments and arguments2", ""},
    {"environment", "Environment", F::kSpecial, U::kActs, "", ""},
    {"env", "Env", F::kSpecial, U::kActs, "old syntax -> Env (with EnvDelim)", ""},
    {"environment2", "Environment", F::kSpecial, U::kActs, "", ""},
    {"allow_environment_v1", nullptr, F::kSpecial, U::kActs, "", ""},
    {"getenv", nullptr, F::kSpecial, U::kActs, "true, false or a list of variable names", "get_env"},
    {"initialdir", "Iwd", F::kSpecial, U::kActs, "", "initial_dir|job_iwd"},
    {"input", "In", F::kSpecial, U::kActs, "", "stdin"},
    {"output", "Out", F::kSpecial, U::kActs, "", "stdout"},
    {"error", "Err", F::kSpecial, U::kActs, "", "stderr"},
    {"transfer_input", "TransferIn", F::kSpecial, U::kActs, "", ""},
    {"transfer_output", "TransferOut", F::kSpecial, U::kActs, "", ""},
    {"transfer_error", "TransferErr", F::kSpecial, U::kActs, "", ""},
    {"stream_input", "StreamIn", F::kSpecial, U::kRecords, "", ""},
    {"stream_output", "StreamOut", F::kSpecial, U::kActs, "grid and vanilla jobs", ""},
    {"stream_error", "StreamErr", F::kSpecial, U::kActs, "grid and vanilla jobs", ""},
    {"log", "UserLog", F::kSpecial, U::kActs, "", ""},
    {"log_xml", "UserLogUseXML", F::kSpecial, U::kActs, "true is refused: Kite writes the text format", ""},
    {"skip_filechecks", nullptr, F::kSpecial, U::kActs, "true, false or warn", ""},
    {"hold", "JobStatus", F::kSpecial, U::kActs, "", ""},
    {"notification", "JobNotification", F::kSpecial, U::kActs, "", ""},
    {"notify_user", "NotifyUser", F::kString, U::kActs, "", ""},
    {"email_attributes", "EmailAttributes", F::kList, U::kRecords, "", ""},
    {"x509userproxy", "x509userproxy", F::kSpecial, U::kActs, "", ""},
    {"use_x509userproxy", nullptr, F::kSpecial, U::kActs, "", ""},
    {"delegate_job_gsi_credentials_lifetime", "DelegateJobGSICredentialsLifetime", F::kInt, U::kRecords, "", ""},
    {"credential_alarm", "CredentialAlarm", F::kSpecial, U::kActs, "Kite's own: e-mail before the proxy expires", ""},
    {"copy_to_spool", nullptr, F::kSpecial, U::kActs, "true is refused: Kite does not spool", ""},
    {"description", "JobDescription", F::kString, U::kRecords, "", ""},
    {"batch_name", "JobBatchName", F::kUnquoted, U::kRecords, "", ""},
    {"batch_id", "JobBatchId", F::kUnquoted, U::kRecords, "", ""},
    {"priority", "JobPrio", F::kInt, U::kRecords, "", "prio"},
    {"submit_event_notes", "SubmitEventNotes", F::kString, U::kRecords, "", ""},
    {"submit_event_user_notes", "SubmitEventUserNotes", F::kString, U::kRecords, "", ""},

    // Policy.
    {"requirements", "Requirements", F::kSpecial, U::kRecords, kPool, ""},
    {"rank", "Rank", F::kSpecial, U::kRecords, kPool, "preferences"},
    {"periodic_hold", "PeriodicHold", F::kExpr, U::kActs, "", ""},
    {"periodic_hold_reason", "PeriodicHoldReason", F::kExpr, U::kActs, "", ""},
    {"periodic_hold_subcode", "PeriodicHoldSubCode", F::kExpr, U::kActs, "", ""},
    {"periodic_release", "PeriodicRelease", F::kExpr, U::kActs, "", ""},
    {"periodic_remove", "PeriodicRemove", F::kExpr, U::kActs, "", ""},
    {"periodic_vacate", "PeriodicVacate", F::kExpr, U::kRecords, "", ""},
    {"on_exit_hold", "OnExitHold", F::kSpecial, U::kActs, "", ""},
    {"on_exit_hold_reason", "OnExitHoldReason", F::kExpr, U::kActs, "", ""},
    {"on_exit_hold_subcode", "OnExitHoldSubCode", F::kExpr, U::kActs, "", ""},
    {"on_exit_remove", "OnExitRemove", F::kSpecial, U::kActs, "", ""},
    {"max_retries", "JobMaxRetries", F::kSpecial, U::kActs, "through OnExitRemove; needs NumJobCompletions", ""},
    {"success_exit_code", "JobSuccessExitCode", F::kSpecial, U::kActs, "through OnExitRemove", ""},
    {"retry_until", nullptr, F::kSpecial, U::kActs, "through OnExitRemove", ""},
    {"leave_in_queue", "LeaveJobInQueue", F::kSpecial, U::kRecords, "", ""},
    {"globus_resubmit", "GlobusResubmit", F::kExpr, U::kRecords, "", ""},
    {"next_job_start_delay", "NextJobStartDelay", F::kExpr, U::kRecords, "", ""},
    {"keep_claim_idle", "KeepClaimIdle", F::kExpr, U::kRecords, kPool, ""},
    {"want_graceful_removal", "WantGracefulRemoval", F::kExpr, U::kRecords, "", ""},
    {"job_max_vacate_time", "JobMaxVacateTime", F::kExpr, U::kRecords, "", ""},
    {"max_job_retirement_time", "MaxJobRetirementTime", F::kExpr, U::kRecords, "", ""},
    {"job_lease_duration", "JobLeaseDuration", F::kSpecial, U::kRecords, "", ""},
    {"allowed_job_duration", "AllowedJobDuration", F::kExpr, U::kRecords, "", ""},
    {"allowed_execute_duration", "AllowedExecuteDuration", F::kExpr, U::kRecords, "", ""},
    {"kill_sig", "KillSig", F::kSpecial, U::kRecords, "Kite stops jobs with SIGTERM, then SIGKILL", ""},
    {"remove_kill_sig", "RemoveKillSig", F::kSpecial, U::kRecords, "", ""},
    {"hold_kill_sig", "HoldKillSig", F::kSpecial, U::kRecords, "", ""},
    {"kill_sig_timeout", "KillSigTimeout", F::kSpecial, U::kRecords, "", ""},
    {"noop_job", "IsNoopJob", F::kExpr, U::kRecords, "", ""},
    {"noop_job_exit_signal", "NoopJobExitSignal", F::kExpr, U::kRecords, "", ""},
    {"noop_job_exit_code", "NoopJobExitCode", F::kExpr, U::kRecords, "", ""},
    {"checkpoint_exit_code", "CheckpointExitCode", F::kSpecial, U::kActs, "vanilla: the checkpoint is stored and the job starts again", ""},
    {"checkpoint_destination", "CheckpointDestination", F::kString, U::kRecords, "", ""},
    {"checkpoint", "TransparentCheckpoint", F::kSpecial, U::kActs, "vanilla: transparent: the program's state is checkpointed without its help (docs/checkpoints.md)", ""},
    {"checkpoint_interval", "CheckpointInterval", F::kSpecial, U::kActs, "vanilla, transparent checkpoints: seconds between periodic checkpoints", ""},
    {"want_remote_io", "WantRemoteIO", F::kBool, U::kActs, "vanilla: the program's file calls on the job's files go to the submit host while it runs (docs/remote-io.md)", ""},
    {"remote_io_method", "WantRemoteIOMethod", F::kSpecial, U::kActs, "vanilla, with want_remote_io: auto (the default): through the kernel where the execute node allows it, else the preloaded library; fuse: only through the kernel; preload: only the library", ""},
    {"remote_io_paths", "RemoteIOPaths", F::kString, U::kActs, "vanilla, with want_remote_io: more files and folders the program reaches remotely", ""},
    {"erase_output_and_error_on_restart", "DontAppend", F::kBool, U::kRecords, "", ""},
    {"skip_if_dataflow", "SkipIfDataflow", F::kBool, U::kRecords, "", ""},

    // Resources.
    {"request_cpus", "RequestCpus", F::kSpecial, U::kActs, "a grid job's batch request", ""},
    {"request_memory", "RequestMemory", F::kSpecial, U::kActs, "MiB; \"1GB, 2GB\" also sets the retries", ""},
    {"request_disk", "RequestDisk", F::kSpecial, U::kRecords, "KiB", ""},
    {"request_gpus", "RequestGPUs", F::kSpecial, U::kRecords, "", ""},
    {"require_gpus", "RequireGPUs", F::kSpecial, U::kRecords, "", ""},
    {"gpus_minimum_capability", "GPUsMinCapability", F::kSpecial, U::kRecords, "", ""},
    {"gpus_maximum_capability", "GPUsMaxCapability", F::kSpecial, U::kRecords, "", ""},
    {"gpus_minimum_memory", "GPUsMinMemory", F::kSpecial, U::kRecords, "MiB", ""},
    {"gpus_minimum_runtime", "GPUsMinRuntime", F::kSpecial, U::kRecords, "x.y -> x*1000+y*10", ""},
    {"cuda_version", "CUDAVersion", F::kSpecial, U::kRecords, "", ""},
    {"request_*", "Request*", F::kSpecial, U::kRecords, "custom resources", ""},
    {"require_*", "Require*", F::kSpecial, U::kRecords, "custom resource constraints", ""},
    {"retry_request_memory", "RetryRequestMemory", F::kSpecial, U::kRecords, "TransformOnEvict", ""},
    {"retry_request_memory_max", "MaxRequestMemory", F::kSpecial, U::kRecords, "TransformOnEvict", ""},
    {"retry_request_memory_increase", "NextRequestMemory", F::kSpecial, U::kRecords, "TransformOnEvict", ""},
    {"retry_request_disk", "RetryRequestDisk", F::kSpecial, U::kRecords, "TransformOnEvict", ""},
    {"retry_request_disk_max", "MaxRequestDisk", F::kSpecial, U::kRecords, "TransformOnEvict", ""},
    {"retry_request_disk_increase", "NextRequestDisk", F::kSpecial, U::kRecords, "TransformOnEvict", ""},
    {"image_size", "ImageSize", F::kSpecial, U::kRecords, "KiB", ""},
    {"disk_usage", "DiskUsage", F::kSpecial, U::kRecords, "KiB", ""},
    {"memory_usage", "MemoryUsage", F::kSpecial, U::kRecords, "MiB", ""},
    {"batch_queue", "BatchQueue", F::kSpecial, U::kActs, "a grid job's batch request", ""},
    {"batch_project", "BatchProject", F::kSpecial, U::kActs, "a grid job's batch request", ""},
    {"batch_runtime", "BatchRuntime", F::kSpecial, U::kActs, "seconds; 2h, 90m also", ""},
    {"batch_extra_submit_args", "BatchExtraSubmitArgs", F::kString, U::kRecords, kCloud, ""},
    {"concurrency_limits", "ConcurrencyLimits", F::kSpecial, U::kRecords, "", ""},
    {"concurrency_limits_expr", "ConcurrencyLimits", F::kSpecial, U::kRecords, "", ""},
    {"accounting_group", "AccountingGroup", F::kSpecial, U::kRecords, "", ""},
    {"accounting_group_user", "AcctGroupUser", F::kSpecial, U::kRecords, "", ""},
    {"nice_user", "NiceUser", F::kSpecial, U::kRecords, "accounting group nice-user", ""},
    {"max_materialize", "JobMaterializeLimit", F::kSpecial, U::kRecords, "Kite queues every job at once", ""},
    {"max_idle", "JobMaterializeMaxIdle", F::kSpecial, U::kRecords, "Kite queues every job at once", "materialize_max_idle"},
    {"wantparallelscheduling", "WantParallelScheduling", F::kSpecial, U::kRecords, kPool, ""},
    {"machine_count", "MachineCount", F::kSpecial, U::kRecords, "with WantParallelScheduling", "node_count|nodecount"},

    // Files.
    {"should_transfer_files", "ShouldTransferFiles", F::kSpecial, U::kRecords, "", ""},
    {"when_to_transfer_output", "WhenToTransferOutput", F::kSpecial, U::kRecords, "", ""},
    {"transfer_input_files", "TransferInput", F::kSpecial, U::kActs, "grid jobs (files; no URLs or directories)", "transferinputfiles"},
    {"transfer_output_files", "TransferOutput", F::kSpecial, U::kRecords, "grid jobs: brought back from Kite and GRAM5 gatekeepers and ARC CEs (folders too, except from GRAM5)", "transferoutputfiles"},
    {"transfer_output_remaps", "TransferOutputRemaps", F::kSpecial, U::kRecords, "", ""},
    {"transfer_plugins", "TransferPlugins", F::kString, U::kRecords, "", ""},
    {"transfer_checkpoint_files", "TransferCheckpoint", F::kString, U::kActs, "vanilla: what a checkpoint is", ""},
    {"preserve_relative_paths", "PreserveRelativePaths", F::kBool, U::kRecords, "", ""},
    {"output_destination", "OutputDestination", F::kString, U::kRecords, "", ""},
    {"output_directory", "OutputDirectory", F::kString, U::kRecords, "", ""},
    {"max_transfer_input_mb", "MaxTransferInputMB", F::kExpr, U::kRecords, "", ""},
    {"max_transfer_output_mb", "MaxTransferOutputMB", F::kExpr, U::kRecords, "", ""},
    {"remote_initialdir", "RemoteIwd", F::kString, U::kRecords, "", ""},
    {"encrypt_execute_directory", "EncryptExecuteDirectory", F::kBool, U::kRecords, "", ""},
    {"encrypt_input_files", "EncryptInputFiles", F::kString, U::kRecords, "", ""},
    {"encrypt_output_files", "EncryptOutputFiles", F::kString, U::kRecords, "", ""},
    {"dont_encrypt_input_files", "DontEncryptInputFiles", F::kString, U::kRecords, "", ""},
    {"dont_encrypt_output_files", "DontEncryptOutputFiles", F::kString, U::kRecords, "", ""},
    {"file_remaps", "FileRemaps", F::kExpr, U::kRecords, "", ""},
    {"buffer_files", "BufferFiles", F::kExpr, U::kRecords, "", ""},
    {"buffer_size", "BufferSize", F::kExpr, U::kRecords, "", ""},
    {"buffer_block_size", "BufferBlockSize", F::kExpr, U::kRecords, "", ""},
    {"fetch_files", "FetchFiles", F::kString, U::kRecords, "", ""},
    {"compress_files", "CompressFiles", F::kString, U::kRecords, "", ""},
    {"append_files", "AppendFiles", F::kString, U::kRecords, "", ""},
    {"local_files", "LocalFiles", F::kString, U::kRecords, "", ""},
    {"jar_files", "JarFiles", F::kString, U::kRecords, "", ""},
    {"manifest", "JobManifestDesired", F::kBool, U::kRecords, "", ""},
    {"manifest_dir", "JobManifestDir", F::kString, U::kRecords, "", ""},
    {"dagman_log", "DAGManNodesLog", F::kLogPath, U::kRecords, "", ""},
    {"ulog_execute_attrs", "ULogExecuteEventAttrs", F::kString, U::kRecords, "", ""},
    {"starter_debug", "JobStarterDebug", F::kUnquoted, U::kRecords, "", ""},
    {"starter_log", "JobStarterLog", F::kUnquoted, U::kRecords, "", ""},
    {"core_size", "CoreSize", F::kInt, U::kRecords, "", ""},
    {"stack_size", "StackSize", F::kExpr, U::kRecords, "", ""},
    {"want_io_proxy", "WantIOProxy", F::kBool, U::kRecords, "", ""},
    {"load_profile", "LoadProfile", F::kBool, U::kRecords, "", ""},
    {"run_as_owner", "RunAsOwner", F::kBool, U::kRecords, "", ""},
    {"aws_access_key_id_file", "EC2AccessKeyId", F::kString, U::kRecords, "s3:// URLs", "s3_access_key_id_file|gs_access_key_id_file"},
    {"aws_secret_access_key_file", "EC2SecretAccessKey", F::kString, U::kRecords, "s3:// URLs", "s3_secret_access_key_file|gs_secret_access_key_file"},
    {"aws_region", "AWSRegion", F::kString, U::kRecords, "", ""},

    // Scheduling and bookkeeping for HTCondor's tools.
    {"job_ad_information_attrs", "JobAdInformationAttrs", F::kString, U::kRecords, "", ""},
    {"job_machine_attrs", "JobMachineAttrs", F::kString, U::kRecords, "", ""},
    {"job_machine_attrs_history_length", "JobMachineAttrsHistoryLength", F::kInt, U::kRecords, "", ""},
    {"match_list_length", "LastMatchListLength", F::kInt, U::kRecords, "", ""},
    {"dagman_job_id", "DAGManJobId", F::kUInt, U::kRecords, "", ""},
    {"dag_node_name", "DAGNodeName", F::kString, U::kRecords, "", ""},
    {"parallel_script_shadow", "ParallelScriptShadow", F::kString, U::kRecords, "", ""},
    {"parallel_script_starter", "ParallelScriptStarter", F::kString, U::kRecords, "", ""},
    {"cron_minute", "CronMinute", F::kString, U::kRecords, "", ""},
    {"cron_hour", "CronHour", F::kString, U::kRecords, "", ""},
    {"cron_day_of_month", "CronDayOfMonth", F::kString, U::kRecords, "", ""},
    {"cron_month", "CronMonth", F::kString, U::kRecords, "", ""},
    {"cron_day_of_week", "CronDayOfWeek", F::kString, U::kRecords, "", ""},
    {"cron_window", "DeferralWindow", F::kSpecial, U::kRecords, "", ""},
    {"cron_prep_time", "DeferralPrepTime", F::kSpecial, U::kRecords, "", ""},
    {"deferral_time", "DeferralTime", F::kSpecial, U::kRecords, "", ""},
    {"deferral_window", "DeferralWindow", F::kSpecial, U::kRecords, "", ""},
    {"deferral_prep_time", "DeferralPrepTime", F::kSpecial, U::kRecords, "", ""},
    {"java_vm_args", "JavaVMArgs", F::kString, U::kRecords, "", "java_vm_arguments"},
    {"java_vm_arguments2", "JavaVMArguments", F::kString, U::kRecords, "", ""},
    {"jobset", "JobSetName", F::kUnquoted, U::kRecords, "", ""},
    {"remote_universe", "Remote_JobUniverse", F::kSpecial, U::kRecords, "", ""},
    {"remote_remote_universe", "Remote_Remote_JobUniverse", F::kSpecial, U::kRecords, "", ""},
    {"remote_grid_resource", "Remote_GridResource", F::kString, U::kRecords, "", ""},
    {"remote_remote_grid_resource", "Remote_Remote_GridResource", F::kString, U::kRecords, "", ""},
    {"globus_rsl", "GlobusRSL", F::kString, U::kRecords, "", ""},

    // The grid universe.
    {"grid_resource", "GridResource", F::kSpecial, U::kActs, "kite HOST:PORT[/BATCH], arc [https://]HOST[:PORT][/PATH], gt5 HOST[:PORT][/SERVICE]; HTCondor's other types are recorded and held", ""},
    {"arc_rte", "ArcRte", F::kString, U::kRecords, kArcLater, ""},
    {"arc_resources", "ArcResources", F::kString, U::kRecords, kArcLater, ""},
    {"arc_application", "ArcApplication", F::kString, U::kRecords, kArcLater, ""},
    {"ec2_access_key_id", "EC2AccessKeyId", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_secret_access_key", "EC2SecretAccessKey", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_ami_id", "EC2AmiID", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_instance_type", "EC2InstanceType", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_keypair", "EC2KeyPair", F::kSpecial, U::kRecords, kCloud, "ec2_keyp_air"},
    {"ec2_keypair_file", "EC2KeyPairFile", F::kSpecial, U::kRecords, kCloud, "ec2_key_pair_file"},
    {"ec2_security_groups", "EC2SecurityGroups", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_security_ids", "EC2SecurityIDs", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_user_data", "EC2UserData", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_user_data_file", "EC2UserDataFile", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_elastic_ip", "EC2ElasticIp", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_availability_zone", "EC2AvailabilityZone", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_ebs_volumes", "EC2ElasticBlockStorageVolumes", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_vpc_subnet", "EC2VpcSubnet", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_vpc_ip", "EC2VpcIp", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_spot_price", "EC2SpotPrice", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_block_device_mapping", "EC2BlockDeviceMapping", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_iam_profile_arn", "EC2IamProfileArn", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_iam_profile_name", "EC2IamProfileName", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_tag_names", "EC2TagNames", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_tag_*", "EC2Tag*", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_parameter_names", "EC2ParamNames", F::kSpecial, U::kRecords, kCloud, ""},
    {"ec2_parameter_*", "EC2Param_*", F::kSpecial, U::kRecords, kCloud, ""},
    {"wantnametag", nullptr, F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_auth_file", "GceAuthFile", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_account", "GceAccount", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_image", "GceImage", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_machine_type", "GceMachineType", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_metadata", "GceMetadata", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_metadata_file", "GceMetadataFile", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_preemptible", "GcePreemptible", F::kSpecial, U::kRecords, kCloud, ""},
    {"gce_json_file", "GceJsonFile", F::kSpecial, U::kRecords, kCloud, ""},
    {"cloud_label_names", "CloudLabelNames", F::kSpecial, U::kRecords, kCloud, ""},
    {"cloud_label_*", "CloudLabel*", F::kSpecial, U::kRecords, kCloud, ""},
    {"azure_auth_file", "AzureAuthFile", F::kSpecial, U::kRecords, kCloud, ""},
    {"azure_image", "AzureImage", F::kSpecial, U::kRecords, kCloud, ""},
    {"azure_location", "AzureLocation", F::kSpecial, U::kRecords, kCloud, ""},
    {"azure_size", "AzureSize", F::kSpecial, U::kRecords, kCloud, ""},
    {"azure_admin_username", "AzureAdminUsername", F::kSpecial, U::kRecords, kCloud, ""},
    {"azure_admin_key", "AzureAdminKey", F::kSpecial, U::kRecords, kCloud, ""},

    // Refused.
    {"docker_image", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"docker_network_type", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"docker_pull_policy", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"docker_override_entrypoint", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"docker_send_credentials", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"container_image", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"container_service_names", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"*_container_port", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"container_target_dir", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"container_is_common", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"transfer_container", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"mount_under_scratch", nullptr, F::kSpecial, U::kRefused, kNoContainers, ""},
    {"vm_type", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_memory", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_vcpus", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_disk", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_macaddr", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_checkpoint", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_networking", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_networking_type", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_vnc", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"vm_no_output_vm", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"xen_kernel", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"xen_initrd", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"xen_root", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"xen_kernel_params", nullptr, F::kSpecial, U::kRefused, kNoVm, ""},
    {"tool_daemon_cmd", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"tool_daemon_args", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"tool_daemon_arguments", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"tool_daemon_arguments2", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"tool_daemon_input", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"tool_daemon_output", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"tool_daemon_error", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"suspend_job_at_exec", nullptr, F::kSpecial, U::kRefused, kNoTdp, ""},
    {"use_scitokens", nullptr, F::kSpecial, U::kRefused, kNoTokens, "use_scitoken"},
    {"scitokens_file", nullptr, F::kSpecial, U::kRefused, kNoTokens, ""},
    {"use_oauth_services", nullptr, F::kSpecial, U::kRefused, kNoTokens, ""},
    {"*_oauth_permissions", nullptr, F::kSpecial, U::kRefused, kNoTokens, ""},
    {"*_oauth_resource", nullptr, F::kSpecial, U::kRefused, kNoTokens, ""},
    {"*_oauth_options", nullptr, F::kSpecial, U::kRefused, kNoTokens, ""},
    {"send_credential", nullptr, F::kSpecial, U::kRefused, kNoTokens, ""},
    {"interactive_executable", nullptr, F::kSpecial, U::kRefused, "Kite has no interactive jobs", ""},
    {"interactive_args", nullptr, F::kSpecial, U::kRefused, "Kite has no interactive jobs", ""},
    {"rendezvousdir", nullptr, F::kSpecial, U::kRefused, "Kite has no tool daemons", ""},
    {"public_input_files", nullptr, F::kSpecial, U::kRefused, "Kite has no public file server", ""},
    {"common_input_files", nullptr, F::kSpecial, U::kRefused, "Kite has no shared input cache", ""},
    {"want_job_networking", nullptr, F::kSpecial, U::kRefused, "Kite does not cut a job off the network", ""},
    {"primary_unix_group", nullptr, F::kSpecial, U::kRefused, "Kite runs jobs as you, with your groups", ""},
    {"shell", nullptr, F::kSpecial, U::kRefused, "write executable = /bin/sh and arguments = \"-c '...'\"", ""},
    {"exit_requirements", nullptr, F::kSpecial, U::kRefused, "use on_exit_remove and on_exit_hold", ""},
    {"on_evict_checks", nullptr, F::kSpecial, U::kRefused, "Kite has no eviction transforms of its own", ""},
    {"transform_body_*", nullptr, F::kSpecial, U::kRefused, "Kite has no eviction transforms of its own", ""},
    {"want_ads", nullptr, F::kSpecial, U::kRefused, "an HTCondor schedd feature with no counterpart in Kite", ""},
    {"jobset.*", nullptr, F::kSpecial, U::kRefused, "Kite has no job sets", ""},
};
// clang-format on

bool IsPrefixKey(std::string_view key) {
  return key.ends_with('*') || key.starts_with('*');
}

// `name` matches a family key such as "request_*", "*_container_port" or "jobset.*".
bool MatchesFamily(std::string_view family, std::string_view name) {
  if (family.ends_with('*')) {
    std::string_view prefix = family.substr(0, family.size() - 1);
    return name.size() > prefix.size() + 1 && name.starts_with(prefix);
  }
  std::string_view suffix = family.substr(1);
  return name.size() > suffix.size() && name.ends_with(suffix);
}

struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Index {
  // Lower-case names; found by string_view, so a lookup of a lower-case name allocates nothing.
  std::unordered_map<std::string, const CommandInfo*, NameHash, std::equal_to<>> by_name;
  std::unordered_map<const CommandInfo*, std::vector<std::string>> names;
  std::vector<const CommandInfo*> families;

  Index() {
    // Keys first, so an attribute name never hides another command's key (Env vs env).
    for (const auto& c : kCommands) {
      if (IsPrefixKey(c.key)) {
        families.push_back(&c);
        continue;
      }
      by_name.emplace(c.key, &c);
      names[&c].push_back(c.key);
    }
    for (const auto& c : kCommands) {
      if (IsPrefixKey(c.key)) continue;
      for (const auto& alias : Split(c.aliases, '|')) {
        if (by_name.emplace(alias, &c).second) names[&c].push_back(alias);
      }
    }
    // condor_submit also reads a command under its attribute's name (`OnExitRemove = false`),
    // except the standard streams: In, Out and Err stay free as macro names.
    for (const auto& c : kCommands) {
      if (c.attr == nullptr || IsPrefixKey(c.key) || c.use == KiteUse::kRefused) continue;
      std::string attr = ToLower(c.attr);
      if (attr == "in" || attr == "out" || attr == "err") continue;
      if (by_name.emplace(attr, &c).second) names[&c].push_back(attr);
    }
  }
};

const Index& TheIndex() {
  static const Index index;
  return index;
}

}  // namespace

std::span<const CommandInfo> AllCommands() {
  return kCommands;
}

const CommandInfo* FindCommand(std::string_view name) {
  const Index& index = TheIndex();
  bool is_lower =
      std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  std::string folded = is_lower ? std::string() : ToLower(name);
  std::string_view lower = is_lower ? name : std::string_view(folded);
  if (auto it = index.by_name.find(lower); it != index.by_name.end()) return it->second;
  for (const CommandInfo* family : index.families) {
    if (MatchesFamily(family->key, lower)) return family;
  }
  return nullptr;
}

bool IsCommand(std::string_view lower_name) {
  return FindCommand(lower_name) != nullptr;
}

std::span<const std::string> CommandNames(const CommandInfo& info) {
  static const std::vector<std::string> kNone;
  const Index& index = TheIndex();
  auto it = index.names.find(&info);
  return it == index.names.end() ? std::span<const std::string>(kNone) : it->second;
}

}  // namespace kite::submit
