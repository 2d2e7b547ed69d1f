// The time built-ins and the absolute-time value: absTime, relTime, splitTime, formatTime,
// interval, and what operators do with instants. Run in a fixed zone (TZ), restored after.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "classad/classad.h"
#include "test_util.h"

namespace kite::classad {
namespace {

using testing::EvalText;

// Sets TZ for the life of the object (instants without a zone take the local one).
class ZoneGuard {
 public:
  explicit ZoneGuard(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ZoneGuard() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  ZoneGuard(const ZoneGuard&) = delete;
  ZoneGuard& operator=(const ZoneGuard&) = delete;

 private:
  std::optional<std::string> old_;
};

struct Case {
  std::string_view input;
  std::string_view expected;
};

void ExpectAll(std::initializer_list<Case> cases) {
  for (const auto& c : cases) EXPECT_EQ(EvalText(c.input), c.expected) << c.input;
}

TEST(ClassAdTime, AbsTimeReadsTextAndNumbers) {
  ZoneGuard utc("UTC");
  ExpectAll({
      {R"(int(absTime("2004-01-01")))", "1072915200"},
      {R"(int(absTime("1970-01-02T03:04:05Z")))", "97445"},
      {R"(int(absTime("1970-01-02T:03:04:05-06:00")))", "119045"},
      {R"(int(absTime("1997-08-30T16:04:05-0500")))", "872975045"},
      {R"(absTime("1970-01-01T01:00:00+01:00"))", R"(absTime("1970-01-01T01:00:00+01:00"))"},
      {R"(absTime(0))", R"(absTime("1970-01-01T00:00:00-00:00"))"},
      {R"(absTime(3600, -3600))", R"(absTime("1970-01-01T00:00:00-01:00"))"},
      {R"(absTime("not a time"))", "error"},
      {R"(absTime("2004-01-01 12345"))", "error"},  // digits left over
      {"absTime(x)", "undefined"},
      {"absTime(true)", "error"},
      {"isAbsTime(absTime(0))", "true"},
      {"isAbsTime(0)", "false"},
      {"isRelTime(relTime(5))", "false"},  // no relative-time type: relTime gives a real
  });
}

TEST(ClassAdTime, LocalZoneAppliesWithoutAnExplicitOne) {
  ZoneGuard est("EST5");
  ExpectAll({
      {R"(int(absTime("2004-01-01")))", "1072933200"},  // midnight in UTC-5
      {R"(splitTime(absTime("2004-01-01")).Offset)", "-18000"},
      {R"(splitTime(0).Hours)", "19"},  // seconds are shown in the local zone
  });
}

TEST(ClassAdTime, RelTimeGivesSeconds) {
  ExpectAll({
      {R"(relTime("2+25:14:16.123"))", "263656.123"},
      {R"(relTime("1d2h3m4.5s"))", "93784.5"},
      {R"(relTime("01:00:01"))", "3601.0"},
      {R"(relTime("-1:00"))", "-60.0"},
      {R"(relTime("3 fortnights"))", "error"},
      {"relTime(90)", "90.0"},
      {"relTime(x)", "undefined"},
      {"relTime(1, 2)", "error"},
  });
}

TEST(ClassAdTime, SplitAndFormat) {
  ZoneGuard utc("UTC");
  const char* t = R"(absTime("1997-08-30T16:04:05-0500"))";
  auto with = [&](std::string_view pattern) {
    std::string s(pattern);
    s.replace(s.find('@'), 1, t);
    return EvalText(s);
  };
  EXPECT_EQ(with("splitTime(@).Year"), "1997");
  EXPECT_EQ(with("splitTime(@).Month"), "8");
  EXPECT_EQ(with("splitTime(@).Hours"), "16");
  EXPECT_EQ(with("splitTime(@).Offset"), "-18000");
  EXPECT_EQ(with("splitTime(@).Type"), "\"AbsoluteTime\"");
  EXPECT_EQ(with(R"(formatTime(@, "%Y-%m-%d %H:%M:%S %A"))"), "\"1997-08-30 16:04:05 Saturday\"");
  EXPECT_EQ(with("formatTime(@)"), "\"Sat Aug 30 16:04:05 1997\"");
  EXPECT_EQ(with(R"(formatTime(splitTime(@), "%j %B"))"), "\"242 August\"");
  EXPECT_EQ(EvalText(R"(formatTime(0, "%H:%M"))"), "\"00:00\"");
  EXPECT_EQ(EvalText(R"(formatTime(x, "%H"))"), "error");
  EXPECT_EQ(EvalText(R"(formatTime(0, 1))"), "error");
  EXPECT_EQ(EvalText("splitTime(x)"), "undefined");
  EXPECT_EQ(EvalText("splitTime([a = 1])"), "error");
  EXPECT_EQ(with("getYear(@)"), "1997");
  EXPECT_EQ(with("getHours(@)"), "21");  // get* read the local zone (UTC here)
}

TEST(ClassAdTime, OperatorsOnInstants) {
  ExpectAll({
      {"absTime(10) < absTime(20)", "true"},
      {"absTime(10, 0) == absTime(10, 3600)", "true"},    // the same moment
      {"absTime(10, 0) =?= absTime(10, 3600)", "false"},  // shown in different zones
      {"absTime(10) == 10", "error"},
      {"absTime(100) - absTime(40)", "60.0"},
      {"int(absTime(100, 0) + 5)", "105"},
      {"int(absTime(100, 0) - relTime(\"1:00\"))", "40"},
      {"absTime(100) * 2", "error"},
  });
}

TEST(ClassAdTime, Interval) {
  ExpectAll({
      {"interval(1)", "\"1\""},
      {"interval(121)", "\"2:01\""},
      {"interval(10921)", "\"3:02:01\""},
      {"interval(356521)", "\"4+03:02:01\""},
      {"interval(-61)", "\"-1:01\""},
      {"interval(\"90\")", "\"1:30\""},
      {"interval(x)", "error"},
  });
}

}  // namespace
}  // namespace kite::classad
