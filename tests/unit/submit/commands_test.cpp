// Submit commands and the job attributes they produce.
#include <gtest/gtest.h>

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "classad/expr.h"
#include "submit/submit_file.h"
#include "submit_test_util.h"

namespace kite::submit {
namespace {

using CommandsTest = SubmitTest;

// A vanilla job with nothing but an executable gets what condor_submit writes for it.
TEST_F(CommandsTest, MinimalFileGetsHTCondorDefaults) {
  auto c = MustParse("executable = prog\nqueue\n");
  ASSERT_EQ(c.procs.size(), 1u);
  struct {
    const char* attr;
    std::string expr;
  } want[] = {
      {"ClusterId", "42"},
      {"ProcId", "0"},
      {"Owner", "\"alice\""},
      {"JobUniverse", "5"},
      {"Cmd", D("\"{dir}/prog\"")},
      {"Arguments", "\"\""},
      {"Environment", "\"\""},
      {"Iwd", D("\"{dir}\"")},
      {"JobSubmitFile", "\"job.sub\""},
      {"In", "\"/dev/null\""},
      {"Out", "\"/dev/null\""},
      {"Err", "\"/dev/null\""},
      {"TransferIn", "false"},
      {"TransferOut", "false"},
      {"TransferErr", "false"},
      {"JobStatus", "1"},
      {"JobNotification", "0"},
      {"Rank", "0.0"},
      {"LeaveJobInQueue", "false"},
      {"RequestCpus", "1"},
      {"RequestDisk", "DiskUsage"},
      {"RequestMemory",
       "ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024)"},
      {"ShouldTransferFiles", "\"IF_NEEDED\""},
      {"WhenToTransferOutput", "\"ON_EXIT\""},
      {"FileSystemDomain", "\"submit.example.org\""},
      {"ExecutableSize", "1"},
      {"ImageSize", "1"},
      {"DiskUsage", "1"},
      {"TransferInputSizeMB", "0"},
      {"MinHosts", "1"},
      {"MaxHosts", "1"},
      {"CurrentHosts", "0"},
      {"JobPrio", "0"},
      {"Requirements",
       "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= "
       "RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == "
       "MY.FileSystemDomain) || (TARGET.HasFileTransfer))"},
  };
  for (const auto& w : want) EXPECT_EQ(Get(c, w.attr), w.expr) << w.attr;
  // condor_submit sets no policy of its own, and Args only for old-syntax arguments.
  for (const char* absent : {"UserLog", "GridResource", "x509userproxy", "HoldReason", "NotifyUser",
                             "Args", "OnExitRemove", "OnExitHold", "PeriodicHold", "PeriodicRemove",
                             "PeriodicRelease", "StreamOut", "KillSig"}) {
    EXPECT_EQ(Get(c, absent), "<unset>") << absent;
  }
  EXPECT_TRUE(c.warnings.empty());
}

struct CommandCase {
  const char* lines;  // inserted between `executable = prog` and `queue`
  const char* attr;
  const char* expr;  // "{dir}" is the scratch directory
};

const CommandCase kCommandCases[] = {
    {"universe = local", "JobUniverse", "12"},
    {"universe = local", "KillSig", "\"SIGTERM\""},
    {"Universe = VANILLA", "JobUniverse", "5"},
    {"universe = grid\ngrid_resource = kite gk.example.org:9618/slurm", "JobUniverse", "9"},
    {"universe = grid\ngrid_resource = kite gk.example.org:9618/slurm", "GridResource",
     "\"kite gk.example.org:9618/slurm\""},
    {"universe = grid\ngrid_resource = kite gk.example.org:9618/slurm", "Requirements", "true"},
    {"universe = grid\ngrid_resource = kite gk:1\nrequirements = Memory > 1", "Requirements",
     "(Memory > 1)"},
    {"universe = grid\ngrid_resource = kite [::1]:9618", "GridResource", "\"kite [::1]:9618\""},
    // New syntax -> Arguments; old syntax -> Args (condor_submit's V1 raw form).
    {"arguments = \"one 'two with spaces' 3\"", "Arguments", "\"one two' 'with' 'spaces 3\""},
    {"arguments = -n 5 \\\"x\\\"", "Args", "\"-n 5 \\\"x\\\"\""},
    {"ARGUMENTS = a   b", "Args", "\"a b\""},
    {"args = a b", "Args", "\"a b\""},
    {"args = \"a 'b c'\"", "Arguments", "\"a b' 'c\""},
    {"arguments = old\narguments2 = \"new one\"\nallow_arguments_v1 = true", "Arguments",
     "\"new one\""},
    {"environment = \"A=1 B='x y'\"", "Environment", "\"A=1 B=x' 'y\""},
    {"environment = A=1;B=2", "Environment", "\"A=1 B=2\""},
    {"env = A=1;B=2", "Env", "\"A=1;B=2\""},
    {"env = A=1;B=2", "EnvDelim", "\";\""},
    {"env = \"A=1 B=2\"", "Environment", "\"A=1 B=2\""},
    {"input = data.txt", "In", "\"data.txt\""},
    {"input = data.txt", "StreamIn", "false"},
    {"output = out.txt", "Out", "\"out.txt\""},
    {"output = out.txt", "StreamOut", "false"},
    {"output = out.txt\ntransfer_output = false", "TransferOut", "false"},
    {"error = subdir/err.txt", "Err", "\"subdir/err.txt\""},
    {"log = job.log", "UserLog", "\"{dir}/job.log\""},
    {"log = /tmp/abs.log", "UserLog", "\"/tmp/abs.log\""},
    {"initialdir = subdir", "Iwd", "\"{dir}/subdir\""},
    {"initialdir = subdir\nlog = x.log", "UserLog", "\"{dir}/subdir/x.log\""},
    {"initial_dir = subdir/", "Iwd", "\"{dir}/subdir\""},
    {"requirements = Memory > 1024 && OpSys == \"LINUX\"", "Requirements",
     "(Memory > 1024 && OpSys == \"LINUX\") && (TARGET.Arch == \"X86_64\") && (TARGET.Disk >= "
     "RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == "
     "MY.FileSystemDomain) || (TARGET.HasFileTransfer))"},
    {"rank = Memory", "Rank", "Memory"},
    {"periodic_hold = NumJobStarts > 3", "PeriodicHold", "NumJobStarts > 3"},
    {"periodic_release = HoldReasonCode == 6", "PeriodicRelease", "HoldReasonCode == 6"},
    {"periodic_remove = (time() - QDate) > 86400", "PeriodicRemove", "(time() - QDate) > 86400"},
    {"on_exit_remove = ExitCode == 0", "OnExitRemove", "ExitCode == 0"},
    {"OnExitRemove = false", "OnExitRemove", "false"},
    {"on_exit_hold = ExitCode != 0", "OnExitHold", "ExitCode != 0"},
    {"hold = true", "JobStatus", "5"},
    {"hold = True", "HoldReason", "\"submitted on hold at user's request\""},
    {"hold = yes", "HoldReasonCode", "15"},
    {"hold = false", "JobStatus", "1"},
    {"notify_user = me@example.org\nnotification = Complete", "NotifyUser", "\"me@example.org\""},
    {"notification = Complete", "JobNotification", "2"},
    {"notification = error", "JobNotification", "3"},
    {"notification = ALWAYS", "JobNotification", "1"},
    {"notification = never", "JobNotification", "0"},
    {"transfer_input_files = data.txt , subdir", "TransferInput", "\"data.txt,subdir\""},
    {"transfer_input_files = http://example.org/x", "TransferInput", "\"http://example.org/x\""},
    {"transfer_output_files = a,b , c", "TransferOutput", "\"a,b,c\""},
    {"output = o\nstream_output = true", "StreamOut", "true"},
    {"error = e\nstream_error = TRUE", "StreamErr", "true"},
    {"x509userproxy = proxy.pem", "x509userproxy", "\"{dir}/proxy.pem\""},
    {"request_cpus = 4", "RequestCpus", "4"},
    {"request_memory = 2GB", "RequestMemory", "2048"},
    {"request_memory = 512", "RequestMemory", "512"},
    {"request_memory = 1.5 GB", "RequestMemory", "1536"},
    {"request_memory = 32 Mb", "RequestMemory", "32"},
    {"request_memory = 100K", "RequestMemory", "1"},
    {"request_memory = ifThenElse(MemoryUsage > 100, 200, 100)", "RequestMemory",
     "ifThenElse(MemoryUsage > 100, 200, 100)"},
    // Expressions that start with a digit, as `$(Process) + 1` becomes: kept as written.
    {"request_memory = 1024 * (2 + 1)", "RequestMemory", "1024 * (2 + 1)"},
    {"request_cpus = 1 + 1", "RequestCpus", "1 + 1"},
    {"request_disk = 1GB", "RequestDisk", "1048576"},
    {"batch_queue = short", "BatchQueue", "\"short\""},
    {"batch_project = phys123", "BatchProject", "\"phys123\""},
    {"batch_runtime = 2h", "BatchRuntime", "7200"},
    {"batch_runtime = 90", "BatchRuntime", "90"},
    {"request_cpus = ifThenElse(Arch == \"X86_64\", 4, 2)", "RequestCpus",
     "ifThenElse(Arch == \"X86_64\", 4, 2)"},
    {"+MaxWallTime = 3600", "MaxWallTime", "3600"},
    {"max_retries = 3", "JobMaxRetries", "3"},
    {"globus_resubmit = NumGlobusSubmits < 3", "GlobusResubmit", "NumGlobusSubmits < 3"},
    {"remote_io_method = FUSE", "WantRemoteIOMethod", "\"fuse\""},
    {"remote_io_method = preload", "WantRemoteIOMethod", "\"preload\""},
    {"credential_alarm = 1h", "CredentialAlarm", "3600"},
    {"credential_alarm = 600", "CredentialAlarm", "600"},
    {"credential_alarm = 2h, 30m", "CredentialAlarm", "{7200, 1800}"},
    {"priority = -5", "JobPrio", "-5"},
    {"prio = 7", "JobPrio", "7"},
    {"should_transfer_files = if_needed", "ShouldTransferFiles", "\"IF_NEEDED\""},
    {"should_transfer_files = NO", "Requirements",
     "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= "
     "RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.FileSystemDomain == "
     "MY.FileSystemDomain)"},
    {"when_to_transfer_output = ON_EXIT", "WhenToTransferOutput", "\"ON_EXIT\""},
    {"when_to_transfer_output = ON_EXIT_OR_EVICT", "ShouldTransferFiles", "\"YES\""},
    {"batch_name = nightly", "JobBatchName", "\"nightly\""},
    {"batch_name = \"quoted name\"", "JobBatchName", "\"quoted name\""},
    {"+Department = \"physics\"", "Department", "\"physics\""},
    {"MY.Answer = 6 * 7", "Answer", "6 * 7"},
    {"+Requirements = false", "Requirements", "false"},
    {"+Foo = 1\n+FOO = 2", "Foo", "2"},
};

TEST_F(CommandsTest, EveryCommandMapsToItsAttribute) {
  for (const auto& tc : kCommandCases) {
    SCOPED_TRACE(tc.lines);
    auto c = MustParse(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    EXPECT_EQ(Get(c, tc.attr), D(tc.expr));
    // Whatever the command, every attribute is valid ClassAd expression text.
    for (const auto& a : ProcAttrs(c, 0)) {
      EXPECT_TRUE(classad::ParseExpr(a.expr)) << a.name << " = " << a.expr;
    }
  }
}

TEST_F(CommandsTest, GridUniverseSkipsExecutableCheckAndDefaultsTheProxy) {
  ::setenv("X509_USER_PROXY", "/tmp/kite-test-proxy", 1);
  auto c = MustParse(
      "universe = grid\ngrid_resource = kite gk:1/fork\n"
      "executable = remote_only\nqueue\n");
  ::unsetenv("X509_USER_PROXY");
  EXPECT_EQ(Get(c, "Cmd"), D("\"{dir}/remote_only\""));
  EXPECT_EQ(Get(c, "x509userproxy"), "\"/tmp/kite-test-proxy\"");
}

TEST_F(CommandsTest, TransferExecutableFalseKeepsThePathAsWritten) {
  auto c = MustParse("executable = /opt/site/bin/tool\ntransfer_executable = false\nqueue\n");
  EXPECT_EQ(Get(c, "Cmd"), "\"/opt/site/bin/tool\"");
  EXPECT_EQ(Get(c, "TransferExecutable"), "false");
}

TEST_F(CommandsTest, GetenvCopiesTheSubmitEnvironmentAndEnvironmentWins) {
  ::setenv("KITE_SUBMIT_T1", "from env", 1);
  ::setenv("KITE_SUBMIT_T2", "loses", 1);
  auto c =
      MustParse("executable = prog\ngetenv = true\nenvironment = KITE_SUBMIT_T2=wins\nqueue\n");
  ::unsetenv("KITE_SUBMIT_T1");
  ::unsetenv("KITE_SUBMIT_T2");
  std::string env = Get(c, "Environment");
  EXPECT_NE(env.find("KITE_SUBMIT_T1=from' 'env"), std::string::npos) << env;
  EXPECT_NE(env.find("KITE_SUBMIT_T2=wins"), std::string::npos) << env;
  EXPECT_EQ(env.find("loses"), std::string::npos) << env;
}

TEST_F(CommandsTest, OwnerDefaultsToTheEffectiveUser) {
  options_.owner.clear();
  auto c = MustParse("executable = prog\nqueue\n");
  const passwd* pw = ::getpwuid(::geteuid());
  ASSERT_NE(pw, nullptr);
  EXPECT_EQ(Get(c, "Owner"), "\"" + std::string(pw->pw_name) + "\"");
}

TEST_F(CommandsTest, InputIsRelativeToInitialdir) {
  Write("subdir/in.txt", "x");
  auto c = MustParse("executable = prog\ninitialdir = subdir\ninput = in.txt\nqueue\n");
  EXPECT_EQ(Get(c, "In"), "\"in.txt\"");
  EXPECT_EQ(Get(c, "Iwd"), D("\"{dir}/subdir\""));
  // Executable stays relative to the current directory, not initialdir.
  EXPECT_EQ(Get(c, "Cmd"), D("\"{dir}/prog\""));
}

TEST_F(CommandsTest, CommentsContinuationsAndBlankLines) {
  auto c = MustParse(
      "# a comment\n"
      "\n"
      "   # an indented comment\r\n"
      "executable = prog\r\n"
      "arguments = one \\\n"
      "two \\\n"
      "three\n"
      "# commented out \\\n"
      "output = out.txt\n"
      "queue\n");
  EXPECT_EQ(JobArgs(c), (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(Get(c, "Out"), "\"out.txt\"");  // the comment's '\' did not swallow this line
}

TEST_F(CommandsTest, HashInsideAValueIsNotAComment) {
  auto c = MustParse("executable = prog\narguments = a#b\nqueue\n");
  EXPECT_EQ(JobArgs(c), std::vector<std::string>{"a#b"});
}

TEST_F(CommandsTest, LaterAssignmentWins) {
  auto c = MustParse("executable = prog\noutput = a\nOUTPUT = b\nqueue\n");
  EXPECT_EQ(Get(c, "Out"), "\"b\"");
}

TEST_F(CommandsTest, ParseSubmitFileReadsFromDisk) {
  ASSERT_TRUE(MakeDirs(dir_ + "/jobs"));
  Write("jobs/items.txt", "x1\nx2\n");
  Write("jobs/job.sub", "executable = prog\narguments = $(Item)\nqueue from items.txt\n");
  auto c = ParseSubmitFile(dir_ + "/jobs/job.sub", options_);
  ASSERT_TRUE(c) << c.error().message();
  ASSERT_EQ(c->procs.size(), 2u);
  EXPECT_EQ(JobArgs(*c, 1), std::vector<std::string>{"x2"});

  auto missing = ParseSubmitFile(dir_ + "/nope.sub", options_);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("cannot read submit file"), std::string::npos);
}

TEST_F(CommandsTest, WarningsLikeCondorSubmit) {
  auto c = MustParse(
      "executable = prog\n"
      "used = 1\n"
      "unsed = 2\n"
      "arguments = $(used)\n"
      "notify_user = me@example.org\n"
      "queue\n"
      "output = late.txt\n");
  EXPECT_EQ(c.warnings, (std::vector<std::string>{
                            "job.sub:5: warning: notify_user is set but notification defaults to "
                            "Never; add 'notification = Complete' (or Error, Always) to get e-mail",
                            "job.sub:3: warning: macro unsed is defined but never used (a "
                            "misspelt command?)",
                            "job.sub:7: warning: output is set after the last queue statement and "
                            "has no effect",
                        }));
}

}  // namespace
}  // namespace kite::submit
