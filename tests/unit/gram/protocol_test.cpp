// Protocol messages: what a site accepts, what it refuses and why, and round trips.
#include "gram/protocol.h"

#include <gtest/gtest.h>

namespace kite::gram {
namespace {

constexpr char kGood[] = R"({"request_id":"r1","job":{"executable":{"site":"/bin/echo"},
  "arguments":["a","b c"],"environment":{"X":"1"},"stdout":{"gass":"out.txt"},
  "gass_url":"https://h:1/jobs/7","stream_output":true,"delegation_id":"d",
  "callback_url":"https://h:2/cb","stage_in":[{"gass":"in.dat"}],
  "stage_out":[{"gass":"output/sub/r.dat","as":"sub/r.dat"}]}})";

TEST(Protocol, ParsesACompleteSubmit) {
  auto r = ParseSubmitRequest(kGood);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->request_id, "r1");
  EXPECT_EQ(r->job.executable.site, "/bin/echo");
  EXPECT_EQ(r->job.arguments, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(r->job.environment.at(0).first, "X");
  EXPECT_EQ(r->job.stdout_file.gass, "out.txt");
  EXPECT_TRUE(r->job.stream_output);
  ASSERT_EQ(r->job.stage_in.size(), 1u);
  EXPECT_EQ(r->job.stage_in[0].as, "in.dat");  // defaults to the GASS name
  EXPECT_EQ(r->job.stage_out, (std::vector<StageFile>{{"output/sub/r.dat", "sub/r.dat"}}));
}

TEST(Protocol, SubmitRoundTrips) {
  auto r = ParseSubmitRequest(kGood);
  ASSERT_TRUE(r);
  auto again = ParseSubmitRequest(ToJson(*r));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->job, r->job);
}

struct BadCase {
  const char* json;
  const char* says;  // what the error message must mention
};

TEST(Protocol, RefusesMalformedSubmitsNamingTheProblem) {
  const BadCase cases[] = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"job":{"executable":{"site":"/bin/true"}}})", "request_id: missing"},
      {R"({"request_id":"a b","job":{"executable":{"site":"/bin/true"}}})", "request_id"},
      {R"({"request_id":"r"})", "job: missing"},
      {R"({"request_id":"r","job":{}})", "executable: missing"},
      {R"({"request_id":"r","job":{"executable":{"site":"bin/true"}}})", "not absolute"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x","gass":"y"}}})", "both"},
      {R"({"request_id":"r","job":{"executable":"/bin/true"}})", "executable"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"arguments":"a b"}})",
       "arguments: not a list"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"arguments":[1]}})", "arguments"},
      {R"({"request_id":"r","job":{"executable":{"gass":"../x"},"gass_url":"https://h/j",
        "delegation_id":"d"}})",
       "bad gass name"},
      {R"({"request_id":"r","job":{"executable":{"gass":"x"}}})", "gass_url"},
      {R"({"request_id":"r","job":{"executable":{"gass":"x"},"gass_url":"https://h/j"}})",
       "delegation_id"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"environment":{"A=B":"1"}}})",
       "environment"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"stream_output":"yes"}})",
       "stream_output"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"callback_url":"http://h/"}})",
       "callback_url"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"stage_in":[{"gass":"a",
        "as":"d/e"}]}})",
       "stage_in"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"stage_out":[{"gass":"o",
        "as":"../e"}]}})",
       "stage_out: bad file name"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"stage_out":[{"gass":"o",
        "as":"/etc/passwd"}]}})",
       "stage_out: bad file name"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"stage_out":[{"gass":"o"}]}})",
       "gass_url"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"stage_out":{"gass":"o"}}})",
       "stage_out: not a list"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"resources":4}})",
       "resources: not an object"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"resources":{"cpus":-1}}})",
       "cpus: out of range"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"resources":{"memory_mb":1.5}}})",
       "memory_mb: not an integer"},
      {R"({"request_id":"r","job":{"executable":{"site":"/x"},"resources":{"queue":"a\nb"}}})",
       "queue is not"},
  };
  for (const auto& c : cases) {
    auto r = ParseSubmitRequest(c.json);
    ASSERT_FALSE(r) << c.json;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput) << c.json;
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << c.json << " -> " << r.error().message();
  }
}

TEST(Protocol, ResourceRequestsParseAndRoundTrip) {
  auto r = ParseSubmitRequest(R"({"request_id":"r","job":{"executable":{"site":"/x"},
    "resources":{"cpus":2,"memory_mb":512,"walltime_s":90,"queue":"short","project":"astro-1",
    "gpus":1}}})");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(
      r->job.resources,
      (ResourceRequest{
          .cpus = 2, .memory_mb = 512, .walltime_s = 90, .queue = "short", .project = "astro-1"}));
  auto again = ParseSubmitRequest(ToJson(*r));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->job, r->job);
  // None requested: nothing on the wire, so an older site sees the description it knows.
  auto plain = ParseSubmitRequest(R"({"request_id":"r","job":{"executable":{"site":"/x"}}})");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->job.resources.empty());
  EXPECT_EQ(ToJson(plain->job).find("resources"), std::string::npos);
}

TEST(Protocol, RefusesOversizedBodiesAndFields) {
  std::string big = R"({"request_id":"r","job":{"executable":{"site":"/x"},"arguments":[")" +
                    std::string(kMaxBodyBytes, 'a') + R"("]}})";
  auto r = ParseSubmitRequest(big);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("1 MiB"), std::string::npos);
  std::string long_field = R"({"request_id":"r","job":{"executable":{"site":"/x"},"arguments":[")" +
                           std::string(70000, 'a') + R"("]}})";
  auto f = ParseSubmitRequest(long_field);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message().find("64 KiB"), std::string::npos);
}

TEST(Protocol, DeeplyNestedJsonIsRefusedNotCrashing) {
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseSubmitRequest(deep));
}

TEST(Protocol, JobStatusRoundTripsWithExitAndFailure) {
  JobStatus s;
  s.job_id = "0123456789abcdef";
  s.contact = "https://h:1/jobs/0123456789abcdef";
  s.state = JobState::kFailed;
  s.seq = 7;
  s.failure = FailureCode::kBatchLost;
  s.failure_message = "gone";
  s.exit = ExitInfo{true, 9};
  s.stdout_offset = 12;
  std::string json = ToJson(s);
  EXPECT_NE(json.find("\"retryable\":true"), std::string::npos);
  auto back = ParseJobStatus(json);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, s);
}

TEST(Protocol, FailureCodesSayWhetherAnotherTryMayWork) {
  EXPECT_TRUE(IsRetryable(FailureCode::kBatchLost));
  EXPECT_TRUE(IsRetryable(FailureCode::kStageInFailed));
  EXPECT_TRUE(IsRetryable(FailureCode::kBatchSubmitFailed));
  EXPECT_FALSE(IsRetryable(FailureCode::kBadExecutable));
  EXPECT_FALSE(IsRetryable(FailureCode::kAuthorisation));
  EXPECT_FALSE(IsRetryable(FailureCode::kCancelled));
  EXPECT_FALSE(IsRetryable(FailureCode::kBatchLimitExceeded));
  EXPECT_EQ(FailureCodeName(FailureCode::kBatchLimitExceeded), "batch-limit-exceeded");
  for (auto c : {FailureCode::kCancelled, FailureCode::kBadExecutable, FailureCode::kBatchLost}) {
    EXPECT_EQ(ParseFailureCode(FailureCodeName(c)), c);
  }
}

TEST(Protocol, ErrorsMapToHttpAndBack) {
  EXPECT_EQ(HttpStatusFor(ErrorCode::kAuthFailed), 403u);
  EXPECT_EQ(ErrorCodeForHttp(403), ErrorCode::kAuthFailed);
  EXPECT_EQ(ErrorCodeForHttp(503), ErrorCode::kUnavailable);
  EXPECT_EQ(ErrorCodeForHttp(413), ErrorCode::kInvalidInput);
  auto e = ParseErrorReply(ToJson(ErrorReply{ErrorCode::kNotFound, "no job x"}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ErrorCode::kNotFound);
  EXPECT_EQ(e->message, "no job x");
}

TEST(Protocol, SignalMustSaySomething) {
  EXPECT_FALSE(ParseSignalRequest(R"({"request_id":"r"})"));
  EXPECT_TRUE(ParseSignalRequest(R"({"request_id":"r","gass_url":"https://h:2/jobs/1"})"));
}

TEST(Protocol, ASignalCarriesItsSendersRun) {
  SignalRequest r{.request_id = "r", .gass_url = "https://h:2/jobs/1", .run = 1764000000123};
  auto back = ParseSignalRequest(ToJson(r));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->run, 1764000000123);
  EXPECT_EQ(ParseSignalRequest(R"({"request_id":"r","gass_url":"https://h:2/j"})")->run, 0);
  EXPECT_FALSE(ParseSignalRequest(R"({"request_id":"r","gass_url":"https://h:2/j","run":-1})"));
  EXPECT_FALSE(ParseSignalRequest(R"({"request_id":"r","gass_url":"https://h:2/j","run":"7"})"));
}

TEST(Protocol, NamesThatBecomeFilesAreChecked) {
  EXPECT_TRUE(ValidRelativeName("a/b.txt"));
  for (const char* bad : {"", "/a", "a/../b", "..", ".hidden", "a//b", "a/"}) {
    EXPECT_FALSE(ValidRelativeName(bad)) << bad;
  }
  EXPECT_TRUE(ValidJobId("0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(ValidJobId("../../etc/passwd00"));
}

}  // namespace
}  // namespace kite::gram
