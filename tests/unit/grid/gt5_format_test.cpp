// What Kite sends a GRAM5 gatekeeper through kite-gt5-helper and reads back: the RSL of a job with
// its files served under names only its site is told, the helper's lines, GRAM's states and
// error codes.
#include "grid/gt5_format.h"

#include <gtest/gtest.h>

#include "grid/gt5_wire.h"

namespace kite::grid::gt5 {
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
          .out = {{"stdout", "/home/u/run/out.0"}, {"stderr", "/home/u/run/err.0"}},
          .results = {{"sub/r.dat", "/home/u/run/r.0.dat"}}};
}

TEST(Gt5DescribeJob, ServesEachFileUnderItsOwnNameAndAsksForTwoPhaseCommit) {
  auto job = DescribeJob(Job(), Files(), "https://desk:4000", "key", "kite-1-2.0-0");
  ASSERT_TRUE(job) << job.error().message();
  const std::string& r = job->rsl;
  auto url = [&](char mode, const std::string& what) {
    return "https://desk:4000/" + ServedName("key", "kite-1-2.0-0", std::string(1, mode) + what);
  };
  EXPECT_NE(r.find("(executable=\"" + url('R', "executable") + "\")"), std::string::npos) << r;
  EXPECT_NE(r.find("(arguments=\"-n\" \"say \"\"hi\"\"\")"), std::string::npos) << r;
  EXPECT_NE(r.find("(environment=(\"MODE\" \"fast\"))"), std::string::npos) << r;
  EXPECT_NE(r.find("(stdin=\"" + url('R', "stdin") + "\")"), std::string::npos) << r;
  EXPECT_NE(r.find("(stdout=\"" + url('W', "stdout") + "\")"), std::string::npos) << r;
  EXPECT_NE(r.find("(file_stage_in=(\"" + url('R', "input/in.dat") + "\" \"in.dat\"))"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("(file_stage_out=(\"sub/r.dat\" \"" + url('W', "out/sub/r.dat") + "\"))"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("(count=2)(max_memory=1500)(max_wall_time=2)(queue=\"short\")"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("(two_phase=600)(save_state=yes)"), std::string::npos) << r;
  EXPECT_NE(r.find("(directory=$(SCRATCH_DIRECTORY))"), std::string::npos) << r;
  // What the helper serves, and how: inputs read-only, outputs write-only.
  ASSERT_EQ(job->served.size(), 6u);
  for (const auto& f : job->served) {
    bool output = f.path.find("/out.") != std::string::npos ||
                  f.path.find("/err.") != std::string::npos ||
                  f.path.find("/r.0.dat") != std::string::npos;
    EXPECT_EQ(f.mode, output ? 'W' : 'R') << f.path;
    EXPECT_EQ(f.name.size(), 32u);
  }
}

TEST(Gt5DescribeJob, NamesDifferByJobAndKeyAndCannotBeMadeWithoutTheKey) {
  EXPECT_NE(ServedName("key", "kite-1-2.0-0", "Rstdin"),
            ServedName("key", "kite-1-2.1-0", "Rstdin"));
  EXPECT_NE(ServedName("key", "kite-1-2.0-0", "Rstdin"),
            ServedName("other", "kite-1-2.0-0", "Rstdin"));
  EXPECT_EQ(ServedName("key", "kite-1-2.0-0", "Rstdin"),
            ServedName("key", "kite-1-2.0-0", "Rstdin"));
}

TEST(Gt5DescribeJob, RefusesWhatCannotBeDescribed) {
  auto d = Job();
  d.stage_in.push_back({"input/in.dat", "../escape"});
  EXPECT_FALSE(DescribeJob(d, Files(), "https://d:1", "k", "b"));
  d = Job();
  d.stage_in.push_back({"input/in.dat", "in.dat"});  // two files of one name
  EXPECT_FALSE(DescribeJob(d, Files(), "https://d:1", "k", "b"));
  d = Job();
  d.executable = {};
  EXPECT_FALSE(DescribeJob(d, Files(), "https://d:1", "k", "b"));
  auto f = Files();
  f.results = {{"/etc/passwd", "/tmp/x"}};
  EXPECT_FALSE(DescribeJob(Job(), f, "https://d:1", "k", "b"));
  f = Files();
  f.in.clear();
  EXPECT_FALSE(DescribeJob(Job(), f, "https://d:1", "k", "b"));
}

TEST(Gt5States, EveryGramStateMapsAndOthersDoNot) {
  EXPECT_EQ(MapState(32), gram::JobState::kPendingCommit);
  EXPECT_EQ(MapState(64), gram::JobState::kStageIn);
  EXPECT_EQ(MapState(1), gram::JobState::kPending);
  EXPECT_EQ(MapState(2), gram::JobState::kActive);
  EXPECT_EQ(MapState(16), gram::JobState::kActive);
  EXPECT_EQ(MapState(128), gram::JobState::kStageOut);
  EXPECT_EQ(MapState(8), gram::JobState::kDone);
  EXPECT_EQ(MapState(4), gram::JobState::kFailed);
  EXPECT_EQ(MapState(0), std::nullopt);
  EXPECT_EQ(MapState(3), std::nullopt);
  EXPECT_EQ(MapFailure(8), gram::FailureCode::kCancelled);
  EXPECT_EQ(MapFailure(5), gram::FailureCode::kBadExecutable);
  // Inputs that could not be fetched: before the job ran, sent again; stdout that could not be
  // opened may be at the end: never.
  EXPECT_TRUE(gram::IsRetryable(MapFailure(43)));
  EXPECT_FALSE(gram::IsRetryable(MapFailure(73)));
  // A job whose output could not be sent back ran: it is held, never run again.
  EXPECT_FALSE(gram::IsRetryable(MapFailure(155)));
  EXPECT_EQ(ErrorOf(79, "x").code(), ErrorCode::kUnavailable);
  // Only a job manager that does not answer is restarted; a dead helper or gatekeeper is not.
  EXPECT_TRUE(JobManagerGone(ErrorOf(79, "connecting to the job manager failed")));
  EXPECT_FALSE(JobManagerGone(ErrorOf(12, "connection failed")));
  EXPECT_FALSE(JobManagerGone(Error(ErrorCode::kUnavailable, "the GRAM5 helper exited")));
  EXPECT_TRUE(IsGramError(ErrorOf(94, "the jobmanager does not accept any new requests"), 94));
  EXPECT_FALSE(IsGramError(ErrorOf(194, "another"), 94));
  EXPECT_EQ(ErrorOf(7, "x").code(), ErrorCode::kAuthFailed);
  EXPECT_EQ(ErrorOf(156, "x").code(), ErrorCode::kNotFound);
}

TEST(Gt5Status, ReadsTheHelpersAnswerAndRefusesMalformedOnes) {
  auto s = ParseStatus({"8", "0", "3", ""});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, 8);
  EXPECT_EQ(s->exit, 3);
  s = ParseStatus({"2", "0", "-"});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->exit, std::nullopt);
  EXPECT_FALSE(ParseStatus({"8", "0"}));
  EXPECT_FALSE(ParseStatus({"eight", "0", "-"}));
  EXPECT_FALSE(ParseStatus({"8", "0", "3x"}));
  EXPECT_FALSE(ParseStatus({"8", "", "-"}));
}

TEST(Gt5Wire, AnyTextSurvivesALine) {
  std::vector<std::string> fields = {"7", "OK", "a\tb", "line\nbreak", "back\\slash", "", "\r"};
  std::string line = JoinLine(fields);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(SplitLine(line), fields);
  EXPECT_EQ(SplitLine("a\\"), std::vector<std::string>{"a"});
  EXPECT_EQ(SplitLine(""), std::vector<std::string>{""});
}

}  // namespace
}  // namespace kite::grid::gt5
