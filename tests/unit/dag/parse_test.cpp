// The DAG file parser: DAGMan's commands and their meanings, and the refusals (file:line).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dag/dag.h"

namespace kite::dag {
namespace {

// DAG files in memory, read by name.
class Files {
 public:
  Files& Add(const std::string& name, const std::string& text) {
    files_[name] = text;
    return *this;
  }
  ParseOptions Options() const {
    ParseOptions o;
    o.read = [this](const std::string& path) -> Result<std::string> {
      auto it = files_.find(path);
      if (it == files_.end()) return Fail(ErrorCode::kNotFound, "cannot read " + path);
      return it->second;
    };
    return o;
  }
  Result<Dag> Parse(const std::string& top = "a.dag") const { return ParseDag({top}, Options()); }

 private:
  std::map<std::string, std::string> files_;
};

std::string Names(const Dag& dag, const std::vector<size_t>& ids) {
  std::string out;
  for (size_t i : ids) out += (out.empty() ? "" : " ") + dag.nodes[i].name;
  return out;
}

std::string ErrorOf(const Files& f) {
  auto d = f.Parse();
  return d ? "(parsed)" : d.error().message();
}

TEST(DagParse, ADiamondWithScriptsRetriesAndVars) {
  Files f;
  f.Add("a.dag",
        "# a diamond\n"
        "JOB A a.sub\n"
        "Job B b.sub DIR sub NOOP\n"
        "job C c.sub\n"
        "JOB D d.sub DONE\n"
        "PARENT A CHILD B C\n"
        "parent B C child D\n"
        "SCRIPT PRE A pre.sh $JOB $RETRY\n"
        "SCRIPT DEFER 4 30 POST A post.sh $RETURN\n"
        "RETRY A 3 UNLESS-EXIT 42\n"
        "ABORT-DAG-ON C 7 RETURN 9\n"
        "VARS A x=\"1\" y = \"two words\"\n"
        "VARS A PREPEND +Attr=\"\\\"q\\\"\"\n"
        "PRIORITY D -5\n"
        "CATEGORY C heavy\n"
        "MAXJOBS heavy 2\n"
        "PRE_SKIP B 3\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  ASSERT_EQ(d->nodes.size(), 4u);
  const Node& a = *d->Find("A");
  EXPECT_EQ(a.submit, "a.sub");
  EXPECT_EQ(Names(*d, a.children), "B C");
  EXPECT_EQ(Names(*d, d->Find("D")->parents), "B C");
  ASSERT_TRUE(a.pre && a.post);
  EXPECT_EQ(a.pre->command, "pre.sh $JOB $RETRY");
  EXPECT_EQ(a.post->command, "post.sh $RETURN");
  EXPECT_EQ(a.post->defer_status, 4);
  EXPECT_EQ(a.post->defer_seconds, 30);
  EXPECT_EQ(a.retries, 3);
  EXPECT_EQ(a.retry_unless_exit, 42);
  ASSERT_EQ(a.vars.size(), 3u);
  EXPECT_EQ(a.vars[1].name, "y");
  EXPECT_EQ(a.vars[1].value, "two words");
  EXPECT_EQ(a.vars[2].name, "+Attr");
  EXPECT_EQ(a.vars[2].value, "\"q\"");
  EXPECT_TRUE(a.vars[2].prepend);
  const Node& b = *d->Find("B");
  EXPECT_EQ(b.dir, "sub");
  EXPECT_TRUE(b.noop);
  EXPECT_EQ(b.pre_skip, 3);
  EXPECT_EQ(d->Find("C")->abort_on, 7);
  EXPECT_EQ(d->Find("C")->abort_return, 9);
  EXPECT_EQ(d->Find("C")->category, "heavy");
  EXPECT_EQ(d->max_jobs.at("heavy"), 2);
  EXPECT_TRUE(d->Find("D")->done);
  EXPECT_EQ(d->Find("D")->priority, -5);
  EXPECT_EQ(d->Find("A")->where.ToString(), "a.dag:2");
}

TEST(DagParse, CommandsMayNameNodesDefinedLater) {
  Files f;
  f.Add("a.dag", "parent X child Y\nretry Y 2\njob X x.sub\njob Y y.sub\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(Names(*d, d->Find("X")->children), "Y");
  EXPECT_EQ(d->Find("Y")->retries, 2);
}

TEST(DagParse, VarsKeepDagmansEscapes) {
  Files f;
  f.Add("a.dag",
        "JOB A a.sub\nVARS A a=\"Greg\\\"\\\"_LeMond\" b=\"\\\\Laurent\" c=\"x\\.y\"\n"
        "VARS A d=\"Andreas\\\\\\\"_Kloden\" e=\"!@#$%^&*()_-=+=[]{}?\"\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  const auto& v = d->Find("A")->vars;
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].value, "Greg\"\"_LeMond");
  EXPECT_EQ(v[1].value, "\\Laurent");
  EXPECT_EQ(v[2].value, "x\\.y");
  EXPECT_EQ(v[3].value, "Andreas\\\"_Kloden");
  EXPECT_EQ(v[4].value, "!@#$%^&*()_-=+=[]{}?");
}

TEST(DagParse, AllNodesAppliesToEveryNodeOfItsFile) {
  Files f;
  f.Add("a.dag",
        "JOB A a.sub\nJOB B b.sub\nRETRY ALL_NODES 2\nSCRIPT POST ALL_NODES p.sh $JOB\n"
        "SPLICE S s.dag\n");
  f.Add("s.dag", "JOB X x.sub\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->Find("A")->retries, 2);
  EXPECT_EQ(d->Find("B")->post->command, "p.sh $JOB");
  EXPECT_EQ(d->Find("S+X")->retries, 0);  // not the splice's nodes
}

TEST(DagParse, SplicesAreNamedAndJoinedAtTheirEnds) {
  Files f;
  f.Add("a.dag",
        "JOB A a.sub\nSPLICE S s.dag DIR sdir\nJOB Z z.sub\n"
        "PARENT A CHILD S\nPARENT S CHILD Z\nCATEGORY A +big\nMAXJOBS big 4\n");
  f.Add("sdir/s.dag",
        "JOB P p.sub\nJOB Q q.sub DIR q\nJOB R r.sub\nPARENT P CHILD Q\n"
        "SPLICE T t.dag\nCATEGORY P local\nCATEGORY Q +big\nMAXJOBS local 1\n");
  f.Add("sdir/t.dag", "JOB U u.sub\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(Names(*d, d->Find("A")->children), "S+P S+R S+T+U");
  EXPECT_EQ(Names(*d, d->Find("Z")->parents), "S+Q S+R S+T+U");
  EXPECT_EQ(d->Find("S+Q")->dir, "sdir/q");
  EXPECT_EQ(d->Find("S+T+U")->dir, "sdir");
  EXPECT_EQ(d->Find("S+P")->category, "S+local");
  EXPECT_EQ(d->Find("S+Q")->category, "big");
  EXPECT_EQ(d->Find("A")->category, "big");
  EXPECT_EQ(d->max_jobs.at("S+local"), 1);
  EXPECT_EQ(d->max_jobs.at("big"), 4);
}

TEST(DagParse, ConnectJoinsPinsOfTwoSplices) {
  Files f;
  f.Add("a.dag", "SPLICE A s.dag\nSPLICE B s.dag\nINCLUDE c.dag\n");
  f.Add("c.dag", "CONNECT A B\n");
  f.Add("s.dag", "JOB X x.sub\nJOB Y y.sub\nPIN_IN X 1\nPIN_IN Y 2\nPIN_OUT Y 1\nPIN_OUT X 2\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(Names(*d, d->Find("A+Y")->children), "B+X");
  EXPECT_EQ(Names(*d, d->Find("A+X")->children), "B+Y");
  f.Add("s.dag", "JOB X x.sub\nPIN_IN X 1\nPIN_OUT X 2\n");
  EXPECT_NE(ErrorOf(f).find("c.dag:1: CONNECT A B"), std::string::npos) << ErrorOf(f);
  EXPECT_NE(ErrorOf(f).find("must match"), std::string::npos) << ErrorOf(f);
}

TEST(DagParse, FinalSubdagSubmitDescriptionsAndGlobals) {
  Files f;
  f.Add("a.dag",
        "SUBMIT-DESCRIPTION D {\n  executable = /bin/true\n}\n"
        "SUBMIT-DESCRIPTION E @=END\n  executable = /bin/false\n@END\n"
        "JOB A D\nSUBDAG EXTERNAL S inner.dag DIR in\nFINAL F f.sub\n"
        "CONFIG dag.config\nDOT a.dot UPDATE DONT-OVERWRITE\nNODE_STATUS_FILE a.status 5 "
        "ALWAYS-UPDATE\nJOBSTATE_LOG a.jobstate.log\nSET_JOB_ATTR TestNumber = 17\n"
        "ENV GET PATH HOME\nENV SET A=1;B=two\nSAVE_POINT_FILE A\n"
        "JOB L \\\n  l.sub \\\n  NOOP\n");
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->descriptions.at("D"), "  executable = /bin/true\n");
  EXPECT_EQ(d->descriptions.at("E"), "  executable = /bin/false\n");
  EXPECT_EQ(d->Find("S")->kind, NodeKind::kSubdag);
  EXPECT_EQ(d->Find("S")->dir, "in");
  ASSERT_TRUE(d->final_node);
  EXPECT_EQ(d->nodes[*d->final_node].name, "F");
  EXPECT_EQ(d->config_files, std::vector<std::string>{"dag.config"});
  ASSERT_TRUE(d->dot);
  EXPECT_TRUE(d->dot->update);
  EXPECT_FALSE(d->dot->overwrite);
  EXPECT_EQ(d->node_status_file, "a.status");
  EXPECT_EQ(d->node_status_interval, 5);
  EXPECT_TRUE(d->node_status_always);
  EXPECT_EQ(d->jobstate_log, "a.jobstate.log");
  ASSERT_EQ(d->job_attrs.size(), 1u);
  EXPECT_EQ(d->job_attrs[0].second, "17");
  EXPECT_EQ(d->env_set.size(), 2u);
  EXPECT_EQ(d->Find("A")->save_point_file, "A.save");
  EXPECT_TRUE(d->Find("L")->noop);
  EXPECT_EQ(d->Find("L")->submit, "l.sub");
  EXPECT_EQ(d->Find("L")->where.line, 18);
}

TEST(DagParse, ACycleIsRefusedNamingIt) {
  Files f;
  f.Add("a.dag",
        "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT A CHILD B\nPARENT B CHILD C\n"
        "PARENT C CHILD B\n");
  EXPECT_NE(ErrorOf(f).find("cycle: B -> C -> B"), std::string::npos) << ErrorOf(f);
  f.Add("a.dag", "JOB A a.sub\nPARENT A CHILD A\n");
  EXPECT_NE(ErrorOf(f).find("cycle: A -> A"), std::string::npos) << ErrorOf(f);
}

TEST(DagParse, ALongChainNeedsNoDeepRecursion) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "JOB N" + std::to_string(i) + " n.sub\n";
  for (int i = 1; i < 100000; ++i)
    text += "PARENT N" + std::to_string(i - 1) + " CHILD N" + std::to_string(i) + "\n";
  Files f;
  f.Add("a.dag", text);
  auto d = f.Parse();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->nodes.size(), 100000u);
}

TEST(DagParse, MalformedLinesAreRefusedWithFileAndLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"JOB A a.sub\nPARENT A CHILD B\n", "a.dag:2: unknown node B"},
      {"JOB A a.sub\nJOB A b.sub\n", "a.dag:2: node A is defined twice"},
      {"JOB A+B a.sub\n", "a.dag:1: node name A+B: '+' is not allowed"},
      {"JOB IllegalNodeName++ a.sub\n", "'+' is not allowed"},
      {"JOB ALL_NODES a.sub\n", "reserved word"},
      {"JOB A\n", "a.dag:1: node A: its submit file"},
      {"JOB A a.sub BOGUS\n", "a.dag:1: unexpected 'BOGUS'"},
      {"JOB A a.sub\nRETRY A -1\n", "a.dag:2: RETRY needs a number"},
      {"JOB A a.sub\nRETRY A many\n", "a.dag:2: RETRY needs a number"},
      {"JOB A a.sub\nRETRY A 2 UNLESS-EXIT\n", "a.dag:2: UNLESS-EXIT needs"},
      {"JOB A a.sub\nRETRY A 99999999999\n", "a.dag:2: RETRY needs"},
      {"JOB A a.sub\nABORT-DAG-ON A 1 RETURN 300\n", "a.dag:2: RETURN needs"},
      {"JOB A a.sub\nVARS A x=1\n", "must be in \"quotes\""},
      {"JOB A a.sub\nVARS A x=\"1\n", "no closing quote"},
      {"JOB A a.sub\nVARS A queue_x=\"1\"\n", "may not begin with \"queue\""},
      {"JOB A a.sub\nVARS A\n", "no name=\"value\" pairs"},
      {"JOB A a.sub\nSCRIPT PRE A\n", "a.dag:2: SCRIPT: no executable"},
      {"JOB A a.sub\nSCRIPT MIDDLE A x\n", "PRE, POST or HOLD expected"},
      {"JOB A a.sub\nSCRIPT DEFER x 1 PRE A x\n", "DEFER needs"},
      {"JOB A a.sub\nPARENT A\n", "PARENT needs"},
      {"JOB A a.sub\nPARENT CHILD A\n", "PARENT needs"},
      {"JOB A a.sub\nFROBNICATE A\n", "a.dag:2: unknown command 'FROBNICATE'"},
      {"FINAL F f.sub\nFINAL G g.sub\n", "a.dag:2: a second FINAL node"},
      {"FINAL F f.sub\nJOB A a.sub\nPARENT A CHILD F\n", "cannot be a parent or a child"},
      {"SUBDAG S s.dag\n", "SUBDAG must be followed by EXTERNAL"},
      {"SUBMIT-DESCRIPTION D {\nexecutable = x\n", "has no closing } line"},
      {"JOB A a.sub\nREJECT\n", "a.dag:2: REJECT"},
      {"INCLUDE a.dag\n", "a.dag:1: a.dag is read inside itself"},
      {"INCLUDE missing.dag\n", "a.dag:1: cannot read missing.dag"},
      {"SPLICE S missing.dag\n", "a.dag:1: cannot read missing.dag"},
      {"SPLICE S a.dag\n", "a.dag:1: a.dag is read inside itself"},
      {"JOB A a.sub\nMAXJOBS c -2\n", "MAXJOBS needs"},
      {"JOB A a.sub\nPRE_SKIP A 0\n", "PRE_SKIP needs"},
      {"JOB A a.sub\nTOLERANCE A 10%\n", "TOLERANCE is not supported"},
      {"SET_JOB_ATTR = 3\n", "SET_JOB_ATTR needs"},
      {"JOB A a.sub\nCONNECT A B\n", "CONNECT needs two splices"},
  };
  for (const auto& c : cases) {
    Files f;
    f.Add("a.dag", c.text);
    std::string error = ErrorOf(f);
    EXPECT_NE(error.find(c.error), std::string::npos) << c.text << "\n  gave: " << error;
  }
}

TEST(DagParse, AVeryLongLineOrANulByteIsRefused) {
  Files f;
  f.Add("a.dag", std::string("JOB A a.sub\nJOB B\0 b.sub\n", 24));
  EXPECT_NE(ErrorOf(f).find("a.dag:2: a NUL byte"), std::string::npos) << ErrorOf(f);
  f.Add("a.dag", "JOB A a.sub\nVARS A x=\"" + std::string(1 << 20, 'x') + "\"\n");
  EXPECT_NE(ErrorOf(f).find("a.dag:2: line of 1048587 bytes; at most 65536"), std::string::npos)
      << ErrorOf(f).substr(0, 200);
}

TEST(DagParse, SplicesThatMultiplyAreStopped) {
  Files f;
  f.Add("a.dag", "SPLICE S b0.dag\n");
  for (int i = 0; i < 20; ++i)
    f.Add("b" + std::to_string(i) + ".dag", "SPLICE X b" + std::to_string(i + 1) +
                                                ".dag\nSPLICE Y b" + std::to_string(i + 1) +
                                                ".dag\n");
  f.Add("b20.dag", "JOB N n.sub\n");  // 2^20 of them, were they all read
  EXPECT_NE(ErrorOf(f).find("more than 10000 DAG files read"), std::string::npos) << ErrorOf(f);
  Files deep;
  deep.Add("a.dag", "SPLICE S b0.dag\n");
  for (int i = 0; i < 40; ++i)
    deep.Add("b" + std::to_string(i) + ".dag", "SPLICE X b" + std::to_string(i + 1) + ".dag\n");
  EXPECT_NE(ErrorOf(deep).find("nest more than 32 levels"), std::string::npos) << ErrorOf(deep);
}

TEST(DagParse, MissingSubmitFilesAreRefusedWhenAskedToCheck) {
  Files f;
  f.Add("a.dag",
        "SUBMIT-DESCRIPTION D {\n}\nJOB A a.sub DIR d\nJOB B D\nJOB C gone.sub NOOP\n"
        "JOB E gone.sub\n");
  ParseOptions o = f.Options();
  o.exists = [](const std::string& path) { return path == "d/a.sub"; };
  auto d = ParseDag({"a.dag"}, o);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message(), "a.dag:6: node E: submit file gone.sub does not exist");
}

TEST(DagParse, SeveralFilesAreOneDag) {
  Files f;
  f.Add("a.dag", "JOB A a.sub\n").Add("b.dag", "JOB B b.sub\nPARENT A CHILD B\n");
  auto d = ParseDag({"a.dag", "b.dag"}, f.Options());
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(Names(*d, d->Find("A")->children), "B");
}

// -usedagdir: what each file names is relative to that file's own directory; without it, to where
// the DAG runs.
TEST(DagParse, UseDagDirReadsEachFilesNamesFromItsOwnDirectory) {
  Files f;
  f.Add("sub/a.dag", "JOB A a.sub\nJOB B b.sub DIR work\nINCLUDE more.dag\n")
      .Add("sub/more.dag", "JOB C c.sub\n")
      .Add("other/x.dag", "JOB X x.sub\n");
  ParseOptions o = f.Options();
  o.use_dag_dir = true;
  auto d = ParseDag({"sub/a.dag", "other/x.dag"}, o);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->Find("A")->dir, "sub");
  EXPECT_EQ(d->Find("B")->dir, "sub/work");
  EXPECT_EQ(d->Find("C")->dir, "sub");
  EXPECT_EQ(d->Find("X")->dir, "other");
  EXPECT_EQ(d->Find("A")->submit, "a.sub");
  auto plain = ParseDag({"sub/a.dag"}, f.Options());
  ASSERT_FALSE(plain) << "without it, INCLUDE more.dag is read where the DAG runs";
  EXPECT_NE(plain.error().message().find("cannot read more.dag"), std::string::npos)
      << plain.error().message();
}

}  // namespace
}  // namespace kite::dag
