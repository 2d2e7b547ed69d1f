#include "agent/analyze.h"

#include "classad/io.h"

#include <gtest/gtest.h>

#include "common/htcondor_codes.h"

namespace kite::agent {
namespace {

Job MakeJob(int universe, int status) {
  Job j;
  j.key = {7, 2};
  j.universe = universe;
  j.status = status;
  return j;
}

bool Says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Analyze, AnIdleLocalJobNamesEveryReasonItWaits) {
  Job j = MakeJob(kUniverseLocal, kIdle);
  j.not_before = 130;
  AnalyzeFacts f;
  f.max_local_jobs = 4;
  f.local_running = 4;
  f.local_idle_before = 3;
  std::string out = AnalyzeJob(j, f, 100);
  EXPECT_TRUE(Says(out, "Job 7.2: idle.")) << out;
  EXPECT_TRUE(Says(out, "waits 30 s more")) << out;
  EXPECT_TRUE(Says(out, "4 of max_local_jobs = 4")) << out;
  EXPECT_TRUE(Says(out, "3 idle local job(s)")) << out;
  f.local_running = 1;
  f.local_idle_before = 0;
  out = AnalyzeJob(j, f, 200);
  EXPECT_TRUE(Says(out, "Nothing holds it back")) << out;
}

TEST(Analyze, AGridJobShowsItsSiteProxyAndGridmanager) {
  Job j = MakeJob(kUniverseGrid, kIdle);
  j.ad.Assign("GridResource", "kite ce.example.org:9618/slurm");
  j.ad.Assign("x509userproxy", "/tmp/x509up_u1");
  AnalyzeFacts f;
  std::string asked;
  f.site = [&](const std::string& hp) -> std::optional<AnalyzeFacts::Site> {
    asked = hp;
    return AnalyzeFacts::Site{false, 0, "connection refused"};
  };
  f.proxy_problem = [](const std::string&) { return std::string("expired"); };
  f.gridmanager = [](const std::string&) { return std::string("running (pid 9)"); };
  std::string out = AnalyzeJob(j, f, 0);
  EXPECT_EQ(asked, "ce.example.org:9618");
  EXPECT_TRUE(Says(out, "does not answer: connection refused")) << out;
  EXPECT_TRUE(Says(out, "Its proxy /tmp/x509up_u1: expired")) << out;
  EXPECT_TRUE(Says(out, "Its gridmanager: running (pid 9)")) << out;
}

TEST(Analyze, AHeldJobGivesItsReasonAndAVanillaJobWithNoPoolSaysHowToGetOne) {
  Job held = MakeJob(kUniverseLocal, kHeld);
  held.ad.Assign("HoldReason", "via kite hold");
  held.ad.Assign("HoldReasonCode", 1);
  std::string out = AnalyzeJob(held, {}, 0);
  EXPECT_TRUE(Says(out, "held.\n  via kite hold (HoldReasonCode 1)")) << out;
  out = AnalyzeJob(MakeJob(kUniverseVanilla, kIdle), {}, 0);
  EXPECT_TRUE(Says(out, "The pool has no slot")) << out;
  EXPECT_TRUE(Says(out, "kite glidein submit")) << out;
}

TEST(Analyze, ACheckpointNotTakenIsSaidWithItsReasonWhateverTheJobsState) {
  for (int status : {kRunning, kIdle, kCompleted}) {
    Job j = MakeJob(kUniverseVanilla, status);
    EXPECT_FALSE(Says(AnalyzeJob(j, {}, 0), "checkpoint")) << status;
    j.ad.Assign("LastCheckpointRefusal", "the program has a child process");
    j.ad.Assign("LastCheckpointRefusalTime", 86400);
    std::string out = AnalyzeJob(j, {}, 0);
    EXPECT_TRUE(Says(out,
                     "  Its last checkpoint was not taken (1970-01-02 00:00:00 UTC): the "
                     "program has a child process.\n"))
        << out;
  }
}

TEST(Analyze, AnIdleVanillaJobCountsTheSlotsEachClauseAndStartLetThrough) {
  Job j = MakeJob(kUniverseVanilla, kIdle);
  ASSERT_TRUE(j.ad.InsertText("RequestMemory", "2048"));
  ASSERT_TRUE(j.ad.InsertText("Requirements",
                              "TARGET.OpSys == \"LINUX\" && (TARGET.Memory >= RequestMemory)"));
  auto slot = [](const std::string& text) {
    auto ad = classad::ParseNewAd(text);
    EXPECT_TRUE(ad) << text;
    return *ad;
  };
  auto big = slot("[ OpSys = \"LINUX\"; Memory = 4096; Requirements = true ]");
  auto small = slot("[ OpSys = \"LINUX\"; Memory = 1024; Requirements = true ]");
  auto closed = slot("[ OpSys = \"LINUX\"; Memory = 8192; Requirements = false ]");
  AnalyzeFacts f;
  f.slots = {{&big, true}, {&small, false}, {&closed, false}};
  std::string out = AnalyzeJob(j, f, 0);
  EXPECT_TRUE(Says(out, "The pool has 3 slot(s), 2 free.")) << out;
  EXPECT_TRUE(Says(out, "    3 of 3  TARGET.OpSys == \"LINUX\"")) << out;
  EXPECT_TRUE(Says(out, "    2 of 3  (TARGET.Memory >= RequestMemory)")) << out;
  EXPECT_TRUE(Says(out, "START accepts it: 2 of 3")) << out;
  EXPECT_TRUE(Says(out, "match both ways: 1 (0 free)")) << out;
  EXPECT_TRUE(Says(out, "Every matching slot is busy")) << out;
}

}  // namespace
}  // namespace kite::agent
