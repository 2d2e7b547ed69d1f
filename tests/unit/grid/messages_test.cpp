// The agent <-> gridmanager messages: round trips, the wire form docs/api.md shows, and
// malformed input refused with the field's name.
#include "grid/messages.h"

#include <gtest/gtest.h>

#include "classad/io.h"
#include "grid/codes.h"

namespace kite::grid {
namespace {

boost::json::object Obj(const std::string& text) {
  auto o = ParseJsonObject(text);
  EXPECT_TRUE(o) << text;
  return o ? *o : boost::json::object{};
}

GridUpdate FullUpdate() {
  return GridUpdate{
      .id = "12.3",
      .set = {{GridAttr::kJobId, std::string("https://gk:2119/jobs/0123456789abcdef")},
              {GridAttr::kJobStatus, std::string("say \"hi\"\\ \n")},
              {GridAttr::kAttempt, int64_t{2}},
              {GridAttr::kFinal, true},
              {GridAttr::kExitBySignal, false},
              {GridAttr::kFailureCode, AttrValue{}}},
      .action = GridAction::kHold,
      .reason = "Error from grid resource gk:2119: stage-in-failed: x",
      .hold_code = kHoldGridError,
      .hold_subcode = 6,
      .event = LogEvent{kEventGridSubmit, "Job submitted to grid resource\n    GridJobId: x"}};
}

TEST(GridMessages, UpdatesRoundTrip) {
  GridUpdate exited{.id = "1.0", .action = GridAction::kExited, .exit = ExitInfo{true, 9}};
  UpdateRequest req{.updates = {FullUpdate(), exited, GridUpdate{.id = "2.0"}},
                    .resources = {{"gk:2119", true, 1767225600.5, ""},
                                  {"down:1", false, 0, "connection refused"}}};
  auto parsed = ParseUpdateRequest(Obj(ToJson(req)));
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->updates.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(parsed->updates[i].update) << parsed->updates[i].update.error().ToString();
    EXPECT_EQ(*parsed->updates[i].update, req.updates[i]);
    EXPECT_EQ(parsed->updates[i].id, req.updates[i].id);
  }
  EXPECT_EQ(parsed->resources, req.resources);
}

TEST(GridMessages, APollsTimeoutIsHeldToAMinuteInWholeMilliseconds) {
  // A number this size parsed to a double that did not read back the same (found by the fuzzer).
  for (auto [text, want] :
       std::vector<std::pair<std::string, double>>{{"2099999999999999999999999999", 60},
                                                   {"1e308", 60},
                                                   {"-5", 0},
                                                   {"0.12345678901234", 0.123},
                                                   {"20", 20}}) {
    auto p = ParsePollRequest(Obj(R"({"proxy":"/x","epoch":"e","timeout":)" + text + "}"));
    ASSERT_TRUE(p) << text;
    EXPECT_EQ(p->timeout, want) << text;
    auto again = ParsePollRequest(Obj(ToJson(*p)));
    ASSERT_TRUE(again) << text;
    EXPECT_EQ(*again, *p) << text;
  }
}

TEST(GridMessages, PollAndResultsRoundTrip) {
  PollRequest preq{"/tmp/x509up_u1", 42, "epoch-1", 20};
  auto p = ParsePollRequest(Obj(ToJson(preq)));
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, preq);
  PollResponse pres{"epoch-1",
                    43,
                    {{"1.0", kite::kIdle, "A = 1\n"},
                     {"2.0", kStatusLeftQueue, ""},
                     {"3.0", kite::kIdle, "B = 2\n", true}}};
  std::string text = ToJson(pres);
  EXPECT_NE(text.find(R"({"id":"2.0","status":0})"), std::string::npos) << text;  // no ad
  // Moving is a field of its own beside the Idle status, written only when true.
  EXPECT_NE(text.find(R"({"id":"3.0","status":1,"moving":true,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"({"id":"1.0","status":1,"ad")"), std::string::npos) << text;
  auto r = ParsePollResponse(Obj(text));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, pres);
  UpdateResponse ures{{{"1.0", kite::kRunning, ""},
                       {"", 0, "each update needs an id"},
                       {"4.0", kite::kIdle, "", true}}};
  auto u = ParseUpdateResponse(Obj(ToJson(ures)));
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, ures);
}

TEST(GridMessages, ReadsTheWireFormOfDocsApi) {
  auto parsed = ParseUpdateRequest(Obj(R"({"updates": [
      {"id": "7.1",
       "set": {"GridJobId": "\"https://gk:2119/jobs/x\"", "GridFinal": "true",
               "GridAttempt": "3", "GridJobStatus": "undefined"},
       "action": "exited", "exit": {"signaled": false, "code": 0},
       "event": {"code": 27, "text": "..."}},
      {"id": "7.2", "action": "hold", "reason": "why", "code": 4, "subcode": 5}]})"));
  ASSERT_TRUE(parsed);
  const GridUpdate& u = *parsed->updates[0].update;
  EXPECT_EQ(u.action, GridAction::kExited);
  EXPECT_EQ(u.exit, (ExitInfo{false, 0}));
  ASSERT_EQ(u.set.size(), 4u);
  EXPECT_EQ(u.set[0], (AttrChange{GridAttr::kJobId, std::string("https://gk:2119/jobs/x")}));
  EXPECT_EQ(u.set[1], (AttrChange{GridAttr::kFinal, true}));
  EXPECT_EQ(u.set[2], (AttrChange{GridAttr::kAttempt, int64_t{3}}));
  EXPECT_EQ(u.set[3], (AttrChange{GridAttr::kJobStatus, AttrValue{}}));
  EXPECT_EQ(u.event, (LogEvent{27, "..."}));
  const GridUpdate& h = *parsed->updates[1].update;
  EXPECT_EQ(h.hold_code, kite::kHoldCorruptedCredential);
  EXPECT_EQ(h.hold_subcode, 5);
  EXPECT_EQ(h.reason, "why");
}

TEST(GridMessages, AttributeValuesAreClassAdLiterals) {
  EXPECT_EQ(AttrValueText(AttrValue{}), "undefined");
  EXPECT_EQ(AttrValueText(true), "true");
  EXPECT_EQ(AttrValueText(int64_t{-4}), "-4");
  std::string tricky = "a \"quoted\" back\\slash";
  auto e = classad::ParseExpr(AttrValueText(tricky));
  ASSERT_TRUE(e);
  classad::Value v;
  ASSERT_TRUE(classad::IsLiteral(**e, &v));
  EXPECT_EQ(v.AsString(), tricky);
  for (auto a : {GridAttr::kJobId, GridAttr::kAttempt, GridAttr::kFinal, GridAttr::kExitCode,
                 GridAttr::kExitBySignal, GridAttr::kFailureCode, GridAttr::kFailureMessage,
                 GridAttr::kJobStatus}) {
    EXPECT_EQ(ParseGridAttrName(GridAttrName(a)), a);
  }
}

TEST(GridMessages, AMalformedUpdateFailsAloneNamingTheField) {
  struct Case {
    const char* entry;
    const char* error;
  };
  const Case cases[] = {
      {R"({"set": {}})", "each update needs an id"},
      {R"({"id": ""})", "each update needs an id"},
      {R"({"id": "1.0", "set": []})", "set must be an object"},
      {R"({"id": "1.0", "set": {"JobStatus": "5"}})", "set.JobStatus is not an attribute"},
      {R"({"id": "1.0", "set": {"GridAttempt": 3}})", "set.GridAttempt must be an expression"},
      {R"({"id": "1.0", "set": {"GridAttempt": "\"x\""}})", "set.GridAttempt has the wrong type"},
      {R"({"id": "1.0", "set": {"GridFinal": "1 + 1"}})", "set.GridFinal must be a literal"},
      {R"({"id": "1.0", "set": {"GridJobId": "\"unterminated"}})", "must be a literal"},
      // An escape that makes a byte JSON cannot carry back.
      {R"({"id": "1.0", "set": {"GridJobId": "\"a\\333b\""}})", "set.GridJobId is not UTF-8"},
      {R"({"id": "1.0", "action": "explode"})", "unknown action 'explode'"},
      {R"({"id": "1.0", "action": 3})", "action must be a string"},
      {R"({"id": "1.0", "action": "exited"})", "exited needs exit"},
      {R"({"id": "1.0", "action": "hold", "exit": {"code": 1}})", "exit goes only with exited"},
      {R"({"id": "1.0", "action": "exited", "exit": {"code": "1"}})", "exit needs an integer"},
      {R"({"id": "1.0", "action": "exited", "exit": {"code": 1, "signaled": 1}})",
       "exit needs an integer code and a boolean"},
      {R"({"id": "1.0", "code": "4"})", "code must be an integer"},
      {R"({"id": "1.0", "subcode": 99999999999})", "subcode must be an integer"},
      {R"({"id": "1.0", "event": {"code": 27}})", "event needs an integer code and a text"},
      {R"({"id": "1.0", "event": []})", "event must be an object"},
      {R"({"id": "1.0", "reason": 5})", "reason must be a string"},
  };
  for (const auto& c : cases) {
    std::string body = std::string(R"({"updates": [{"id": "9.9"}, )") + c.entry + "]}";
    auto parsed = ParseUpdateRequest(Obj(body));
    ASSERT_TRUE(parsed) << c.entry;
    ASSERT_EQ(parsed->updates.size(), 2u);
    EXPECT_TRUE(parsed->updates[0].update) << c.entry;
    ASSERT_FALSE(parsed->updates[1].update) << c.entry;
    EXPECT_EQ(parsed->updates[1].update.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(parsed->updates[1].update.error().message().find(c.error), std::string::npos)
        << c.entry << ": " << parsed->updates[1].update.error().message();
  }
}

TEST(GridMessages, MalformedRequestsAndRepliesAreRefusedWhole) {
  const std::pair<const char*, const char*> updates[] = {
      {R"({})", "needs an updates array"},
      {R"({"updates": {}})", "needs an updates array"},
      {R"({"updates": [], "resources": {}})", "resources must be"},
      {R"({"updates": [], "resources": [{"resource": "gk:9"}]})", "resources must be"},
      {R"({"updates": [], "resources": [{"resource": "", "reachable": true}]})", "resources"},
      {R"({"updates": [], "resources": [{"resource": "x:1", "reachable": true,
          "last_contact": "now"}]})",
       "resources must be"},
      {R"({"updates": [], "resources": [{"resource": "x:1", "reachable": true,
          "last_contact": 2099999999999999999999999999}]})",
       "last_contact is out of range"},
      {R"({"updates": [], "resources": [{"resource": "x:1", "reachable": true,
          "last_contact": -1}]})",
       "last_contact is out of range"},
  };
  for (const auto& [text, error] : updates) {
    auto r = ParseUpdateRequest(Obj(text));
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message().find(error), std::string::npos) << r.error().message();
  }
  const std::pair<const char*, const char*> polls[] = {
      {R"({})", "grid/jobs needs a proxy"},
      {R"({"proxy": 1})", "proxy must be a string"},
      {R"({"proxy": "/x", "epoch": 1})", "epoch must be a string"},
      {R"({"proxy": "/x", "since": -1})", "since must be a non-negative integer"},
      {R"({"proxy": "/x", "since": 1.5})", "since must be a non-negative integer"},
  };
  for (const auto& [text, error] : polls) {
    auto r = ParsePollRequest(Obj(text));
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message().find(error), std::string::npos) << r.error().message();
  }
  for (const char* text :
       {R"({})", R"({"epoch": "e", "generation": -1, "jobs": []})",
        R"({"epoch": "e", "generation": 1, "jobs": [{"id": "1.0"}]})",
        R"({"epoch": "e", "generation": 1, "jobs": [{"id": "1.0", "status": 1}]})",
        R"({"epoch": "e", "generation": 1, "jobs": [{"id": "1.0", "status": 9,
                               "ad": ""}]})",
        R"({"epoch": "e", "generation": 1, "jobs": [{"id": "1.0", "status": 100,
                               "ad": ""}]})",
        R"({"epoch": "e", "generation": 1, "jobs": [{"id": "1.0", "status": 2, "moving": true,
                               "ad": ""}]})",
        R"({"epoch": "e", "generation": 1, "jobs": [{"id": "1.0", "status": 1, "moving": 1,
                               "ad": ""}]})",
        R"({"epoch": "e", "generation": 1, "jobs": [3]})"}) {
    EXPECT_FALSE(ParsePollResponse(Obj(text))) << text;
  }
  for (const char* text :
       {R"({})", R"({"results": [1]})", R"({"results": [{"status": "1"}]})",
        R"({"results": [{"id": "1.0", "error": "", "status": 5, "moving": true}]})",
        R"({"results": [{"id": "1.0", "error": "", "status": 1, "moving": "yes"}]})"}) {
    EXPECT_FALSE(ParseUpdateResponse(Obj(text))) << text;
  }
  EXPECT_FALSE(ParseJsonObject("[1]"));
  EXPECT_FALSE(ParseJsonObject("{"));
}

TEST(GridMessages, ActionNamesRoundTrip) {
  for (auto a : {GridAction::kNone, GridAction::kRunning, GridAction::kExited, GridAction::kIdle,
                 GridAction::kHold, GridAction::kRetire}) {
    EXPECT_EQ(ParseGridAction(GridActionName(a)), a);
  }
  EXPECT_FALSE(ParseGridAction("Hold"));
}

TEST(GridMessages, ReadsTheGridAttributesBack) {
  auto ad = classad::ParseOldAd(
      "GridAttempt = 2\nGridJobId = \"https://gk/jobs/x\"\nGridJobStatus = \"failed\"\n"
      "GridFinal = true\nGridExitCode = 3\nGridExitBySignal = true\n"
      "GridFailureCode = \"batch-lost\"\nGridFailureMessage = \"gone\"\n");
  ASSERT_TRUE(ad);
  StoredGridAttrs s = ReadGridAttrs(*ad);
  EXPECT_EQ(s.attempt, 2);
  EXPECT_EQ(s.job_id, "https://gk/jobs/x");
  EXPECT_EQ(s.job_status, "failed");
  EXPECT_TRUE(s.final);
  EXPECT_EQ(s.exit, (ExitInfo{true, 3}));
  EXPECT_EQ(s.failure_code, "batch-lost");
  EXPECT_EQ(s.failure_message, "gone");
  StoredGridAttrs none = ReadGridAttrs(classad::ClassAd());
  EXPECT_EQ(none.attempt, 0);
  EXPECT_TRUE(none.job_id.empty());
  EXPECT_FALSE(none.final);
  EXPECT_FALSE(none.exit);
}

}  // namespace
}  // namespace kite::grid
