// The Grid Engine adapter's pure half: the script and qsub arguments it writes, the qsub, qstat
// -xml and qacct output it reads (samples as Son of Grid Engine 8.1.9 prints them), and how job
// states and accounting records become outcomes.
#include "gram/batch/sge_format.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gram/batch/command.h"

namespace kite::gram::batch::sge {
namespace {

JobSpec Spec() {
  JobSpec s;
  s.name = "0123456789abcdef";
  s.control_dir = "/state/jobs/j1/.kite";
  s.cwd = "/state/jobs/j1";
  s.program = "/bin/sh";
  s.args = {"-c", "echo 'it''s' \"$HOME\"; exit 3", ""};
  s.env = {"PATH=/usr/bin:/bin", "SGE_ROOT=/elsewhere", "SGE_TASK_ID=3", "X=1"};
  s.stdout_path = "/state/jobs/j1/.kite/stdout";
  s.stderr_path = "/state/jobs/j1/.kite/stderr";
  return s;
}

bool HasPair(const std::vector<std::string>& v, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < v.size(); ++i)
    if (v[i] == flag && v[i + 1] == value) return true;
  return false;
}

constexpr char kQstatXml[] = R"(<?xml version='1.0'?>
<job_info  xmlns:xsd="http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd">
  <queue_info>
    <job_list state="running">
      <JB_job_number>2</JB_job_number>
      <JAT_prio>0.50000</JAT_prio>
      <JB_name>kite-hrt</JB_name>
      <JB_owner>root</JB_owner>
      <state>r</state>
      <JAT_start_time>2026-11-22T08:49:11</JAT_start_time>
      <queue_name>all.q@vm</queue_name>
      <slots>1</slots>
    </job_list>
    <job_list state="running">
      <JB_job_number>3</JB_job_number>
      <JAT_prio>0.50000</JAT_prio>
      <JB_name>a&amp;b&lt;c&#62;</JB_name>
      <JB_owner>root</JB_owner>
      <state>dr</state>
      <queue_name>all.q@vm</queue_name>
      <slots>1</slots>
    </job_list>
  </queue_info>
  <job_info>
    <job_list state="pending">
      <JB_job_number>4</JB_job_number>
      <JAT_prio>0.00000</JAT_prio>
      <JB_name>kite-held</JB_name>
      <JB_owner>root</JB_owner>
      <state>hqw</state>
      <JB_submission_time>2026-11-22T08:49:11</JB_submission_time>
      <queue_name></queue_name>
      <slots>1</slots>
    </job_list>
    <job_list state="pending">
      <JB_job_number>5</JB_job_number>
      <JB_name>kite-broken</JB_name>
      <state>Eqw</state>
      <queue_name/>
    </job_list>
  </job_info>
</job_info>
)";

constexpr char kEmptyQstatXml[] = R"(<?xml version='1.0'?>
<job_info  xmlns:xsd="http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd">
  <queue_info>
  </queue_info>
  <job_info>
  </job_info>
</job_info>
)";

constexpr char kQacctHrt[] = R"(==============================================================
qname        all.q               
hostname     vm                  
group        root                
owner        root                
project      NONE                
department   defaultdepartment   
jobname      kite-hrt            
jobnumber    2                   
taskid       undefined
account      sge                 
priority     0                   
qsub_time    Sun Nov 22 08:49:11 2026
start_time   Sun Nov 22 08:49:11 2026
end_time     Sun Nov 22 08:49:14 2026
granted_pe   NONE                
slots        1                   
failed       37  : qmaster enforced h_rt, h_cpu, or h_vmem limit
exit_status  137                  (Killed)
ru_wallclock 3s
ru_utime     0.008s
cpu          0.011s
maxvmem      0.000B
arid         undefined
ar_sub_time  undefined
category     -l h_rt=3
)";

std::string Acct(const std::string& id, const std::string& failed, const std::string& exit,
                 const std::string& wallclock, const std::string& category) {
  return "==============================================================\n"
         "qname        all.q\njobname      kite-x\njobnumber    " +
         id + "\nfailed       " + failed + "\nexit_status  " + exit + "\nru_wallclock " +
         wallclock + "\ncategory     " + category + "\n";
}

TEST(SgeFormat, TheScriptExecsKiteExecWithEveryWordQuotedAndNoEmbeddedOptions) {
  std::string script = JobScript(Spec(), "/opt/kite/bin/kite-exec");
  EXPECT_TRUE(script.starts_with("#!/bin/sh\n"));
  EXPECT_NE(script.find("\nexec '/opt/kite/bin/kite-exec' --dir '/state/jobs/j1/.kite' --cwd "
                        "'/state/jobs/j1' --in '/dev/null' --out '/state/jobs/j1/.kite/stdout' "
                        "--err '/state/jobs/j1/.kite/stderr' -- '/bin/sh' '-c' "),
            std::string::npos)
      << script;
  EXPECT_EQ(script.find("\n#$"), std::string::npos) << "qsub would read it as options";
}

TEST(SgeFormat, TheScriptRunsTheArgumentsAsGiven) {
  std::string script = JobScript(Spec(), "/usr/bin/printf");
  script.replace(script.find("'/usr/bin/printf'"), 17, "/usr/bin/printf '[%s]\\n'");
  auto r = RunCommand({"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, std::chrono::seconds(5));
  ASSERT_TRUE(r);
  EXPECT_NE(r->out.find("[echo 'it''s' \"$HOME\"; exit 3]\n[]\n"), std::string::npos) << r->out;
}

TEST(SgeFormat, QsubArgumentsCarryTheRequestsEachAsOneArgument) {
  JobSpec s = Spec();
  s.resources = {
      .cpus = 4, .memory_mb = 2050, .walltime_s = 61, .queue = "short.q", .project = "astro"};
  auto a = QsubArgs(s, "/state/jobs/j1/.kite/sge.sh", "smp");
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->front(), "-terse");
  EXPECT_EQ(a->back(), "/state/jobs/j1/.kite/sge.sh");
  EXPECT_TRUE(HasPair(*a, "-N", "kite-0123456789abcdef"));
  EXPECT_TRUE(HasPair(*a, "-S", "/bin/sh"));
  EXPECT_TRUE(HasPair(*a, "-o", "/state/jobs/j1/.kite/sge.out"));
  EXPECT_TRUE(HasPair(*a, "-j", "y"));
  EXPECT_TRUE(HasPair(*a, "-r", "n"));
  EXPECT_TRUE(HasPair(*a, "-w", "e"));
  EXPECT_TRUE(HasPair(*a, "-wd", "/state/jobs/j1"));
  EXPECT_TRUE(HasPair(*a, "-pe", "smp"));
  EXPECT_NE(std::find(a->begin(), a->end(), "4"), a->end());
  EXPECT_TRUE(HasPair(*a, "-l", "h_vmem=513M")) << "per slot, rounded up";
  EXPECT_TRUE(HasPair(*a, "-l", "h_rt=61")) << "seconds, as asked";
  EXPECT_TRUE(HasPair(*a, "-q", "short.q"));
  EXPECT_TRUE(HasPair(*a, "-P", "astro"));

  // Nothing asked: no request options at all.
  auto plain = QsubArgs(Spec(), "/x/sge.sh", "");
  ASSERT_TRUE(plain);
  for (const char* opt : {"-pe", "-l", "-q", "-P"}) {
    EXPECT_EQ(std::find(plain->begin(), plain->end(), opt), plain->end()) << opt;
  }
  // One CPU needs no parallel environment.
  s.resources = {.cpus = 1, .memory_mb = 100};
  auto one = QsubArgs(s, "/x/sge.sh", "");
  ASSERT_TRUE(one);
  EXPECT_TRUE(HasPair(*one, "-l", "h_vmem=100M"));
}

TEST(SgeFormat, SeveralCpusWithoutAParallelEnvironmentAreRefused) {
  JobSpec s = Spec();
  s.resources.cpus = 2;
  auto a = QsubArgs(s, "/x/sge.sh", "");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(a.error().message().find("parallel environment"), std::string::npos);
}

TEST(SgeFormat, AnOutputPathWithAColonIsRefused) {
  JobSpec s = Spec();
  s.control_dir = "/state/a:b/.kite";
  auto a = QsubArgs(s, "/x/sge.sh", "");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code(), ErrorCode::kInvalidInput);
}

TEST(SgeFormat, QsubEnvironmentDropsTheJobsGridEngineSettingsForTheAdapters) {
  auto env = QsubEnvironment(Spec().env, {"SGE_ROOT=/cell", "SGE_QMASTER_PORT=6444"});
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/usr/bin:/bin", "X=1", "SGE_ROOT=/cell",
                                           "SGE_QMASTER_PORT=6444"}));
}

TEST(SgeFormat, QsubOutputGivesTheJobNumber) {
  EXPECT_EQ(*ParseQsubOutput("17\n"), "17");
  EXPECT_EQ(*ParseQsubOutput("17.1-4:1\n"), "17");
  EXPECT_EQ(*ParseQsubOutput("warning: something\n18\n"), "18");
  for (const char* bad : {"", "\n", "Your job 17 (\"x\") has been submitted\n", "-1\n", "17a\n",
                          "123456789012345678901234\n"}) {
    auto r = ParseQsubOutput(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kProtocol);
  }
}

TEST(SgeFormat, QstatXmlListsRunningPendingHeldAndErrorJobs) {
  auto rows = ParseQstatXml(kQstatXml);
  ASSERT_TRUE(rows) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ(rows->at("2").state, "r");
  EXPECT_EQ(rows->at("2").name, "kite-hrt");
  EXPECT_EQ(rows->at("3").state, "dr");
  EXPECT_EQ(rows->at("3").name, "a&b<c>");
  EXPECT_EQ(rows->at("4").state, "hqw");
  EXPECT_EQ(rows->at("5").state, "Eqw");
  auto empty = ParseQstatXml(kEmptyQstatXml);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(SgeFormat, MalformedQstatXmlIsAnError) {
  std::string good = kQstatXml;
  std::vector<std::string> bad = {
      "",
      "error: commlib error: got select error (Connection refused)\n",
      good.substr(0, good.size() / 2),                           // cut short
      good.substr(0, good.find("</job_list>")) + "</job_info>",  // unclosed job
      R"(<job_info><job_list><JB_name>x</JB_name><state>r</state></job_list></job_info>)",
      R"(<job_info><job_list><JB_job_number>x1</JB_job_number><state>r</state></job_list></job_info>)",
      R"(<job_info><job_list><JB_job_number>1</JB_job_number><state></state></job_list></job_info>)",
  };
  for (const auto& b : bad) {
    auto r = ParseQstatXml(b);
    ASSERT_FALSE(r) << b;
    EXPECT_EQ(r.error().code(), ErrorCode::kProtocol);
  }
}

TEST(SgeFormat, QacctGivesFailureExitStatusWallclockAndCategory) {
  auto a = ParseQacct(kQacctHrt);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->id, "2");
  EXPECT_EQ(a->name, "kite-hrt");
  EXPECT_EQ(a->failed, 37);
  EXPECT_EQ(a->failed_text, "qmaster enforced h_rt, h_cpu, or h_vmem limit");
  EXPECT_EQ(a->exit_status, 137);
  EXPECT_DOUBLE_EQ(a->wallclock_s, 3);
  EXPECT_EQ(a->category, "-l h_rt=3");
  // Several records (an array's tasks): the last.
  auto two = ParseQacct(Acct("7", "0", "0", "1s", "NONE") + Acct("7", "0", "4", "2.5", "NONE"));
  ASSERT_TRUE(two);
  EXPECT_EQ(two->exit_status, 4);
  EXPECT_DOUBLE_EQ(two->wallclock_s, 2.5);
}

TEST(SgeFormat, QacctWithoutTheJobIsNotFoundAndGarbageIsAnError) {
  auto none = ParseQacct("error: job id 4 not found\n");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
  auto byname = ParseQacct("error: job name kite-x not found\n");
  ASSERT_FALSE(byname);
  EXPECT_EQ(byname.error().code(), ErrorCode::kNotFound);
  // No accounting file yet (no job has ended in the cell).
  auto nofile = ParseQacct(
      "no jobs running since startup\n/sge/default/common/accounting: No such file or directory\n");
  ASSERT_FALSE(nofile);
  EXPECT_EQ(nofile.error().code(), ErrorCode::kNotFound);
  std::vector<std::string> bad = {
      "",
      "hello\n",
      Acct("x7", "0", "0", "1s", "NONE"),
      Acct("7", "zero", "0", "1s", "NONE"),
      Acct("7", "0", "", "1s", "NONE"),
      Acct("7", "0", "999", "1s", "NONE"),
      "==========\njobnumber 7\nfailed 0\n",  // no exit_status
  };
  for (const auto& b : bad) {
    auto r = ParseQacct(b);
    ASSERT_FALSE(r) << b;
    EXPECT_EQ(r.error().code(), ErrorCode::kProtocol) << b;
  }
}

TEST(SgeFormat, HardRuntimeComesFromTheCategory) {
  EXPECT_EQ(HardRuntime("-l h_rt=30"), 30);
  EXPECT_EQ(HardRuntime("-l h_vmem=100M,h_rt=0:2:5 -pe smp 2"), 125);
  EXPECT_EQ(HardRuntime("-l s_h_rt=30"), 0);
  EXPECT_EQ(HardRuntime("NONE"), 0);
  EXPECT_EQ(HardRuntime("-l h_rt=abc"), 0);
  EXPECT_EQ(HardRuntime("-l h_rt="), 0);
}

TEST(SgeFormat, StatesMapToPhases) {
  for (const char* s : {"qw", "hqw", "hRwq", "Rq", "dqw"})
    EXPECT_EQ(ClassifyState(s), Phase::kWaiting) << s;
  for (const char* s : {"r", "t", "Rr", "Rt", "s", "S", "T", "dr", "dt", "hr"})
    EXPECT_EQ(ClassifyState(s), Phase::kRunning) << s;
  for (const char* s : {"Eqw", "dEqw"}) EXPECT_EQ(ClassifyState(s), Phase::kError) << s;
  for (const char* s : {"", "x", "running", "z"}) EXPECT_EQ(ClassifyState(s), Phase::kUnknown) << s;
}

TEST(SgeFormat, OutcomesWhileListed) {
  auto q = DecideOutcome("4", QstatRow{"4", "n", "hqw"}, {});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->state, BatchState::kQueued);
  auto r = DecideOutcome("2", QstatRow{"2", "n", "r"}, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, BatchState::kRunning);
  auto e = DecideOutcome("5", QstatRow{"5", "n", "Eqw"}, {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->state, BatchState::kLost);
  EXPECT_NE(e->reason.find("error state (Eqw)"), std::string::npos) << e->reason;
  EXPECT_FALSE(DecideOutcome("6", QstatRow{"6", "n", "zz"}, {}));
}

TEST(SgeFormat, OutcomesOnceGone) {
  ExecStatus exit3;
  exit3.code = 3;
  // kite-exec's record is exact and needs no accounting.
  auto done = DecideOutcome("2", std::nullopt, {.status = exit3});
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, BatchState::kEnded);
  EXPECT_EQ(done->exit->code, 3);
  EXPECT_FALSE(done->limit_exceeded);
  auto alive = DecideOutcome("2", std::nullopt, {.wrapper_alive = true});
  ASSERT_TRUE(alive);
  EXPECT_EQ(alive->state, BatchState::kRunning);
  // No record yet: wait for the accounting file.
  EXPECT_FALSE(DecideOutcome("2", std::nullopt, {}));

  // h_rt enforced by qmaster.
  auto hrt = DecideOutcome("2", std::nullopt, {.acct = *ParseQacct(kQacctHrt)});
  ASSERT_TRUE(hrt);
  EXPECT_EQ(hrt->state, BatchState::kEnded);
  EXPECT_TRUE(hrt->limit_exceeded);
  ASSERT_TRUE(hrt->exit);
  EXPECT_EQ(hrt->exit->kind, ExecStatus::Kind::kSignaled);
  EXPECT_EQ(hrt->exit->code, 9);
  EXPECT_NE(hrt->reason.find("walltime, h_rt=3 s"), std::string::npos) << hrt->reason;
  // h_rt enforced by execd (failed 100), known by the wallclock reaching it.
  auto hrt2 = DecideOutcome(
      "8", std::nullopt,
      {.acct = *ParseQacct(Acct("8", "100 : assumedly after job", "137", "31s", "-l h_rt=30"))});
  ASSERT_TRUE(hrt2);
  EXPECT_TRUE(hrt2->limit_exceeded);
  // Killed before its h_rt (qdel behind Kite's back): lost, with Grid Engine's words.
  auto del = DecideOutcome(
      "9", std::nullopt,
      {.acct = *ParseQacct(Acct("9", "100 : assumedly after job", "137", "2s", "-l h_rt=30"))},
      "see sge.out");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->state, BatchState::kLost);
  EXPECT_FALSE(del->limit_exceeded);
  EXPECT_NE(del->reason.find("killed by signal 9"), std::string::npos) << del->reason;
  EXPECT_NE(del->reason.find("assumedly after job"), std::string::npos) << del->reason;
  EXPECT_NE(del->reason.find("see sge.out"), std::string::npos) << del->reason;
  // Never an accounting record (deleted while pending): lost once given up.
  auto gone = DecideOutcome("10", std::nullopt, {.acct_given_up = true});
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->state, BatchState::kLost);
  EXPECT_NE(gone->reason.find("no accounting record"), std::string::npos) << gone->reason;
  // No job number known and no record: lost at once.
  auto unknown = DecideOutcome("", std::nullopt, {});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->state, BatchState::kLost);
}

TEST(SgeFormat, SiteInfoFromQstatQhostAndQconf) {
  std::string queues =
      "CLUSTER QUEUE                   CQLOAD   USED    RES  AVAIL  TOTAL aoACDS  cdsuE  \n"
      "--------------------------------------------------------------------------------\n"
      "all.q                             0.05      2      0      2      4      0      0 \n"
      "long.q                            0.00      0      0      0      2      0      2 \n";
  std::string jobs =
      "<?xml version='1.0'?>\n<job_info  xmlns:xsd=\"x\">\n  <queue_info>\n"
      "    <job_list state=\"running\"><JB_job_number>1</JB_job_number><JB_name>a</JB_name>"
      "<state>r</state></job_list>\n  </queue_info>\n  <job_info>\n"
      "    <job_list state=\"pending\"><JB_job_number>2</JB_job_number><JB_name>b</JB_name>"
      "<state>qw</state></job_list>\n"
      "    <job_list state=\"pending\"><JB_job_number>3</JB_job_number><JB_name>c</JB_name>"
      "<state>hqw</state></job_list>\n  </job_info>\n</job_info>\n";
  std::string hosts =
      "HOSTNAME                ARCH         NCPU NSOC NCOR NTHR  LOAD  MEMTOT  MEMUSE  SWAPTO  "
      "SWAPUS\n"
      "----------------------------------------------------------------------------------------"
      "------\n"
      "global                  -               -    -    -    -     -       -       -       -  "
      "     -\n"
      "node1                   lx-amd64        4    1    4    4  0.05   23.4G    1.2G    0.0  "
      "     0.0\n"
      "node2                   lx-amd64        2    1    2    2  0.00  512.0M  100.0M    0.0  "
      "     0.0\n";
  std::vector<std::string> limits = {"qname all.q\nh_rt                  1:30:00\n",
                                     "qname long.q\nh_rt                  INFINITY\n"};
  auto i = ParseSiteInfo(queues, jobs, hosts, limits);
  ASSERT_TRUE(i) << i.error().ToString();
  EXPECT_EQ(i->batch_system, "sge");
  EXPECT_EQ(i->queues, (std::vector<std::string>{"all.q", "long.q"}));
  EXPECT_EQ(i->total_cpus, 6);
  EXPECT_EQ(i->free_cpus, 2);  // long.q's slots are disabled
  EXPECT_EQ(i->running_jobs, 1);
  EXPECT_EQ(i->pending_jobs, 2);
  EXPECT_EQ(i->memory_mb, static_cast<int64_t>(23.4 * 1024));
  EXPECT_EQ(i->max_walltime_s, 0);  // long.q has no limit
  EXPECT_FALSE(i->estimated_start_s);
  auto limited = ParseSiteInfo(queues, jobs, hosts, {limits[0]});
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->max_walltime_s, 5400);
  EXPECT_EQ(ParseHardRuntime("5400"), 5400);
  EXPECT_EQ(ParseHardRuntime("INFINITY"), 0);
  EXPECT_FALSE(ParseHardRuntime("1:x"));
  EXPECT_FALSE(ParseSiteInfo("nothing here\n", jobs, hosts, limits));
  EXPECT_FALSE(ParseSiteInfo(queues, "<not xml", hosts, limits));
}

}  // namespace
}  // namespace kite::gram::batch::sge
