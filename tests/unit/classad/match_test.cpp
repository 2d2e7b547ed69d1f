// Symmetric matchmaking and Rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "classad/match.h"
#include "test_util.h"

namespace kite::classad {
namespace {

using testing::Ad;

TEST(ClassAdMatch, SymmetricRequirements) {
  ClassAd job =
      Ad("FileSystemDomain = \"cs.wisc.edu\"\nRequestMemory = 2048\n"
         "Requirements = TARGET.Arch == \"X86_64\" && TARGET.OpSys == \"LINUX\" && "
         "TARGET.Memory >= MY.RequestMemory && (TARGET.HasFileTransfer =?= true || "
         "TARGET.FileSystemDomain == MY.FileSystemDomain)\n"
         "Rank = TARGET.Memory\nOwner = \"alice\"\n");
  ClassAd good =
      Ad("Arch = \"x86_64\"\nOpSys = \"LINUX\"\nMemory = 4096\n"
         "HasFileTransfer = true\nRequirements = TARGET.Owner == \"alice\"\n");
  ClassAd picky =
      Ad("Arch = \"X86_64\"\nOpSys = \"LINUX\"\nMemory = 4096\n"
         "HasFileTransfer = true\nRequirements = TARGET.Owner == \"bob\"\n");
  ClassAd small =
      Ad("Arch = \"X86_64\"\nOpSys = \"LINUX\"\nMemory = 1024\n"
         "FileSystemDomain = \"CS.WISC.EDU\"\nRequirements = true\n");
  ClassAd shared_fs =
      Ad("Arch = \"X86_64\"\nOpSys = \"LINUX\"\nMemory = 8192\n"
         "FileSystemDomain = \"CS.WISC.EDU\"\nRequirements = true\n");
  ClassAd no_reqs =
      Ad("Arch = \"X86_64\"\nOpSys = \"LINUX\"\nMemory = 8192\n"
         "HasFileTransfer = true\n");
  EXPECT_TRUE(Match(job, good));
  EXPECT_TRUE(Match(good, job));
  EXPECT_FALSE(Match(job, picky));  // the machine refuses the job
  EXPECT_TRUE(RequirementsMet(job, picky));
  EXPECT_FALSE(Match(job, small));     // the job refuses the machine
  EXPECT_TRUE(Match(job, shared_fs));  // UNDEFINED =?= true is false; the domain matches
  EXPECT_FALSE(Match(job, no_reqs));   // a missing Requirements never matches
  EXPECT_DOUBLE_EQ(Rank(job, good), 4096);
  EXPECT_DOUBLE_EQ(Rank(job, shared_fs), 8192);
  EXPECT_DOUBLE_EQ(Rank(good, job), 0);  // no Rank: 0

  std::vector<const ClassAd*> machines = {&good, &picky, &small, &shared_fs};
  std::vector<const ClassAd*> matches;
  for (const ClassAd* m : machines) {
    if (Match(job, *m)) matches.push_back(m);
  }
  std::sort(matches.begin(), matches.end(),
            [&](const ClassAd* a, const ClassAd* b) { return Rank(job, *a) > Rank(job, *b); });
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[0], &shared_fs);
  EXPECT_EQ(matches[1], &good);
}

// HTCondor's $$() references, filled in at the match from the machine (and, in [expr], the job).
TEST(ClassAdMatch, MatchReferencesAreFilledInFromTheMachineAndTheJob) {
  ClassAd job = Ad("DAGNodeRetry = 2\nDAGParentNodeNames = \"A,B\"\nRequestCpus = 3\n");
  ClassAd machine = Ad("Name = \"slot1@ce\"\nMemory = 4096\nArch = \"X86_64\"\n");
  const std::pair<const char*, const char*> cases[] = {
      {"plain text", "plain text"},
      {"$$(Name)", "slot1@ce"},
      {"-m $$(Memory) on $$(Arch)", "-m 4096 on X86_64"},
      {"$$(Disk:100)", "100"},
      {"$$([DAGNodeRetry]) $$([DAGParentNodeNames])", "2 A,B"},
      {"$$([TARGET.Memory / 2 + MY.RequestCpus])", "2051"},
      {"$$([strcat(\"x\", Name)])", "xslot1@ce"},
  };
  for (auto [text, want] : cases) {
    auto got = ExpandMatchReferences(text, job, machine);
    ASSERT_TRUE(got) << text << ": " << got.error().message();
    EXPECT_EQ(*got, want) << text;
  }
  for (const char* bad : {"$$(Disk)", "$$([NoSuchAttr])", "$$(Name", "$$([1 +])"}) {
    auto got = ExpandMatchReferences(bad, job, machine);
    EXPECT_FALSE(got) << bad;
  }
}

TEST(ClassAdMatch, RankOfNonNumbersIsZero) {
  ClassAd job = Ad("Rank = TARGET.Name\nRequirements = true\n");
  ClassAd m = Ad("Name = \"x\"\nRequirements = true\n");
  EXPECT_DOUBLE_EQ(Rank(job, m), 0);
  ClassAd bool_rank = Ad("Rank = TARGET.Name == \"x\"\n");
  EXPECT_DOUBLE_EQ(Rank(bool_rank, m), 1);
}

}  // namespace
}  // namespace kite::classad
