// Retries, exit policy, resource requests and the Requirements clauses, with the expressions
// condor_submit writes, and what those expressions mean when a job exits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "classad/classad.h"
#include "submit/submit_file.h"
#include "submit_test_util.h"

namespace kite::submit {
namespace {

using PolicyTest = SubmitTest;

// How many times a job that always exits with `exit_code` runs under proc 0's OnExitRemove: the
// agent counts completions (NumJobCompletions) and runs the job again while OnExitRemove is
// false; -1 when the expression never lets it go within 100 runs.
int RunsUntilRemoved(const ParsedCluster& c, int exit_code) {
  classad::ClassAd ad;
  for (const auto& a : ProcAttrs(c, 0)) {
    if (!ad.InsertText(a.name, a.expr)) return -2;
  }
  ad.Assign("ExitBySignal", false);
  ad.Assign("ExitCode", exit_code);
  for (int runs = 1; runs <= 100; ++runs) {
    ad.Assign("NumJobCompletions", runs);
    ad.Assign("NumJobStarts", runs);
    auto remove = ad.EvaluateBool("OnExitRemove");
    if (!remove) return -3;  // HTCondor's default is true; Kite's writes it whenever it retries
    if (*remove) return runs;
  }
  return -1;
}

const struct {
  const char* lines;
  int exit_code;
  int runs;
} kRetryCases[] = {
    {"max_retries = 3", 42, 4},
    {"max_retries = 3", 0, 1},
    {"max_retries = 0", 42, 1},
    {"success_exit_code = 42", 42, 1},
    {"success_exit_code = 42", 0, 3},  // JobMaxRetries defaults to 2
    {"max_retries = 5\nsuccess_exit_code = 42", 1, 6},
    {"max_retries = 5\nretry_until = 7", 7, 1},
    {"max_retries = 5\nretry_until = ExitCode == 9 || ExitCode == 10", 10, 1},
    {"max_retries = 5\nretry_until = ExitCode == 9", 3, 6},
    {"max_retries = 4\non_exit_remove = ExitCode == 5", 5, 1},
    {"on_exit_remove = true", 42, 1},
};

TEST_F(PolicyTest, RetriesMeanWhatTheyMeanInHTCondor) {
  for (const auto& tc : kRetryCases) {
    SCOPED_TRACE(std::string(tc.lines) + " | exit " + std::to_string(tc.exit_code));
    auto c = MustParse(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    EXPECT_EQ(RunsUntilRemoved(c, tc.exit_code), tc.runs);
  }
}

const struct {
  const char* lines;
  const char* attr;
  const char* expr;
} kPolicyCases[] = {
    {"max_retries = 3", "JobMaxRetries", "3"},
    {"max_retries = 3", "OnExitHold", "false"},
    {"max_retries = 3", "OnExitRemove", "NumJobCompletions > JobMaxRetries || ExitCode =?= 0"},
    {"success_exit_code = 3", "JobMaxRetries", "2"},
    {"max_retries = 1\nretry_until = 7", "OnExitRemove",
     "NumJobCompletions > JobMaxRetries || ExitCode =?= 0 || ExitCode =?= 7"},
    {"max_retries = 1\nretry_until = ExitCode > 100", "OnExitRemove",
     "NumJobCompletions > JobMaxRetries || ExitCode =?= 0 || ExitCode > 100"},
    {"max_retries = 1\non_exit_remove = ExitCode == 3 || ExitCode == 4", "OnExitRemove",
     "NumJobCompletions > JobMaxRetries || ExitCode =?= 0 || ExitCode == 3 || ExitCode == 4"},
    {"max_retries = 1\non_exit_hold = ExitCode == 9", "OnExitHold", "ExitCode == 9"},
    {"on_exit_remove = ExitCode == 0", "OnExitRemove", "ExitCode == 0"},
    // retry_request_memory: a transform the schedd applies when the job is evicted for memory.
    {"request_memory = 1GB\nretry_request_memory = 4GB", "TransformBody_RequestMemory",
     "\"REQUIREMENTS (VacateReasonCode==21 && VacateReasonSubCode==102) || (VacateReasonCode == "
     "34 && VacateReasonSubCode == 102)\\036SET RequestMemory 4096\""},
    {"request_memory = 1GB, 2GB, 8GB", "RetryRequestMemory", "{ 2048,8192 }"},
    {"request_memory = 1GB, 2GB, 8GB", "RequestMemory", "1024"},
    {"request_memory = 1GB\nretry_request_memory_increase = RequestMemory * 2",
     "TransformBody_RequestMemory",
     "\"REQUIREMENTS (VacateReasonCode==21 && VacateReasonSubCode==102) || (VacateReasonCode == "
     "34 && VacateReasonSubCode == 102)\\036SET RequestMemory 2048\""},
    {"request_memory = 1GB\nretry_request_memory_increase = 1GB\nretry_request_memory_max = 3GB",
     "NextRequestMemory", "RequestMemory + 1024"},
    {"request_memory = 1GB\nretry_request_memory_increase = 1GB\nretry_request_memory_max = 3GB",
     "MaxRequestMemory", "3072"},
    // Units: memory in MiB, disk in KiB, as HTCondor reads them.
    {"request_memory = 1.7GB", "RequestMemory", "1741"},
    {"request_memory = 1T", "RequestMemory", "1048576"},
    {"request_disk = 1.5 gb", "RequestDisk", "1572864"},
    {"request_disk = 3KB", "RequestDisk", "3"},
    {"memory_usage = 2GB", "MemoryUsage", "2048"},
    // Integer commands take expressions.
    {"job_lease_duration = 7*60", "JobLeaseDuration", "7*60"},  // as HTCondor: an expression
    {"priority = 10 - 15", "JobPrio", "-5"},
    // GPUs.
    {"request_gpus = 1", "RequestGPUs", "1"},
    {"request_gpus = 1\ngpus_minimum_capability = 8.0", "RequireGPUs",
     "Capability >= GPUsMinCapability"},
    {"request_gpus = 1\nrequire_gpus = Capability > 7\ngpus_minimum_memory = 8000", "RequireGPUs",
     "Capability > 7 && GlobalMemoryMb >= GPUsMinMemory"},
    // No clause for a property require_gpus already constrains.
    {"request_gpus = 1\nrequire_gpus = GlobalMemoryMb > 4000\ngpus_minimum_memory = 8000",
     "RequireGPUs", "GlobalMemoryMb > 4000"},
    {"request_gpus = 2", "Requirements",
     "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= "
     "RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.GPUs >= RequestGPUs) && "
     "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"},
    // The clauses condor_submit adds for a vanilla job.
    {"request_cpus = 4", "Requirements",
     "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= "
     "RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && "
     "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"},
    {"should_transfer_files = YES", "Requirements",
     "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= "
     "RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)"},
    // ... but no platform clause for what the user's requirements already check.
    {"requirements = Arch == \"ARM\" && Memory > 10", "Requirements",
     "(Arch == \"ARM\" && Memory > 10) && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= "
     "RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == "
     "MY.FileSystemDomain) || "
     "(TARGET.HasFileTransfer))"},
};

TEST_F(PolicyTest, ExpressionsAsCondorSubmitWritesThem) {
  for (const auto& tc : kPolicyCases) {
    SCOPED_TRACE(tc.lines);
    auto c = MustParse(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    EXPECT_EQ(Get(c, tc.attr), tc.expr);
  }
}

// An expression where HTCondor takes one means its value: the lease is 7 minutes.
TEST_F(PolicyTest, ExpressionValuesEvaluate) {
  auto c = MustParse("executable = prog\njob_lease_duration = 7*60\nqueue\n");
  EXPECT_EQ(EvalInteger(Get(c, "JobLeaseDuration")), 420);
}

TEST_F(PolicyTest, LocalAndGridJobsGetNoDefaultRequests) {
  auto local = MustParse("universe = local\nexecutable = prog\nqueue\n");
  EXPECT_EQ(Get(local, "RequestMemory"), "<unset>");
  auto grid = MustParse(
      "universe = grid\ngrid_resource = kite gk:1/slurm\nexecutable = prog\n"
      "request_memory = 2GB\nqueue\n");
  EXPECT_EQ(Get(grid, "RequestMemory"), "2048");
  EXPECT_EQ(Get(grid, "RequestDisk"), "<unset>");
  EXPECT_EQ(Get(grid, "Requirements"), "true");
}

// universe = standard is a vanilla job with remote I/O and transparent checkpoints;
// checkpoint = transparent asks for the checkpoints alone; checkpoint_interval is in seconds.
TEST_F(PolicyTest, StandardUniverseAndTransparentCheckpoints) {
  auto std_job = MustParse("universe = standard\nexecutable = prog\nqueue\n");
  EXPECT_EQ(Get(std_job, "JobUniverse"), "5");
  EXPECT_EQ(Get(std_job, "TransparentCheckpoint"), "true");
  EXPECT_EQ(Get(std_job, "WantRemoteIO"), "true");
  auto no_io = MustParse("universe = standard\nwant_remote_io = false\nexecutable = prog\nqueue\n");
  EXPECT_EQ(Get(no_io, "WantRemoteIO"), "false");
  auto t = MustParse(
      "checkpoint = transparent\ncheckpoint_interval = 30*60\nexecutable = prog\nqueue\n");
  EXPECT_EQ(Get(t, "TransparentCheckpoint"), "true");
  EXPECT_EQ(Get(t, "CheckpointInterval"), "1800");
  EXPECT_EQ(Get(t, "WantRemoteIO"), "<unset>");
  auto none = MustParse("universe = standard\ncheckpoint = none\nexecutable = prog\nqueue\n");
  EXPECT_EQ(Get(none, "TransparentCheckpoint"), "<unset>");
  EXPECT_NE(ErrorOf("checkpoint = sometimes\nexecutable = prog\nqueue\n")
                .find("checkpoint must be transparent or none, not 'sometimes'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("checkpoint = transparent\ncheckpoint_exit_code = 85\nexecutable = prog\n"
                    "queue\n")
                .find("checkpoint_exit_code and transparent checkpoints exclude each other"),
            std::string::npos);
  EXPECT_NE(ErrorOf("checkpoint_interval = 60\nexecutable = prog\nqueue\n")
                .find("checkpoint_interval needs checkpoint = transparent"),
            std::string::npos);
  EXPECT_NE(ErrorOf("checkpoint = transparent\ncheckpoint_interval = 0\nexecutable = prog\n"
                    "queue\n")
                .find("checkpoint_interval must be a positive number of seconds"),
            std::string::npos);
}

}  // namespace
}  // namespace kite::submit
