// The half the slurm and sge adapters share: the environment they are given (never the
// process's), batch ids, and the fault points' names.
#include "gram/batch/command_adapter.h"

#include <gtest/gtest.h>

#include <set>

#include "gram/fault.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::gram::batch {
namespace {

using kite::testing::TempDir;

TEST(CommandAdapter, EnvValueFindsExactNamesOnly) {
  std::vector<std::string> env = {"PATHX=1", "PATH=/a:/b", "EMPTY=", "NOEQUALS"};
  EXPECT_EQ(EnvValue(env, "PATH"), "/a:/b");
  EXPECT_EQ(EnvValue(env, "EMPTY"), "");
  EXPECT_EQ(EnvValue(env, "NOEQUALS"), std::nullopt);
  EXPECT_EQ(EnvValue(env, "PAT"), std::nullopt);
}

TEST(CommandAdapter, SplitIdKeepsTheLastHash) {
  using Parts = std::pair<std::string, std::string>;
  EXPECT_EQ(SplitId("/d/x#y/.kite#123"), Parts("/d/x#y/.kite", "123"));
  EXPECT_EQ(SplitId("/d/.kite#"), Parts("/d/.kite", ""));
  EXPECT_EQ(SplitId("/d/.kite"), Parts("/d/.kite", ""));
}

// Each adapter looks its tools up in the PATH of its options, and says what to install.
TEST(CommandAdapter, ToolsAreLookedUpInTheGivenPath) {
  struct Case {
    std::string adapter, tool, client;
  };
  for (const Case& c : {Case{"slurm", "sbatch", "Slurm's client (slurm-client)"},
                        Case{"sge", "qsub", "Grid Engine's client (gridengine-client)"}}) {
    TempDir dir("command-adapter");
    auto adapter = MakeAdapter(c.adapter, {.environment = {"PATH=" + dir.path()}});
    ASSERT_TRUE(adapter) << c.adapter;
    JobSpec spec{
        .name = "j1", .control_dir = dir.path(), .cwd = dir.path(), .program = "/bin/true"};
    auto id = (*adapter)->Submit(spec);
    ASSERT_FALSE(id) << c.adapter;
    EXPECT_EQ(id.error().code(), ErrorCode::kNotFound);
    EXPECT_EQ(id.error().message(), c.tool + " is not in the job manager's PATH (" + dir.path() +
                                        "): is " + c.client + " installed?");
  }
}

TEST(Faults, EveryPointHasItsOwnName) {
  std::set<std::string_view> names;
  for (Fault f : {Fault::kGatekeeperDropBeforeForward, Fault::kJobManagerDropAfterStoreSubmit,
                  Fault::kJobManagerDropAfterStoreCommit, Fault::kSlurmCrashAfterSbatch,
                  Fault::kSgeCrashAfterQsub}) {
    EXPECT_NE(FaultName(f), "unknown-fault");
    EXPECT_TRUE(names.insert(FaultName(f)).second) << FaultName(f);
  }
  EXPECT_EQ(FaultName(Fault::kSlurmCrashAfterSbatch), "slurm-crash-after-sbatch");
}

}  // namespace
}  // namespace kite::gram::batch
