// The Slurm adapter's pure half: the script and sbatch arguments it writes, the command output it
// reads, and how Slurm's job states become outcomes.
#include "gram/batch/slurm_format.h"

#include <gtest/gtest.h>

#include <ctime>

#include <algorithm>

#include "gram/batch/command.h"

namespace kite::gram::batch::slurm {
namespace {

JobSpec Spec() {
  JobSpec s;
  s.name = "0123456789abcdef";
  s.control_dir = "/state/jobs/j1/.kite";
  s.cwd = "/state/jobs/j1";
  s.program = "/bin/sh";
  s.args = {"-c", "echo 'it''s' \"$HOME\"; exit 3", ""};
  s.env = {"PATH=/usr/bin:/bin", "SLURM_JOB_ID=7", "SBATCH_PARTITION=big", "X=1"};
  s.stdout_path = "/state/jobs/j1/.kite/stdout";
  s.stderr_path = "/state/jobs/j1/.kite/stderr";
  return s;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(SlurmFormat, TheScriptExecsKiteExecWithEveryWordQuoted) {
  std::string script = BatchScript(Spec(), "/opt/kite/bin/kite-exec");
  EXPECT_TRUE(script.starts_with("#!/bin/sh\n"));
  EXPECT_NE(script.find("\nexec '/opt/kite/bin/kite-exec' --dir '/state/jobs/j1/.kite' --cwd "
                        "'/state/jobs/j1' --in '/dev/null' --out '/state/jobs/j1/.kite/stdout' "
                        "--err '/state/jobs/j1/.kite/stderr' -- '/bin/sh' '-c' "),
            std::string::npos)
      << script;
  // A quote inside an argument closes, escapes and reopens; an empty argument stays one word.
  EXPECT_NE(script.find(R"('echo '\''it'\'''\''s'\'' "$HOME"; exit 3' '')"), std::string::npos)
      << script;
}

TEST(SlurmFormat, TheScriptRunsTheArgumentsAsGiven) {
  // Run through a real /bin/sh with `kite-exec` replaced by printf: the words come out intact.
  JobSpec s = Spec();
  std::string script = BatchScript(s, "/usr/bin/printf");
  // printf's format is its first argument: "--dir"; show every word on its own line instead.
  script.replace(script.find("'/usr/bin/printf'"), 17, "/usr/bin/printf '[%s]\\n'");
  auto r = RunCommand({"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, std::chrono::seconds(5));
  ASSERT_TRUE(r);
  EXPECT_NE(r->out.find("[echo 'it''s' \"$HOME\"; exit 3]\n[]\n"), std::string::npos) << r->out;
}

TEST(SlurmFormat, SbatchArgumentsCarryTheRequestsEachAsOneArgument) {
  JobSpec s = Spec();
  s.resources = {
      .cpus = 4, .memory_mb = 2048, .walltime_s = 61, .queue = "short", .project = "astro-1"};
  auto a = SbatchArgs(s, "/state/jobs/j1/.kite/slurm.sh");
  EXPECT_EQ(a.front(), "--parsable");
  EXPECT_EQ(a.back(), "/state/jobs/j1/.kite/slurm.sh");
  for (const char* want :
       {"--job-name=kite-0123456789abcdef", "--output=/state/jobs/j1/.kite/slurm.out",
        "--chdir=/state/jobs/j1", "--export=ALL", "--no-requeue", "--ntasks=1", "--cpus-per-task=4",
        "--mem=2048M", "--time=2", "--partition=short", "--account=astro-1"}) {
    EXPECT_TRUE(Has(a, want)) << want;
  }
}

TEST(SlurmFormat, NoRequestsMeanTheSiteDefaults) {
  auto a = SbatchArgs(Spec(), "/s.sh");
  for (const auto& arg : a) {
    for (const char* p : {"--cpus-per-task", "--mem", "--time", "--partition", "--account"}) {
      EXPECT_FALSE(arg.starts_with(p)) << arg;
    }
  }
}

TEST(SlurmFormat, WalltimeRoundsUpToWholeMinutes) {
  JobSpec s = Spec();
  for (auto [secs, minutes] : std::vector<std::pair<int64_t, std::string>>{
           {1, "1"}, {59, "1"}, {60, "1"}, {61, "2"}, {3600, "60"}, {3601, "61"}}) {
    s.resources.walltime_s = secs;
    EXPECT_TRUE(Has(SbatchArgs(s, "/s.sh"), "--time=" + minutes)) << secs;
  }
}

TEST(SlurmFormat, SbatchEnvironmentDropsSlurmInputsAndAddsTheClusterConfig) {
  auto env = SbatchEnvironment(Spec().env, "/etc/slurm-test/slurm.conf");
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/usr/bin:/bin", "X=1",
                                           "SLURM_CONF=/etc/slurm-test/slurm.conf"}));
  EXPECT_EQ(SbatchEnvironment({"A=1"}, ""), (std::vector<std::string>{"A=1"}));
}

TEST(SlurmFormat, ParsesSbatchParsableOutput) {
  EXPECT_EQ(*ParseSbatchOutput("42\n"), "42");
  EXPECT_EQ(*ParseSbatchOutput("42;cluster7\n"), "42");
  EXPECT_EQ(*ParseSbatchOutput("sbatch: warning: x\n1234\n"), "1234");
  for (const char* bad : {"", "\n", "Submitted batch job 12\n", "12a\n", ";c\n"}) {
    EXPECT_FALSE(ParseSbatchOutput(bad)) << bad;
  }
}

TEST(SlurmFormat, ParsesSqueueLinesAndSkipsOthers) {
  auto rows = ParseSqueue(
      "12|RUNNING|None\n"
      "  13|PENDING|Priority  \n"
      "garbage\n"
      "x|RUNNING|None\n"
      "14|COMPLETED|\n"
      "15||None\n"
      "16_2|PENDING|(Resources)\n"
      "17|CANCELLED by 0|None");
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows.at("12").state, "RUNNING");
  EXPECT_EQ(rows.at("13").reason, "Priority");
  EXPECT_EQ(rows.at("14").reason, "");
  EXPECT_EQ(rows.at("16_2").state, "PENDING");
  EXPECT_EQ(rows.at("17").state, "CANCELLED by 0");
  EXPECT_TRUE(ParseSqueue("").empty());
}

TEST(SlurmFormat, ParsesScontrolOneliner) {
  auto f = ParseScontrolJob(
      "JobId=7 JobName=kite-x UserId=root(0) JobState=FAILED Reason=NonZeroExitCode "
      "Dependency=(null) ExitCode=2:0 Command=/s/slurm.sh =odd\nJobId=8 JobState=RUNNING\n");
  EXPECT_EQ(f.at("JobId"), "7");
  EXPECT_EQ(f.at("JobState"), "FAILED");
  EXPECT_EQ(f.at("ExitCode"), "2:0");
  EXPECT_EQ(f.at("UserId"), "root(0)");
  EXPECT_FALSE(f.contains(""));
}

TEST(SlurmFormat, ClassifiesEverySlurmState) {
  struct Case {
    const char* state;
    Phase phase;
  };
  for (auto c : std::vector<Case>{{"PENDING", Phase::kWaiting},
                                  {"REQUEUE_HOLD", Phase::kWaiting},
                                  {"CONFIGURING", Phase::kWaiting},
                                  {"RUNNING", Phase::kRunning},
                                  {"SUSPENDED", Phase::kRunning},
                                  {"COMPLETING", Phase::kRunning},
                                  {"COMPLETED", Phase::kFinished},
                                  {"FAILED", Phase::kFinished},
                                  {"TIMEOUT", Phase::kLimit},
                                  {"OUT_OF_MEMORY", Phase::kLimit},
                                  {"DEADLINE", Phase::kLimit},
                                  {"CANCELLED", Phase::kLost},
                                  {"CANCELLED by 0", Phase::kLost},
                                  {"NODE_FAIL", Phase::kLost},
                                  {"PREEMPTED", Phase::kLost},
                                  {"BOOT_FAIL", Phase::kLost},
                                  {"SOMETHING_NEW", Phase::kUnknown},
                                  {"", Phase::kUnknown}}) {
    EXPECT_EQ(ClassifyState(c.state), c.phase) << c.state;
  }
}

ExecStatus Exited(int code) {
  ExecStatus s;
  s.code = code;
  return s;
}

SqueueRow Row(const char* state, const char* reason = "None") {
  return {"9", state, reason};
}

TEST(SlurmFormat, WaitingAndRunningJobsIgnoreKiteExecsRecord) {
  auto o = DecideOutcome("9", Row("PENDING"), std::nullopt, false);
  EXPECT_EQ(o->state, BatchState::kQueued);
  // COMPLETING: the record may be there, but Slurm's final word is not.
  o = DecideOutcome("9", Row("COMPLETING"), Exited(0), false);
  EXPECT_EQ(o->state, BatchState::kRunning);
}

TEST(SlurmFormat, AFinishedJobEndsAsKiteExecRecorded) {
  auto o = DecideOutcome("9", Row("COMPLETED"), Exited(3), false);
  ASSERT_EQ(o->state, BatchState::kEnded);
  EXPECT_EQ(o->exit->code, 3);
  EXPECT_FALSE(o->limit_exceeded);
  // FAILED without a record: kite-exec never ran (or died); lost, with Slurm's words.
  o = DecideOutcome("9", Row("FAILED", "NonZeroExitCode"), std::nullopt, false, "exit code 2:0");
  ASSERT_EQ(o->state, BatchState::kLost);
  EXPECT_NE(o->reason.find("FAILED, NonZeroExitCode"), std::string::npos) << o->reason;
  EXPECT_NE(o->reason.find("exit code 2:0"), std::string::npos) << o->reason;
}

TEST(SlurmFormat, ALimitEndIsMarkedWithHowTheJobDied) {
  ExecStatus killed;
  killed.kind = ExecStatus::Kind::kSignaled;
  killed.code = 15;
  auto o = DecideOutcome("9", Row("TIMEOUT", "TimeLimit"), killed, false);
  ASSERT_EQ(o->state, BatchState::kEnded);
  EXPECT_TRUE(o->limit_exceeded);
  EXPECT_EQ(o->exit->code, 15);
  EXPECT_NE(o->reason.find("time limit"), std::string::npos) << o->reason;
  o = DecideOutcome("9", Row("OUT_OF_MEMORY"), std::nullopt, false);
  EXPECT_TRUE(o->limit_exceeded);
  EXPECT_FALSE(o->exit);
  EXPECT_NE(o->reason.find("memory"), std::string::npos) << o->reason;
}

TEST(SlurmFormat, JobsEndedByTheSiteAreLostEvenWithARecord) {
  for (const char* st : {"CANCELLED", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL"}) {
    auto o = DecideOutcome("9", Row(st), Exited(0), false);
    ASSERT_EQ(o->state, BatchState::kLost) << st;
    EXPECT_NE(o->reason.find(st), std::string::npos) << o->reason;
  }
}

TEST(SlurmFormat, AJobSlurmForgotIsJudgedByKiteExecAlone) {
  auto o = DecideOutcome("9", std::nullopt, Exited(5), false);
  ASSERT_EQ(o->state, BatchState::kEnded);
  EXPECT_EQ(o->exit->code, 5);
  EXPECT_EQ(DecideOutcome("9", std::nullopt, std::nullopt, true)->state, BatchState::kRunning);
  o = DecideOutcome("9", std::nullopt, std::nullopt, false);
  ASSERT_EQ(o->state, BatchState::kLost);
  EXPECT_NE(o->reason.find("no longer knows job 9"), std::string::npos) << o->reason;
}

TEST(SlurmFormat, AnUnknownStateSaysNothing) {
  EXPECT_FALSE(DecideOutcome("9", Row("WARPED"), Exited(0), false));
}

TEST(BatchCommand, CollectsOutputExitCodeAndKillsAtTheDeadline) {
  auto r =
      RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"}, {}, std::chrono::seconds(5));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_FALSE(r->timed_out);
  auto start = std::chrono::steady_clock::now();
  r = RunCommand({"/bin/sleep", "10"}, {}, std::chrono::milliseconds(200));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(RunCommand({"/nonexistent/tool"}, {}, std::chrono::seconds(1)));
}

TEST(BatchCommand, FindsProgramsInAPathList) {
  EXPECT_EQ(FindInPath("sh", "/nonexistent::/bin"), "/bin/sh");
  EXPECT_EQ(FindInPath("no-such-tool-here", "/bin:/usr/bin"), "");
  EXPECT_EQ(FindInPath("sh", ""), "");
}

TEST(SlurmFormat, TimeLimits) {
  EXPECT_EQ(ParseTimeLimit("UNLIMITED"), 0);
  EXPECT_EQ(ParseTimeLimit("INFINITE"), 0);
  EXPECT_EQ(ParseTimeLimit("30"), 1800);
  EXPECT_EQ(ParseTimeLimit("30:15"), 1815);
  EXPECT_EQ(ParseTimeLimit("1:00:00"), 3600);
  EXPECT_EQ(ParseTimeLimit("2-12"), 2 * 86400 + 12 * 3600);
  EXPECT_EQ(ParseTimeLimit("2-12:30:05"), 2 * 86400 + 12 * 3600 + 30 * 60 + 5);
  for (const char* bad : {"", "x", "1:2:3:4", "-1", "1-", "a-1", "1:-2"}) {
    EXPECT_FALSE(ParseTimeLimit(bad)) << bad;
  }
}

TEST(SlurmFormat, SiteInfoFromSinfoAndSqueue) {
  // node1 is in two partitions (counted once); node3 is drained (its CPUs are "other").
  std::string nodes =
      "node1|2/2/0/4|8000\nnode1|2/2/0/4|8000\nnode2|0/4/0/4|16000\n"
      "node3|0/0/4/4|16000\n";
  std::string parts = "debug*|up|30:00\nlong|up|2-00:00:00\nold|down|UNLIMITED\n";
  double now = 1'800'000'000;
  std::string queue = "RUNNING|2027-01-15T08:00:00\nPENDING|N/A\nPENDING|N/A\n";
  auto i = ParseSiteInfo(nodes, parts, queue, now);
  ASSERT_TRUE(i) << i.error().ToString();
  EXPECT_EQ(i->batch_system, "slurm");
  EXPECT_EQ(i->total_cpus, 12);
  EXPECT_EQ(i->free_cpus, 6);
  EXPECT_EQ(i->memory_mb, 16000);
  EXPECT_EQ(i->queues, (std::vector<std::string>{"debug", "long", "old"}));
  EXPECT_EQ(i->default_queue, "debug");
  EXPECT_EQ(i->max_walltime_s, 2 * 86400);  // the down partition's limit does not count
  EXPECT_EQ(i->running_jobs, 1);
  EXPECT_EQ(i->pending_jobs, 2);
  EXPECT_FALSE(i->estimated_start_s);  // pending jobs, and Slurm has no estimate for them
  // Nothing pending and free CPUs: a job starts now. An up partition without a limit: none.
  auto idle = ParseSiteInfo(nodes, "debug*|up|UNLIMITED\n", "", now);
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->estimated_start_s, 0);
  EXPECT_EQ(idle->max_walltime_s, 0);
  // Slurm's estimates: a new job starts after the last pending one.
  struct tm tm {};
  time_t t = static_cast<time_t>(now) + 600;
  localtime_r(&t, &tm);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  auto busy = ParseSiteInfo(nodes, parts, std::string("PENDING|") + when + "\nPENDING|N/A\n", now);
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->estimated_start_s, 600);
  // Answers that are not Slurm's are refused.
  EXPECT_FALSE(ParseSiteInfo("garbage\n", parts, queue, now));
  EXPECT_FALSE(ParseSiteInfo(nodes, "", queue, now));
  EXPECT_FALSE(ParseSiteInfo("n|1/x/0/4|1\n", parts, queue, now));
}

}  // namespace
}  // namespace kite::gram::batch::slurm
