// DAGs run by the agent (docs/dag.md): `kite dag submit` with real local-universe node jobs, real
// PRE/POST scripts, rescue DAGs, and kill -9 of the agent while a DAG runs.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

// A node job that appends its node name to ran.txt and exits with $(code) (0 unless VARS say).
constexpr char kNodeSub[] =
    "universe = local\n"
    "executable = /bin/sh\n"
    "arguments = \"-c 'echo $(node) >> ran.txt; exit $(code)'\"\n"
    "code = 0\n"
    "queue\n";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

int DagCluster(const CommandResult& r) {
  std::smatch m;
  std::regex re("1 job\\(s\\) submitted to cluster ([0-9]+)\\.");
  if (!std::regex_search(r.out, m, re)) return 0;
  return std::stoi(m[1]);
}

// Waits for the DAG's job to leave the queue; its ExitCode from the history ("" when not found).
std::string WaitForDag(const KiteEnv& env, int cluster, int seconds = 60) {
  std::string id = std::to_string(cluster) + ".0";
  auto w = env.Kite({"wait", id, "--timeout", std::to_string(seconds)});
  EXPECT_EQ(w.exit_code, 0) << w.out << w.err;
  auto h = env.Kite({"history", id, "-json"});
  boost::system::error_code ec;
  auto v = boost::json::parse(h.out, ec);
  if (ec || !v.is_array() || v.as_array().empty()) return "";
  auto* code = v.as_array()[0].as_object().if_contains("ExitCode");
  return code ? boost::json::serialize(*code) : "";
}

size_t Position(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

TEST(Dag, ADiamondRunsInOrderWithItsScriptsAndANodeThatSucceedsOnItsRetry) {
  KiteEnv env("dag-diamond");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  env.Write("pre.sh", "#!/bin/sh\necho \"pre $1 retry $2 of $3\" >> scripts.txt\n", 0755);
  env.Write("post.sh", "#!/bin/sh\necho \"post $1 return $2\" >> scripts.txt\nexit $2\n", 0755);
  // C fails on its first run only: the side-effect file says whether it ran before.
  env.Write("flaky.sub",
            "universe = local\nexecutable = /bin/sh\n"
            "arguments = \"-c 'echo C >> ran.txt; test -f c.once && exit 0; touch c.once; exit "
            "7'\"\nqueue\n");
  env.Write("diamond.dag",
            "# the classic diamond\n"
            "JOB A node.sub\nJOB B node.sub\nJOB C flaky.sub\nJOB D node.sub\n"
            "VARS ALL_NODES node=\"$(JOB)\"\n"
            "PARENT A CHILD B C\nPARENT B C CHILD D\n"
            "SCRIPT PRE B pre.sh $JOB $RETRY $MAX_RETRIES\n"
            "SCRIPT POST C post.sh $JOB $RETURN\n"
            "RETRY C 2\n");
  auto r = env.Kite({"dag", "submit", "diamond.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int dag = DagCluster(r);
  ASSERT_GT(dag, 0) << r.out;
  EXPECT_EQ(WaitForDag(env, dag), "0");
  auto ran = Lines(ReadFileOr(env.dir() + "/ran.txt"));
  ASSERT_EQ(ran.size(), 5u) << ReadFileOr(env.dir() + "/ran.txt");  // C twice
  EXPECT_EQ(ran.front(), "A");
  EXPECT_EQ(ran.back(), "D");
  EXPECT_EQ(std::count(ran.begin(), ran.end(), "C"), 2);
  EXPECT_LT(Position(ran, "A"), Position(ran, "B"));
  std::string scripts = ReadFileOr(env.dir() + "/scripts.txt");
  EXPECT_NE(scripts.find("pre B retry 0 of 0\n"), std::string::npos) << scripts;
  EXPECT_NE(scripts.find("post C return 7\n"), std::string::npos) << scripts;
  EXPECT_NE(scripts.find("post C return 0\n"), std::string::npos) << scripts;
  // DAGMan's files, by DAGMan's names.
  std::string out = ReadFileOr(env.dir() + "/diamond.dag.dagman.out");
  EXPECT_NE(out.find("Node C failed; retry 1 of 2"), std::string::npos) << out;
  EXPECT_NE(out.find("DAG ended with exit code 0: 4 done, 0 failed"), std::string::npos) << out;
  std::string nodes_log = ReadFileOr(env.dir() + "/diamond.dag.nodes.log");
  EXPECT_EQ(std::count(nodes_log.begin(), nodes_log.end(), '\n') > 0, true);
  EXPECT_EQ(nodes_log.rfind("000 (", 0), 0u) << nodes_log;  // a submit event comes first
  // No rescue DAG after a success; the node jobs carried their DAG's id and their names.
  EXPECT_EQ(ReadFileOr(env.dir() + "/diamond.dag.rescue001", "none"), "none");
  auto h = env.Kite(
      {"history", "-constraint", "DAGManJobId == " + std::to_string(dag), "-af", "DAGNodeName"});
  auto names = Lines(h.out);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"A", "B", "C", "C", "D"})) << h.out << h.err;
  // kite dag status of the finished DAG says how it ended, from history.
  auto st = env.Kite({"dag", "status", std::to_string(dag)});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("It has ended: completed at "), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("exit code 0 (DAG_Status 0); 4 of 4 nodes done, 0 failed."),
            std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("kite history -constraint 'DAGManJobId == " + std::to_string(dag) + "'"),
            std::string::npos)
      << st.out;
}

TEST(Dag, AFailedNodeLeavesARescueDagAndTheNextSubmitRunsOnlyWhatWasNotDone) {
  KiteEnv env("dag-rescue");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  const std::string dag_text =
      "JOB A node.sub\nJOB B node.sub\nJOB C node.sub\nJOB E node.sub\n"
      "VARS ALL_NODES node=\"$(JOB)\"\nVARS B code=\"BCODE\"\n"
      "PARENT A CHILD B\nPARENT B CHILD C\n";
  // B fails (exit 5): C never runs; A and E are done.
  env.Write("chain.dag", std::regex_replace(dag_text, std::regex("BCODE"), "5"));
  auto r = env.Kite({"dag", "submit", "chain.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WaitForDag(env, DagCluster(r)), "1");
  std::string rescue = ReadFileOr(env.dir() + "/chain.dag.rescue001");
  EXPECT_NE(rescue.find("DONE A\n"), std::string::npos) << rescue;
  EXPECT_NE(rescue.find("DONE E\n"), std::string::npos) << rescue;
  EXPECT_EQ(rescue.find("DONE B"), std::string::npos) << rescue;
  EXPECT_EQ(rescue.find("DONE C"), std::string::npos) << rescue;
  EXPECT_NE(rescue.find("# Nodes that failed: 1\n#   B,<ENDLIST>\n"), std::string::npos) << rescue;
  EXPECT_NE(rescue.find("#   B: job"), std::string::npos) << rescue;
  // The cause fixed, the same command runs B and C only.
  env.Write("chain.dag", std::regex_replace(dag_text, std::regex("BCODE"), "0"));
  ::unlink((env.dir() + "/ran.txt").c_str());
  r = env.Kite({"dag", "submit", "chain.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Running the rescue DAG"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 node(s) already done"), std::string::npos) << r.out;
  EXPECT_EQ(WaitForDag(env, DagCluster(r)), "0");
  EXPECT_EQ(ReadFileOr(env.dir() + "/ran.txt"), "B\nC\n");
  // -force starts over: the rescue DAG is moved aside and every node runs.
  ::unlink((env.dir() + "/ran.txt").c_str());
  r = env.Kite({"dag", "submit", "-force", "chain.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WaitForDag(env, DagCluster(r)), "0");
  EXPECT_EQ(Lines(ReadFileOr(env.dir() + "/ran.txt")).size(), 4u);
  EXPECT_NE(ReadFileOr(env.dir() + "/chain.dag.rescue001.old", "none"), "none");
}

// condor_submit_dag -usedagdir: two DAGs in folders of their own, each naming its node submit file
// and an INCLUDE by their bare names, run from above as one DAG; each file's nodes run in its own
// folder. Without it, names start from the first file's folder (Kite's default for several
// files), so the second file's node runs there.
TEST(Dag, UseDagDirRunsEachDagFilesNamesFromItsOwnFolder) {
  KiteEnv env("dag-usedagdir");
  env.StartAgent();
  for (const char* dir : {"one", "two"}) {
    std::filesystem::create_directories(env.dir() + "/" + dir);
    env.Write(std::string(dir) + "/node.sub", kNodeSub);
  }
  env.Write("one/a.dag", "JOB A node.sub\nVARS A node=\"A\"\nINCLUDE more.dag\n");
  env.Write("one/more.dag", "JOB M node.sub\nVARS M node=\"M\"\nPARENT A CHILD M\n");
  env.Write("two/b.dag", "JOB B node.sub\nVARS B node=\"B\"\n");
  auto plain = env.Kite({"dag", "submit", "one/a.dag", "two/b.dag"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(WaitForDag(env, DagCluster(plain)), "0");
  auto lines = Lines(ReadFileOr(env.dir() + "/one/ran.txt"));
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"A", "B", "M"}));
  EXPECT_FALSE(std::filesystem::exists(env.dir() + "/two/ran.txt"));

  ::unlink((env.dir() + "/one/ran.txt").c_str());
  auto r = env.Kite({"dag", "submit", "-usedagdir", "one/a.dag", "two/b.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WaitForDag(env, DagCluster(r)), "0");
  EXPECT_EQ(ReadFileOr(env.dir() + "/one/ran.txt"), "A\nM\n");
  EXPECT_EQ(ReadFileOr(env.dir() + "/two/ran.txt"), "B\n");
  EXPECT_EQ(env.JobAttr(std::to_string(DagCluster(r)) + ".0", "DAGUseDagDir", true).find("true"),
            0u);
}

TEST(Dag, MalformedDagFilesAreRefusedNamingFileAndLineAndNothingIsQueued) {
  KiteEnv env("dag-bad");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  const std::pair<std::string, std::string> cases[] = {
      {"JOB A node.sub\nJOB B node.sub\nPARENT A CHILD B\nPARENT B CHILD A\n", "cycle: "},
      {"JOB A node.sub\nPARENT A CHILD Z\n", "bad.dag:2: "},
      {"JOB A missing.sub\n", "bad.dag:1: "},
      {"JOB A node.sub\nRETRY A many\n", "bad.dag:2: "},
      {"JOB A node.sub\nRETRY A -1\n", "bad.dag:2: "},
      {"JOB A node.sub\nFROBNICATE A\n", "bad.dag:2: "},
      {"JOB A node.sub\n# " + std::string(1 << 20, 'x') + "\n", "bad.dag:2: "},
  };
  for (const auto& [text, want] : cases) {
    env.Write("bad.dag", text);
    auto r = env.Kite({"dag", "submit", "bad.dag"});
    EXPECT_NE(r.exit_code, 0) << text.substr(0, 80);
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err.substr(0, 300);
  }
  auto q = env.Kite({"q", "-json"});
  EXPECT_EQ(q.out.find("ClusterId"), std::string::npos) << q.out;
  auto h = env.Kite({"history", "-json"});
  EXPECT_EQ(h.out.find("ClusterId"), std::string::npos) << h.out;
}

TEST(Dag, RemovingTheDagRemovesItsRunningNodesAndWritesARescueDag) {
  KiteEnv env("dag-rm");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  env.Write("slow.sub",
            "universe = local\nexecutable = /bin/sh\n"
            "arguments = \"-c 'echo S >> ran.txt; sleep 300'\"\nqueue\n");
  env.Write("rm.dag",
            "JOB A node.sub\nJOB S slow.sub\nJOB Z node.sub\nVARS A node=\"A\"\n"
            "VARS Z node=\"Z\"\nPARENT A CHILD S\nPARENT S CHILD Z\n");
  auto r = env.Kite({"dag", "submit", "rm.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int dag = DagCluster(r);
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(env.dir() + "/ran.txt") == "A\nS\n"; }, 20));
  auto st = env.Kite({"dag", "status", "rm.dag"});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("submitted"), std::string::npos) << st.out;
  // condor_q -dag: the node's job under its DAG, by its node's name.
  auto q = env.Kite({"q", "-dag"});
  EXPECT_NE(q.out.find(" |-S\n"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("kite-dag "), std::string::npos) << q.out;
  // condor_q's batch view: one row for the DAG, named "file+C", counting its nodes (DONE, TOTAL)
  // and its nodes' jobs (RUN, JOB_IDS); the DAG's own job is not one of them.
  auto batch = env.Kite({"q"});
  std::smatch row;
  ASSERT_TRUE(std::regex_search(batch.out, row,
                                std::regex("\\S+ +rm\\.dag\\+" + std::to_string(dag) +
                                           " +\\S+ \\S+ +1 +1 +_ +_ +3 ([0-9]+)\\.0\\n")))
      << batch.out;
  EXPECT_NE(std::stoi(row[1]), dag);
  ASSERT_EQ(env.Kite({"rm", std::to_string(dag)}).exit_code, 0);
  // Its node's job goes too, and nothing after it runs.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto left = env.Kite({"q", "-json"});
        return left.exit_code == 0 && left.out.find("ClusterId") == std::string::npos;
      },
      20));
  std::string rescue = ReadFileOr(env.dir() + "/rm.dag.rescue001");
  EXPECT_NE(rescue.find("DONE A\n"), std::string::npos) << rescue;
  EXPECT_EQ(rescue.find("DONE S"), std::string::npos) << rescue;
  EXPECT_EQ(ReadFileOr(env.dir() + "/ran.txt"), "A\nS\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return env.Kite({"dag", "status", std::to_string(dag)}).out.find("It has ended") !=
               std::string::npos;
      },
      20));
  st = env.Kite({"dag", "status", std::to_string(dag)});
  EXPECT_NE(st.out.find("It has ended: removed at "), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("1970"), std::string::npos) << st.out;  // the removal's own time
  EXPECT_NE(st.out.find("1 of 3 nodes done"), std::string::npos) << st.out;
  // A DAG id nobody ever had is not found.
  auto none = env.Kite({"dag", "status", "999999"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("history has no DAG of that id"), std::string::npos) << none.err;
}

// DAGMan's rule since 8.5.4: a failed PRE script fails the node's attempt without its POST
// script, unless DAGMAN_ALWAYS_RUN_POST (the DAG's CONFIG) or -AlwaysRunPost says otherwise; the
// command line wins over the CONFIG file.
TEST(Dag, AFailedPreScriptSkipsThePostScriptUnlessConfigOrTheCommandLineSaysAlwaysRunPost) {
  KiteEnv env("dag-config");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  env.Write("pre.sh", "#!/bin/sh\necho pre >> scripts.txt\nexit 3\n", 0755);
  env.Write("post.sh", "#!/bin/sh\necho \"post $1\" >> scripts.txt\nexit 0\n", 0755);
  const std::string nodes =
      "JOB A node.sub\nVARS A node=\"A\"\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh $RETURN\n";
  struct Case {
    std::string config;              // the CONFIG file's text, or "" for none
    std::vector<std::string> flags;  // on the command line
    bool post_runs;
  };
  const Case cases[] = {
      {"", {}, false},
      {"", {"-AlwaysRunPost"}, true},
      {"# per-DAG settings\nDAGMAN_ALWAYS_RUN_POST = True\nDAGMAN_MAX_JOBS_SUBMITTED = 7\n"
       "DAGMAN_USER_LOG_SCAN_INTERVAL = 1\n",
       {},
       true},
      {"dagman_always_run_post = true\n", {"-DontAlwaysRunPost"}, false},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE("case " + std::to_string(n));
    std::string name = "c" + std::to_string(n++) + ".dag";
    std::string text = nodes;
    if (!c.config.empty()) {
      env.Write(name + ".config", c.config);
      text += "CONFIG " + name + ".config\n";
    }
    env.Write(name, text);
    std::remove((env.dir() + "/scripts.txt").c_str());
    std::vector<std::string> args = {"dag", "submit", name};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    auto r = env.Kite(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    int dag = DagCluster(r);
    // The POST script succeeding makes the node (and the DAG) succeed; without it, the PRE
    // script's failure fails them.
    EXPECT_EQ(WaitForDag(env, dag), c.post_runs ? "0" : "1");
    EXPECT_EQ(ReadFileOr(env.dir() + "/scripts.txt"), c.post_runs ? "pre\npost -1004\n" : "pre\n");
    EXPECT_EQ(ReadFileOr(env.dir() + "/ran.txt", ""), "");  // the job never ran
    if (n == 3) {
      // The settings Kite applies are in the DAG's job; the others are named as not applied.
      EXPECT_NE(r.err.find(".config:4: DAGMAN_USER_LOG_SCAN_INTERVAL is not applied by Kite"),
                std::string::npos)
          << r.err;
      auto h = env.Kite({"history", std::to_string(dag), "-af", "DAGMaxJobs", "DAGAlwaysRunPost"});
      EXPECT_EQ(h.out, "7 true\n") << h.err;
    }
  }
  // A CONFIG value that is not of its kind is refused before anything is queued.
  env.Write("bad.config", "DAGMAN_MAX_JOBS_IDLE = lots\n");
  env.Write("bad.dag", nodes + "CONFIG bad.config\n");
  auto bad = env.Kite({"dag", "submit", "bad.dag"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("bad.config:1: DAGMAN_MAX_JOBS_IDLE must be a whole number"),
            std::string::npos)
      << bad.err;
}

// Ready nodes of equal priority start in file order; with DAGMAN_SUBMIT_DEPTH_FIRST (CONFIG) the
// latest ready first, so with one job at a time each chain runs unbroken.
TEST(Dag, DepthFirstFromTheConfigRunsEachChainUnbroken) {
  KiteEnv env("dag-depth");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  // Three chains x-1 -> x-2 -> x-3 under A, their nodes written level by level.
  std::string nodes = "JOB A node.sub\n";
  for (int level = 1; level <= 3; ++level) {
    for (const char* chain : {"p", "q", "r"})
      nodes += "JOB " + std::string(chain) + std::to_string(level) + " node.sub\n";
  }
  nodes += "VARS ALL_NODES node=\"$(JOB)\"\nPARENT A CHILD p1 q1 r1\n";
  for (const char* chain : {"p", "q", "r"}) {
    std::string c = chain;
    nodes += "PARENT " + c + "1 CHILD " + c + "2\nPARENT " + c + "2 CHILD " + c + "3\n";
  }
  env.Write("depth.config", "DAGMAN_SUBMIT_DEPTH_FIRST = True\nDAGMAN_MAX_JOBS_SUBMITTED = 1\n");
  env.Write("breadth.config", "DAGMAN_MAX_JOBS_SUBMITTED = 1\n");
  for (const char* mode : {"breadth", "depth"}) {
    SCOPED_TRACE(mode);
    std::remove((env.dir() + "/ran.txt").c_str());
    std::string name = std::string(mode) + ".dag";
    env.Write(name, nodes + "CONFIG " + mode + ".config\n");
    auto r = env.Kite({"dag", "submit", name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(WaitForDag(env, DagCluster(r)), "0");
    std::string ran = ReadFileOr(env.dir() + "/ran.txt");
    for (char& c : ran) c = c == '\n' ? ' ' : c;
    if (std::string(mode) == "depth") {
      // Which chain goes first is the runner's choice; each is whole.
      EXPECT_EQ(ran.substr(0, 2), "A ") << ran;
      for (const char* chain : {"p", "q", "r"}) {
        std::string c = chain;
        EXPECT_NE(ran.find(c + "1 " + c + "2 " + c + "3 "), std::string::npos) << ran;
      }
    } else {
      EXPECT_EQ(ran, "A p1 q1 r1 p2 q2 r2 p3 q3 r3 ");
    }
  }
}

// JOBSTATE_LOG in DAGMan's format (what Pegasus reads), and DOT pictures of the DAG.
TEST(Dag, TheJobstateLogAndTheDotFileSayWhatHappenedAsDagmanWritesThem) {
  KiteEnv env("dag-jobstate");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  env.Write("ok.sh", "#!/bin/sh\nexit 0\n", 0755);
  env.Write("j.dag",
            "JOB A node.sub\nJOB B node.sub\nVARS ALL_NODES node=\"$(JOB)\"\n"
            "PARENT A CHILD B\nSCRIPT PRE A ok.sh\nSCRIPT POST A ok.sh\n"
            "JOBSTATE_LOG j.jobstate.log\nDOT j.dot UPDATE\n");
  auto r = env.Kite({"dag", "submit", "j.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int dag = DagCluster(r);
  EXPECT_EQ(WaitForDag(env, dag), "0");
  auto lines = Lines(ReadFileOr(env.dir() + "/j.jobstate.log"));
  ASSERT_FALSE(lines.empty());
  std::regex internal(R"(^[0-9]{10} INTERNAL \*\*\* (.*) \*\*\*$)");
  std::regex node(R"(^[0-9]{10} ([AB]) ([A-Z_]+) (\S+) local - ([0-9]+)$)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines.front(), m, internal)) << lines.front();
  EXPECT_EQ(m[1], "DAGMAN_STARTED " + std::to_string(dag) + ".0");
  ASSERT_TRUE(std::regex_match(lines.back(), m, internal)) << lines.back();
  EXPECT_EQ(m[1], "DAGMAN_FINISHED 0");
  std::map<std::string, std::vector<std::string>> events;  // node -> "EVENT ID"
  std::map<std::string, std::string> seq;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    ASSERT_TRUE(std::regex_match(lines[i], m, node)) << lines[i];
    events[m[1]].push_back(m[2].str() + " " + m[3].str());
    if (seq.count(m[1])) {
      EXPECT_EQ(seq[m[1]], m[4]) << lines[i];  // one attempt, one number
    }
    seq[m[1]] = m[4];
  }
  EXPECT_NE(seq["A"], seq["B"]);
  auto job_of = [&](const std::string& n) {
    for (const auto& e : events[n]) {
      if (e.rfind("SUBMIT ", 0) == 0) return e.substr(7);
    }
    return std::string("?");
  };
  std::string a = job_of("A"), b = job_of("B");
  EXPECT_EQ(events["A"],
            (std::vector<std::string>{"PRE_SCRIPT_STARTED -", "PRE_SCRIPT_SUCCESS -", "SUBMIT " + a,
                                      "EXECUTE " + a, "JOB_TERMINATED " + a, "JOB_SUCCESS 0",
                                      "POST_SCRIPT_STARTED " + a, "POST_SCRIPT_TERMINATED " + a,
                                      "POST_SCRIPT_SUCCESS " + a}));
  EXPECT_EQ(events["B"], (std::vector<std::string>{"SUBMIT " + b, "EXECUTE " + b,
                                                   "JOB_TERMINATED " + b, "JOB_SUCCESS 0"}));
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9]+\\.0"))) << a;
  // The DOT file: a graph with both nodes, the link, and (UPDATE) their states at the end.
  std::string dot = ReadFileOr(env.dir() + "/j.dot");
  EXPECT_EQ(dot.rfind("digraph ", 0), 0u) << dot;
  EXPECT_NE(dot.find("\"A\" -> \"B\";"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"B\" [label=\"B - done\"];"), std::string::npos) << dot;
}

// condor_submit_dag a.dag b.dag: several files are one DAG, named by the first.
TEST(Dag, SeveralDagFilesRunAsOneDagNamedByTheFirst) {
  KiteEnv env("dag-files");
  env.StartAgent();
  env.Write("node.sub", kNodeSub);
  env.Write("one.dag", "JOB A node.sub\nVARS A node=\"A\"\n");
  // B fails the first time (its code from VARS: 4), is fixed, and the rescue DAG is one.dag's.
  env.Write("two.dag", "JOB B node.sub\nVARS B node=\"B\"\nVARS B code=\"4\"\nPARENT A CHILD B\n");
  auto r = env.Kite({"dag", "submit", "one.dag", "two.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Submitting the DAG one.dag two.dag (2 nodes)"), std::string::npos) << r.out;
  EXPECT_EQ(WaitForDag(env, DagCluster(r)), "1");
  EXPECT_EQ(ReadFileOr(env.dir() + "/ran.txt"), "A\nB\n");
  std::string rescue = ReadFileOr(env.dir() + "/one.dag.rescue001");
  EXPECT_NE(rescue.find("DONE A\n"), std::string::npos) << rescue;
  env.Write("two.dag", "JOB B node.sub\nVARS B node=\"B\"\nPARENT A CHILD B\n");
  auto again = env.Kite({"dag", "submit", "one.dag", "two.dag"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(WaitForDag(env, DagCluster(again)), "0");
  EXPECT_EQ(ReadFileOr(env.dir() + "/ran.txt"), "A\nB\nB\n");
  // A name defined in both files is refused, naming where.
  env.Write("dup.dag", "JOB A node.sub\n");
  auto dup = env.Kite({"dag", "submit", "one.dag", "dup.dag"});
  EXPECT_NE(dup.exit_code, 0);
  EXPECT_NE(dup.err.find("dup.dag:1: "), std::string::npos) << dup.err;
}

// The most node jobs at once, from a trace of "+" (a node starts) and "-" (it ends) lines.
int MostAtOnce(const std::string& trace) {
  int now = 0, most = 0;
  for (char c : trace) {
    now += c == '+' ? 1 : c == '-' ? -1 : 0;
    most = std::max(most, now);
  }
  return most;
}

TEST(Dag, MaxjobsAndACategorysMaxjobsHoldNodeJobsBack) {
  KiteEnv env("dag-throttle");
  env.StartAgent();
  env.Write("node.sub",
            "universe = local\nexecutable = /bin/sh\n"
            "arguments = \"-c 'echo + >> $(trace); sleep 0.2; echo - >> $(trace)'\"\nqueue\n");
  std::string dag;
  for (int i = 0; i < 12; ++i) {
    dag += "JOB a" + std::to_string(i) + " node.sub\nJOB b" + std::to_string(i) + " node.sub\n";
    dag += "CATEGORY b" + std::to_string(i) + " slow\n";
  }
  dag += "VARS ALL_NODES trace=\"all.trace\"\nMAXJOBS slow 2\n";
  for (int i = 0; i < 12; ++i) dag += "VARS b" + std::to_string(i) + " trace=\"slow.trace\"\n";
  env.Write("t.dag", dag);
  auto r = env.Kite({"dag", "submit", "-maxjobs", "3", "t.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WaitForDag(env, DagCluster(r)), "0");
  std::string all = ReadFileOr(env.dir() + "/all.trace");
  std::string slow = ReadFileOr(env.dir() + "/slow.trace");
  EXPECT_EQ(std::count(all.begin(), all.end(), '+'), 12);
  EXPECT_EQ(std::count(slow.begin(), slow.end(), '+'), 12);
  // Two traces: -maxjobs bounds their sum, so each is at most 3, and the category at most 2.
  EXPECT_LE(MostAtOnce(all), 3) << all;
  EXPECT_LE(MostAtOnce(slow), 2) << slow;
  EXPECT_GE(MostAtOnce(all) + MostAtOnce(slow), 2);
}

// kill -9 of the agent at random moments while a DAG of short local nodes runs: after the last
// restart the DAG completes and every node ran exactly once.
// Issue 25, defect 9: a DAG that names itself as a sub-DAG through another spelling of its path
// (./../dag/alias.dag) is the same file: its node fails at once, saying so, and nothing recurses.
TEST(Dag, ADagThatIsItsOwnSubDagUnderAnotherNameFailsAtOnce) {
  KiteEnv env("dag-alias");
  env.StartAgent();
  std::filesystem::create_directories(env.dir() + "/dag");
  WriteFile(env.dir() + "/dag/alias.dag", "SUBDAG EXTERNAL S ./../dag/alias.dag\n");
  auto r = env.Kite({"dag", "submit", "dag/alias.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int dag = DagCluster(r);
  ASSERT_GT(dag, 0) << r.out;
  EXPECT_EQ(WaitForDag(env, dag, 60), "1");
  auto out = ReadFileOr(env.dir() + "/dag/alias.dag.dagman.out");
  EXPECT_NE(out.find("is already running as DAG " + std::to_string(dag)), std::string::npos) << out;
  // One DAG's job and no sub-DAG ever queued; one rescue DAG.
  auto h = env.Kite({"history", "-af", "ClusterId"});
  EXPECT_EQ(Lines(h.out).size(), 1u) << h.out;
  size_t rescues = 0;
  for (auto& e : std::filesystem::directory_iterator(env.dir() + "/dag"))
    rescues += e.path().filename().string().find(".rescue") != std::string::npos;
  EXPECT_EQ(rescues, 1u);
}

// A queue written by an agent from before the JSON node records (their text form, "done 0 12 0")
// goes on after the upgrade: the node done stays done, the running one is waited for.
TEST(Dag, NodeRecordsInTheOlderTextFormAreReadAfterAnUpgrade) {
  KiteEnv env("dag-old-records");
  env.StartAgent();
  env.Write("a.sub",
            "universe = local\nexecutable = /bin/sh\n"
            "arguments = \"-c 'echo A >> ran.txt'\"\nqueue\n");
  env.Write("b.sub",
            "universe = local\nexecutable = /bin/sh\n"
            "arguments = \"-c 'while [ ! -f go ]; do sleep 0.1; done; echo B >> ran.txt'\"\n"
            "queue\n");
  env.Write("post.sh", "#!/bin/sh\necho $1 >> posts.txt\n", 0755);
  env.Write("ab.dag", "JOB A a.sub\nJOB B b.sub\nSCRIPT POST A post.sh $JOB\nPARENT A CHILD B\n");
  auto r = env.Kite({"dag", "submit", "ab.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int cluster = DagCluster(r);
  std::string records;
  auto stored = [&] {
    auto q = RunCommand(
        {"sqlite3", env.home() + "/queue.db",
         "SELECT node || ' ' || record FROM dag_nodes WHERE dag = " + std::to_string(cluster)});
    records = q.out;
    return q.out;
  };
  // A is done once its POST script has run too ("post" before that).
  ASSERT_TRUE(
      WaitUntil([&] { return stored().find(R"(A {"state":"done")") != std::string::npos; }, 30))
      << records;
  env.StopAgent();  // B's job runs on, waiting for `go`
  auto old = RunCommand(
      {"sqlite3", env.home() + "/queue.db",
       "UPDATE dag_nodes SET record = json_extract(record, '$.state') || ' ' || "
       "json_extract(record, '$.attempts') || ' ' || json_extract(record, '$.cluster') || ' ' || "
       "json_extract(record, '$.code') WHERE dag = " +
           std::to_string(cluster)});
  ASSERT_EQ(old.exit_code, 0) << old.err;
  ASSERT_TRUE(std::regex_search(stored(), std::regex("^A done 0 [0-9]+ 0\n"))) << records;
  env.StartAgent();
  env.Write("go", "");
  EXPECT_EQ(WaitForDag(env, cluster, 60), "0");
  EXPECT_EQ(Lines(ReadFileOr(env.dir() + "/ran.txt")), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(Lines(ReadFileOr(env.dir() + "/posts.txt")), (std::vector<std::string>{"A"}));
}

TEST(Dag, KillNineOfTheAgentWhileADagRunsRunsEveryNodeExactlyOnce) {
  KiteEnv env("dag-kill");
  env.StartAgent();
  env.Write("node.sub",
            "universe = local\nexecutable = /bin/sh\n"
            "arguments = \"-c 'echo $(node) >> ran.txt; sleep 0.$(nap)'\"\nqueue\n");
  env.Write("post.sh", "#!/bin/sh\necho $1 >> posts.txt\n", 0755);
  // Ten chains of twelve, each fanning out from a root and into a last node, so that nodes wait
  // on parents, run side by side, and have POST scripts.
  std::string dag = "JOB root node.sub\nJOB last node.sub\n";
  std::mt19937 rng(std::random_device{}());
  int nodes = 2;
  for (int c = 0; c < 10; ++c) {
    for (int i = 0; i < 12; ++i) {
      std::string n = "n" + std::to_string(c) + "_" + std::to_string(i);
      dag += "JOB " + n + " node.sub\nVARS " + n + " nap=\"" + std::to_string(rng() % 3) + "\"\n";
      dag += i == 0 ? "PARENT root CHILD " + n + "\n"
                    : "PARENT n" + std::to_string(c) + "_" + std::to_string(i - 1) + " CHILD " + n +
                          "\n";
      if (i % 4 == 0) dag += "SCRIPT POST " + n + " post.sh $JOB\n";
      ++nodes;
    }
    dag += "PARENT n" + std::to_string(c) + "_11 CHILD last\n";
  }
  dag += "VARS ALL_NODES node=\"$(JOB)\"\nVARS root nap=\"0\"\nVARS last nap=\"0\"\n";
  env.Write("big.dag", dag);
  auto r = env.Kite({"dag", "submit", "-maxjobs", "6", "big.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int cluster = DagCluster(r);
  for (int kill = 0; kill < 5; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 900));
    env.KillAgent();
    env.StartAgent();
  }
  EXPECT_EQ(WaitForDag(env, cluster, 180), "0");
  auto ran = Lines(ReadFileOr(env.dir() + "/ran.txt"));
  std::map<std::string, int> times;
  for (auto& n : ran) ++times[n];
  EXPECT_EQ(static_cast<int>(times.size()), nodes);
  for (auto& [n, k] : times) EXPECT_EQ(k, 1) << "node " << n << " ran " << k << " times";
  EXPECT_EQ(ran.back(), "last");
  std::printf("dag kill -9: %d nodes, 5 kills, %zu node runs\n", nodes, ran.size());
}

}  // namespace
}  // namespace kite::testing
