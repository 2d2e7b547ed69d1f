// What Kite asks an ARC CE and reads back: the xRSL of a job, the CE's JSON replies (one job
// comes as an object, several as a list), its states and the exit code in its diagnostics.
#include "grid/arc_format.h"

#include <gtest/gtest.h>

namespace kite::grid::arc {
namespace {

gram::JobDescription Job() {
  gram::JobDescription d;
  d.executable.gass = "executable";
  d.arguments = {"-n", "say \"hi\""};
  d.environment = {{"MODE", "fast"}};
  d.stdin_file.gass = "stdin";
  d.stdout_file.gass = "stdout";
  d.stderr_file.gass = "stderr";
  d.stage_in = {{"input/in.dat", "in.dat"}};
  d.resources = {.cpus = 2, .memory_mb = 1500, .walltime_s = 61, .queue = "short"};
  return d;
}

JobFiles Files() {
  return {.in = {{"executable", "/home/u/run/analyse.sh"},
                 {"stdin", "/home/u/run/in.txt"},
                 {"input/in.dat", "/data/in.dat"}},
          .out = {{"stdout", "/home/u/run/out.0"}, {"stderr", "/home/u/run/err.0"}}};
}

TEST(ArcDescribeJob, NamesTheJobAndListsWhatTheClientMoves) {
  auto j = DescribeJob(Job(), Files(), "kite-1-2.0-0/submit", "deleg1");
  ASSERT_TRUE(j) << j.error().ToString();
  EXPECT_EQ(j->xrsl,
            "&(jobname=\"kite-1-2.0-0/submit\")(executable=\"analyse.sh\")"
            "(executables=\"analyse.sh\")(arguments=\"-n\" \"say \"\"hi\"\"\")"
            "(environment=(\"MODE\" \"fast\"))(stdin=\"_kite_stdin\")(stdout=\"_kite_stdout\")"
            "(stderr=\"_kite_stderr\")"
            "(inputfiles=(\"in.dat\" \"\")(\"analyse.sh\" \"\")(\"_kite_stdin\" \"\"))"
            "(outputfiles=(\"_kite_stdout\" \"\")(\"_kite_stderr\" \"\"))"
            "(count=\"2\")(memory=\"1500\")(walltime=\"2\")(queue=\"short\")"
            "(delegationid=\"deleg1\")");
  EXPECT_EQ(j->uploads, (std::vector<SessionFile>{{"in.dat", "/data/in.dat"},
                                                  {"analyse.sh", "/home/u/run/analyse.sh"},
                                                  {"_kite_stdin", "/home/u/run/in.txt"}}));
  EXPECT_EQ(j->downloads, (std::vector<SessionFile>{{"_kite_stdout", "/home/u/run/out.0"},
                                                    {"_kite_stderr", "/home/u/run/err.0"}}));
}

TEST(ArcDescribeJob, KeepsAndFetchesTheOutputFilesTheJobNames) {
  gram::JobDescription d;
  d.executable.site = "/bin/sh";
  JobFiles files{
      .results = {{"result.dat", "/home/u/run/result.dat"}, {"sub/t.csv", "/home/u/run/t.csv"}}};
  auto j = DescribeJob(d, files, "n", "");
  ASSERT_TRUE(j) << j.error().ToString();
  EXPECT_EQ(j->xrsl,
            "&(jobname=\"n\")(executable=\"/bin/sh\")"
            "(outputfiles=(\"result.dat\" \"\")(\"sub/t.csv\" \"\"))");
  EXPECT_EQ(j->downloads, (std::vector<SessionFile>{{"result.dat", "/home/u/run/result.dat"},
                                                    {"sub/t.csv", "/home/u/run/t.csv"}}));
  files.results = {{"../escape", "/tmp/x"}};
  EXPECT_FALSE(DescribeJob(d, files, "n", ""));
  files.results = {{"d/", "/home/u/run"}};  // a folder's contents: the CE keeps the folder
  j = DescribeJob(d, files, "n", "");
  ASSERT_TRUE(j) << j.error().ToString();
  EXPECT_NE(j->xrsl.find("(outputfiles=(\"d/\" \"\"))"), std::string::npos) << j->xrsl;
  EXPECT_EQ(j->downloads, (std::vector<SessionFile>{{"d/", "/home/u/run"}}));
}

// A session folder's listing as A-REX 6.17 gives it (Accept: application/xml).
TEST(ArcSessionListing, ReadsFilesAndFoldersAndOnlyPlainNames) {
  auto l = ParseSessionListing(
      "<list><dir>empty</dir><dir>sub</dir><file size=\"2\">a.txt</file>"
      "<file size=\"0\">R&amp;D &lt;1&gt;</file></list>\n");
  ASSERT_TRUE(l) << l.error().ToString();
  EXPECT_EQ(l->files, (std::vector<std::string>{"a.txt", "R&D <1>"}));
  EXPECT_EQ(l->folders, (std::vector<std::string>{"empty", "sub"}));
  for (const char* none : {"<list/>", "<list></list>", "<?xml version=\"1.0\"?>\n<list/>"}) {
    auto e = ParseSessionListing(none);
    ASSERT_TRUE(e) << none;
    EXPECT_TRUE(e->files.empty() && e->folders.empty());
  }
  for (const char* bad :
       {"", "{\"file\":\"a\"}", "<list><file>..</file></list>", "<list><dir>.</dir></list>",
        "<list><file>a/b</file></list>", "<list><file></file></list>",
        "<list><file>&#47;etc</file></list>", "<list><file>a&bogus;</file></list>", "<list><file>a",
        "<list><link>a</link></list>", "<list><filex>a</filex></list>"}) {
    auto e = ParseSessionListing(bad);
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().code(), ErrorCode::kProtocol) << bad;
  }
}

TEST(ArcDescribeJob, RunsAnExecutableOfTheSiteAndLeavesOutWhatIsNotAsked) {
  gram::JobDescription d;
  d.executable.site = "/bin/sh";
  auto j = DescribeJob(d, {}, "n", "");
  ASSERT_TRUE(j) << j.error().ToString();
  EXPECT_EQ(j->xrsl, "&(jobname=\"n\")(executable=\"/bin/sh\")");
  EXPECT_TRUE(j->uploads.empty());
  EXPECT_TRUE(j->downloads.empty());
}

TEST(ArcDescribeJob, RefusesWhatTheSessionDirectoryCannotHold) {
  auto clash = Job();
  clash.stage_in = {{"input/analyse.sh", "analyse.sh"}};
  auto files = Files();
  files.in.push_back({"input/analyse.sh", "/other/analyse.sh"});
  auto r = DescribeJob(clash, files, "n", "");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message().find("'analyse.sh'"), std::string::npos) << r.error().message();

  auto missing = Job();
  missing.stage_in = {{"input/gone", "gone"}};
  EXPECT_FALSE(DescribeJob(missing, Files(), "n", ""));
  gram::JobDescription none;
  EXPECT_FALSE(DescribeJob(none, {}, "n", ""));
}

TEST(ArcReplies, ReadOneJobAsAnObjectAndSeveralAsAList) {
  auto one = ParseJobsReply(
      R"({"job":{"status-code":"201","reason":"Created","id":"abc123","state":"ACCEPTING"}})");
  ASSERT_TRUE(one) << one.error().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].id, "abc123");
  EXPECT_EQ((*one)[0].code, 201);
  EXPECT_EQ((*one)[0].state, "ACCEPTING");

  auto two =
      ParseJobsReply(R"({"job":[{"status-code":"200","reason":"OK","id":"a","state":"Running"},)"
                     R"({"status-code":"404","reason":"Job not found","id":"b"}]})");
  ASSERT_TRUE(two) << two.error().ToString();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].state, "RUNNING");
  EXPECT_EQ((*two)[1].code, 404);
  EXPECT_EQ((*two)[1].reason, "Job not found");

  auto refused =
      ParseJobsReply(R"({"job":{"status-code":"500","reason":"emies:adl parsing error"}})");
  ASSERT_TRUE(refused) << refused.error().ToString();
  EXPECT_EQ((*refused)[0].code, 500);
  EXPECT_EQ((*refused)[0].reason, "emies:adl parsing error");

  auto list = ParseJobList(R"({"job":[{"id":"a"},{"id":"b"}]})");
  ASSERT_TRUE(list);
  EXPECT_EQ(*list, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ParseJobList("{}")->empty());
  EXPECT_TRUE(ParseJobList("")->empty());
  EXPECT_TRUE(ParseJobList(R"({"job":null})")->empty());
}

TEST(ArcReplies, RefuseWhatIsNotTheCesJson) {
  for (const char* bad :
       {"[]", "{\"job\":", "{\"job\":[1]}", "{\"job\":\"x\"}", "{\"job\":[{\"state\":\"X\"}]}",
        "{\"job\":{\"id\":\"a\",\"status-code\":\"2x\"}}", "<html>502</html>"}) {
    auto r = ParseJobsReply(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kProtocol) << bad;
  }
}

TEST(ArcStates, MapToKitesAndUnknownOnesAreSaidToBe) {
  EXPECT_EQ(MapState("ACCEPTING"), gram::JobState::kStageIn);
  EXPECT_EQ(MapState("QUEUING"), gram::JobState::kPending);
  EXPECT_EQ(MapState("Running"), gram::JobState::kActive);
  EXPECT_EQ(MapState("FINISHING"), gram::JobState::kStageOut);
  EXPECT_EQ(MapState("FINISHED"), gram::JobState::kDone);
  EXPECT_EQ(MapState("KILLED"), gram::JobState::kFailed);
  EXPECT_FALSE(MapState("LOST-IN-SPACE"));
  EXPECT_TRUE(AwaitsUploads("PREPARING"));
  EXPECT_FALSE(AwaitsUploads("RUNNING"));
  EXPECT_TRUE(NotStarted("QUEUING"));
  EXPECT_FALSE(NotStarted("RUNNING"));
}

TEST(ArcDiagnostics, GiveTheExitCode) {
  EXPECT_EQ(ParseExitCode("nodename=n1\nexitcode=3\nWallTime=1s\n"), 3);
  EXPECT_EQ(ParseExitCode("exitcode=0"), 0);
  EXPECT_FALSE(ParseExitCode("nodename=n1\n"));
  EXPECT_FALSE(ParseExitCode("exitcode=three\n"));
}

TEST(ArcIds, ComeOnlyFromLocationsAndRepliesThatNameThemPlainly) {
  EXPECT_EQ(*DelegationIdOf("https://ce:443/arex/rest/1.0/delegations/4f2a9c"), "4f2a9c");
  EXPECT_EQ(*DelegationIdOf("/arex/rest/1.0/delegations/4f2a9c/"), "4f2a9c");
  for (const char* bad : {"", "https://ce/arex/rest/1.0/delegations/..", "x/a%2fb", "x/a b"}) {
    EXPECT_FALSE(DelegationIdOf(bad)) << bad;
  }
  EXPECT_TRUE(ValidArcId("Yc8LDmH0XqgnvD4UcpbGoVNmABFKDmABFKDmkuLKDmABFKDmkNdeBm"));
  EXPECT_FALSE(ValidArcId("../x"));
}

}  // namespace
}  // namespace kite::grid::arc
