// Queue statements, macro expansion and the common / per-proc split of a cluster.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "submit/submit_file.h"
#include "submit_test_util.h"

namespace kite::submit {
namespace {

using QueueTest = SubmitTest;
using Strings = std::vector<std::string>;

// The arguments of every proc, joined by one blank.
Strings ArgsOfProcs(const ParsedCluster& c) {
  Strings out;
  for (size_t i = 0; i < c.procs.size(); ++i) {
    std::string joined;
    for (const auto& a : SubmitTest::JobArgs(c, i)) joined += (joined.empty() ? "" : " ") + a;
    out.push_back(joined);
  }
  return out;
}

struct QueueCase {
  const char* arguments;  // value of `arguments =`
  const char* queue;      // the queue statement (may span lines)
  Strings want;           // Arguments of each proc
};

const QueueCase kQueueCases[] = {
    {"x", "queue", {"x"}},
    {"$(Process)", "queue 3", {"0", "1", "2"}},
    {"$(ProcId)-$(Step)-$(ItemIndex)", "Queue 2", {"0-0-0", "1-1-0"}},
    {"$(X)", "queue X in (a, b, c)", {"a", "b", "c"}},
    {"$(Item)", "queue in (a b  c)", {"a", "b", "c"}},
    {"$(x)", "queue X in a, b", {"a", "b"}},
    {"$(X)", "queue X in (\n  a, b\n  # skipped\n\n  c\n)", {"a", "b", "c"}},
    {"$(X)", "queue X in (first\n  second\n)", {"first", "second"}},
    {"$(X)-$(Step)-$(Process)", "queue 2 X in (a, b)", {"a-0-0", "a-1-1", "b-0-2", "b-1-3"}},
    {"$(X)", "queue X from items.txt", {"x1", "x2"}},
    {"$(X)/$(Y)", "queue X,Y from pairs.txt", {"1/a b", "2/c", "3/"}},
    {"$(X)/$(Y)", "queue X Y from (\n  1 one\n  # comment\n  2,two\n)", {"1/one", "2/two"}},
    {"$(X)", "queue X matching *.dat", {"a.dat", "b.dat"}},
    {"$(X)",
     "queue X matching files *",
     {"a.dat", "b.dat", "data.txt", "items.txt", "pairs.txt", "prog"}},
    {"$(X)", "queue X matching dirs *", {"subdir"}},
    {"$(X)", "queue X matching (*.dat\n subdir\n)", {"a.dat", "b.dat", "subdir"}},
    {"$(X)", "queue X matching nothing*.here", {}},
    {"$(X):$(ItemIndex):$(Row)", "queue X in [1:] (a, b, c)", {"b:1:1", "c:2:2"}},
    {"$(X)", "queue X in [::2] (a, b, c, d)", {"a", "c"}},
    {"$(X)", "queue X in [-1:] (a, b, c)", {"c"}},
    {"$(X)", "queue X from [1:2] items.txt", {"x2"}},
    {"$(X)", "queue X in ()", {}},
    {"x", "queue 0", {}},
    {"15 2000", "queue arguments from (\n  30 2000\n  45 6000\n)", {"30 2000", "45 6000"}},
};

TEST_F(QueueTest, EveryQueueForm) {
  Write("items.txt", "x1\n\n  x2  \n");
  Write("pairs.txt", "1 a b\n2, c\n3\n");
  Write("a.dat", "");
  Write("b.dat", "");
  for (const auto& tc : kQueueCases) {
    SCOPED_TRACE(tc.queue);
    auto c = MustParse(std::string("executable = prog\narguments = ") + tc.arguments + "\n" +
                       tc.queue + "\n");
    EXPECT_EQ(ArgsOfProcs(c), tc.want);
    for (size_t i = 0; i < c.procs.size(); ++i) {
      ASSERT_FALSE(c.procs[i].empty());
      EXPECT_EQ(c.procs[i][0], (Attr{"ProcId", std::to_string(i)}));
    }
  }
}

TEST_F(QueueTest, QueueCountMayBeAMacro) {
  auto c = MustParse("executable = prog\nN = 4\nqueue $(N)\n");
  EXPECT_EQ(c.procs.size(), 4u);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
}

TEST_F(QueueTest, EmptyQueueWarns) {
  auto c = MustParse("executable = prog\nqueue 0\n");
  EXPECT_TRUE(c.procs.empty());
  EXPECT_EQ(c.warnings, Strings{"job.sub:2: warning: queue statement queues no jobs"});
}

TEST_F(QueueTest, SeveralQueueStatementsUseTheCommandsAsTheyStand) {
  auto c = MustParse(
      "executable = prog\n"
      "output = a.out\n"
      "queue 2\n"
      "output = b.out\n"
      "requirements = Memory > 1\n"
      "queue X in (p, q)\n");
  ASSERT_EQ(c.procs.size(), 4u);
  EXPECT_EQ(Get(c, "Out", 0), "\"a.out\"");
  EXPECT_EQ(Get(c, "Out", 1), "\"a.out\"");
  EXPECT_EQ(Get(c, "Out", 2), "\"b.out\"");
  EXPECT_EQ(Get(c, "Requirements", 0).find("(Memory > 1)"), std::string::npos);
  EXPECT_EQ(Get(c, "Requirements", 3).find("(Memory > 1) && "), 0u);
  EXPECT_EQ(Get(c, "ProcId", 3), "3");
  EXPECT_TRUE(InCommon(c, "Cmd"));
  EXPECT_FALSE(InCommon(c, "Out"));
  EXPECT_FALSE(InCommon(c, "Requirements"));
}

struct MacroCase {
  const char* defs;       // lines before `arguments`
  const char* arguments;  // value of `arguments =`
  const char* after;      // lines after `arguments`, before `queue`
  const char* want;       // Arguments, unquoted
};

const MacroCase kMacroCases[] = {
    {"A = hello", "$(A)", "", "hello"},
    {"a = lower", "$(A)", "", "lower"},
    {"", "$(A)", "A = late binding", "late binding"},
    {"", "$(NOPE:fallback value)", "", "fallback value"},
    {"B = y", "$(A:$(B))", "", "y"},
    {"A = $(B)x\nB = y", "$(A)", "", "yx"},
    {"foo = bar\nfoo = snap $(foo)", "$(foo)", "", "snap bar"},
    {"foo = bar\nfoo = $(foo) snap", "$(foo)", "", "bar snap"},
    {"", "$(Cluster).$(Process)", "", "42.0"},
    {"", "$(ClusterId)-$(ProcId)-$(Step)-$(ItemIndex)-$(Row)", "", "42-0-0-0-0"},
    {"", "$(DOLLAR)(x)", "", "$(x)"},
    {"", "cost $5 $$(OpSys) $$([TARGET.Memory * 0.9])", "",
     "cost $5 $$(OpSys) $$([TARGET.Memory * 0.9])"},
    {"", "$(executable)", "", "prog"},
    {"", "$ENV(KITE_SUBMIT_MACRO_TEST)", "", "env value"},
    {"", "$ENV(KITE_SUBMIT_UNSET_VAR:dflt)", "", "dflt"},
    {"Step = mine", "$(Step)", "", "mine"},  // a definition wins over Step (not over Process)
    {"Process = mine", "$(Process)", "", "0"},
};

TEST_F(QueueTest, MacroExpansion) {
  ::setenv("KITE_SUBMIT_MACRO_TEST", "env value", 1);
  for (const auto& tc : kMacroCases) {
    SCOPED_TRACE(tc.arguments);
    auto c = MustParse(std::string("executable = prog\n") + tc.defs +
                       "\narguments = " + tc.arguments + "\n" + tc.after + "\nqueue\n");
    EXPECT_EQ(ArgsOfProcs(c), Strings{tc.want});
  }
  ::unsetenv("KITE_SUBMIT_MACRO_TEST");
}

TEST_F(QueueTest, MacrosExpandInEveryCommand) {
  auto c = MustParse(
      "base = run\n"
      "executable = prog\n"
      "output = $(base).$(Cluster).$(Process).out\n"
      "+Tag = \"$(base)-$(Process)\"\n"
      "queue 2\n");
  EXPECT_EQ(Get(c, "Out", 1), "\"run.42.1.out\"");
  EXPECT_EQ(Get(c, "Tag", 1), "\"run-1\"");
}

TEST_F(QueueTest, LargeClusterIsAllCommon) {
  auto c = MustParse(
      "executable = prog\narguments = -v\noutput = out.txt\nrequest_memory = 1GB\nqueue 10000\n");
  ASSERT_EQ(c.procs.size(), 10000u);
  for (size_t i = 0; i < c.procs.size(); ++i) {
    ASSERT_EQ(c.procs[i], (std::vector<Attr>{{"ProcId", std::to_string(i)}}));
  }
  EXPECT_EQ(*FindAttr(c.common, "Args"), "\"-v\"");
  EXPECT_EQ(*FindAttr(c.common, "RequestMemory"), "1024");
  EXPECT_EQ(FindAttr(c.common, "ProcId"), nullptr);
}

TEST_F(QueueTest, PerProcValuesAreOverrides) {
  auto c = MustParse(
      "executable = prog\narguments = $(Process)\nout_base = o\nidx = $(Process)\n"
      "output = $(out_base).$(idx)\nqueue 3\n");
  ASSERT_EQ(c.procs.size(), 3u);
  EXPECT_TRUE(InCommon(c, "Cmd"));
  EXPECT_FALSE(InCommon(c, "Args"));
  EXPECT_FALSE(InCommon(c, "Out"));
  EXPECT_EQ(c.procs[2],
            (std::vector<Attr>{{"ProcId", "2"}, {"Args", "\"2\""}, {"Out", "\"o.2\""}}));
}

TEST_F(QueueTest, ProcIdIsPerProcEvenForOneProc) {
  auto c = MustParse("executable = prog\nqueue\n");
  EXPECT_FALSE(InCommon(c, "ProcId"));
  EXPECT_EQ(c.procs[0], (std::vector<Attr>{{"ProcId", "0"}}));
}

TEST_F(QueueTest, EqualPerProcValuesBecomeCommon) {
  auto c = MustParse("executable = prog\narguments = $(X)\nqueue X in (same, same)\n");
  EXPECT_TRUE(InCommon(c, "Args"));
  EXPECT_EQ(c.procs[1], (std::vector<Attr>{{"ProcId", "1"}}));
}

TEST_F(QueueTest, MaxProcsGuardsMemory) {
  options_.max_procs = 100;
  EXPECT_EQ(ErrorOf("executable = prog\nqueue 60\nqueue 41\n"),
            "job.sub:3: this queue statement would make the cluster larger than 100 jobs");
  EXPECT_TRUE(Parse("executable = prog\nqueue 60\nqueue 40\n"));
}

}  // namespace
}  // namespace kite::submit
