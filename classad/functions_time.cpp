// Built-in time functions: time, absTime, relTime, splitTime, formatTime, interval and the
// get* field functions, as HTCondor defines them. Instants without an explicit zone take the
// local zone (TZ) of the evaluating process, as HTCondor's do.
//
// Kite has no relative-time type: relTime() gives its seconds as a real, which is also what the
// HTCondor build Kite's conformance answers come from gives.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "classad/classad.h"
#include "classad/functions_util.h"

namespace kite::classad {
namespace {

// Seconds east of Greenwich of the local zone at `t`.
int32_t LocalOffset(int64_t t) {
  time_t clock = static_cast<time_t>(t);
  struct tm tm {};
  if (localtime_r(&clock, &tm) == nullptr) return 0;
  return static_cast<int32_t>(tm.tm_gmtoff);
}

int64_t Now() {
  return static_cast<int64_t>(std::time(nullptr));
}

// ---- absTime("...") and relTime("...") text ----

// Moves `i` to the next digit of `s` (or its end).
void NextDigit(const std::string& s, size_t* i) {
  while (*i < s.size() && !std::isdigit(static_cast<unsigned char>(s[*i]))) ++*i;
}

// The leading digits of s[i, i + n) as a number (atoi on a substring, as HTCondor reads them).
int Field(const std::string& s, size_t i, size_t n) {
  return std::atoi(s.substr(i, n).c_str());
}

// A trailing zone "+hhmm"/"-hhmm" (or with a colon, or "Z"): removed from `s`, offset set.
bool TakeZone(std::string& s, int32_t* offset) {
  size_t end = s.find_last_not_of(" \t\n\r\f\v");
  if (end != std::string::npos && end > 0 && (s[end] == 'z' || s[end] == 'Z')) {
    s.erase(end, 1);
    *offset = 0;
    return true;
  }
  size_t n = s.size();
  if (n > 6 && (s[n - 6] == '+' || s[n - 6] == '-') && s[n - 3] == ':') s.erase(n - 3, 1);
  n = s.size();
  if (n <= 5 || (s[n - 5] != '+' && s[n - 5] != '-')) return false;
  for (size_t k = n - 4; k < n; ++k) {
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  }
  int sign = s[n - 5] == '-' ? -1 : 1;
  *offset = sign * (Field(s, n - 4, 2) * 3600 + Field(s, n - 2, 2) * 60);
  s.erase(n - 5);
  return true;
}

// absTime text: "yyyy[-mm[-dd[Thh[:mm[:ss]]]]][zone]", any non-digits between the fields.
std::optional<Value> ParseAbsTime(std::string s) {
  int32_t offset = 0;
  bool zoned = TakeZone(s, &offset);
  struct tm tm {};
  size_t i = 0;
  NextDigit(s, &i);
  if (i + 4 > s.size()) return std::nullopt;
  tm.tm_year = Field(s, i, 4) - 1900;
  i += 4;
  int* fields[] = {&tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec};
  for (int* field : fields) {
    NextDigit(s, &i);
    if (i + 2 <= s.size()) {
      *field = Field(s, i, 2);
      i += 2;
    }
  }
  tm.tm_mon -= 1;
  NextDigit(s, &i);
  if (i < s.size()) return std::nullopt;  // digits left over
  struct tm local = tm;
  time_t as_local = mktime(&local);
  time_t as_utc = timegm(&tm);
  if (as_local == -1 || as_utc == -1) return std::nullopt;
  if (!zoned) offset = LocalOffset(as_local);
  return Value::AbsTime(static_cast<int64_t>(as_utc) - offset, offset);
}

// relTime text: "[-][days+][hh:][mm:]ss[.fff]" or "[-][Nd][Nh][Nm][N[.fff]s]", read from the end.
std::optional<double> ParseRelTime(std::string_view s) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  int64_t i = static_cast<int64_t>(s.size()) - 1;
  auto skip_blanks = [&] {
    while (i >= 0 && std::isspace(static_cast<unsigned char>(s[i]))) --i;
  };
  auto digits_back = [&] {  // the digits ending at i, read back to front
    int64_t end = i;
    while (i >= 0 && is_digit(s[i])) --i;
    return std::string(s.substr(static_cast<size_t>(i + 1), static_cast<size_t>(end - i)));
  };
  double secs = 0;
  int64_t parts[3] = {0, 0, 0};  // minutes, hours, days
  skip_blanks();
  if (i >= 0 && (s[i] == 's' || s[i] == 'S' || is_digit(s[i]))) {
    if (!is_digit(s[i])) --i;
    skip_blanks();
    std::string text = digits_back();
    if (i >= 0 && s[i] == '.') {
      --i;
      text = digits_back() + "." + text;
    }
    secs = std::strtod(text.c_str(), nullptr);
  }
  static constexpr char kUnits[3][3] = {{'m', 'M', ':'}, {'h', 'H', ':'}, {'d', 'D', '+'}};
  for (int k = 0; k < 3; ++k) {
    skip_blanks();
    if (i >= 0 && (s[i] == kUnits[k][0] || s[i] == kUnits[k][1] || s[i] == kUnits[k][2])) {
      --i;
      skip_blanks();
      parts[k] = std::atoll(digits_back().c_str());
    }
  }
  skip_blanks();
  bool negative = i >= 0 && s[i] == '-';
  if (negative) --i;
  skip_blanks();
  if (i >= 0) return std::nullopt;  // something other than the parts above
  double total = static_cast<double>(parts[2]) * 86400 + static_cast<double>(parts[1]) * 3600 +
                 static_cast<double>(parts[0]) * 60 + secs;
  return negative ? -total : total;
}

// ---- functions ----

Value Time(Evaluator&, const CallExpr& c, const Frame&) {
  if (!c.args.empty()) return Value::Error();
  return Value::Integer(Now());
}

Value CurrentTime(Evaluator&, const CallExpr& c, const Frame&) {
  if (!c.args.empty()) return Value::Error();
  int64_t now = Now();
  return Value::AbsTime(now, LocalOffset(now));
}

// absTime(): now. absTime("2004-01-01T12:00:00+01:00"): that instant (ERROR when the text is not
// one). absTime(seconds [, zone offset]): that instant, in the given zone or the local one.
Value AbsTimeFn(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.empty()) return CurrentTime(ev, c, f);
  if (c.args.size() > 2) return Value::Error();
  Value t = Arg(ev, c, f, 0);
  std::optional<int32_t> zone;
  if (c.args.size() == 2) {
    Value z = Arg(ev, c, f, 1);
    if (!z.IsNumber() || !(std::fabs(z.AsNumber()) < 1e6)) return Value::Error();
    zone = static_cast<int32_t>(z.AsNumber());
  }
  if (t.IsUndefined()) return t;
  if (t.IsString()) {
    if (zone) return Value::Error();
    auto parsed = ParseAbsTime(std::string(t.AsString()));
    return parsed ? *parsed : Value::Error();
  }
  if (t.IsAbsTime()) return zone ? Value::AbsTime(t.AsAbsTimeSeconds(), *zone) : t;
  if (!t.IsNumber() || !(std::fabs(t.AsNumber()) < 9.2e18)) return Value::Error();
  auto secs = static_cast<int64_t>(t.AsNumber());
  return Value::AbsTime(secs, zone ? *zone : LocalOffset(secs));
}

// relTime("1d2h3m4.5s") or relTime("1+02:03:04.5"): the seconds, as a real. relTime(x) of a
// number or an instant: its seconds.
Value RelTimeFn(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value t = Arg(ev, c, f, 0);
  if (t.IsUndefined()) return t;
  if (t.IsString()) {
    auto secs = ParseRelTime(t.AsString());
    return secs ? Value::Real(*secs) : Value::Error();
  }
  if (t.IsNumber() || t.IsAbsTime()) return ToRealValue(t);
  return Value::Error();
}

// The instant a splitTime()/formatTime() argument stands for: numbers are seconds in the local
// zone, reals truncated.
std::optional<Value> AsInstant(const Value& v) {
  if (v.IsAbsTime()) return v;
  if (!v.IsNumber() || !(std::fabs(v.AsNumber()) < 9.2e18)) return std::nullopt;
  auto secs = static_cast<int64_t>(v.AsNumber());
  return Value::AbsTime(secs, LocalOffset(secs));
}

// The wall-clock fields of an instant in its own zone.
bool WallClock(const Value& instant, struct tm* tm) {
  time_t wall = static_cast<time_t>(instant.AsAbsTimeSeconds() + instant.AsAbsTimeOffset());
  return gmtime_r(&wall, tm) != nullptr;
}

// splitTime(t): [ Type = "AbsoluteTime"; Year; Month; Day; Hours; Minutes; Seconds; Offset ].
Value SplitTime(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsUndefined()) return v;
  auto instant = AsInstant(v);
  struct tm tm {};
  if (!instant || !WallClock(*instant, &tm)) return Value::Error();
  auto ad = std::make_shared<ClassAd>();
  ad->Assign("Type", "AbsoluteTime");
  ad->Assign("Year", tm.tm_year + 1900);
  ad->Assign("Month", tm.tm_mon + 1);
  ad->Assign("Day", tm.tm_mday);
  ad->Assign("Hours", tm.tm_hour);
  ad->Assign("Minutes", tm.tm_min);
  ad->Assign("Seconds", tm.tm_sec);
  ad->Assign("Offset", static_cast<int64_t>(instant->AsAbsTimeOffset()));
  return Value::Ad(std::move(ad));
}

// The fields of a splitTime()-style ad (missing ones are 0), normalised.
struct tm FieldsOfAd(const ClassAd& ad) {
  auto get = [&](std::string_view name, int64_t dflt) {
    int64_t v = ad.EvaluateInt(name).value_or(dflt);
    return static_cast<int>(std::clamp<int64_t>(v, -1000000, 1000000));
  };
  struct tm tm {};
  tm.tm_sec = get("Seconds", 0);
  tm.tm_min = get("Minutes", 0);
  tm.tm_hour = get("Hours", 0);
  tm.tm_mday = get("Day", 0);
  tm.tm_mon = get("Month", 1) - 1;
  tm.tm_year = get("Year", 1900) - 1900;
  timegm(&tm);  // fills in the weekday and the day of the year
  return tm;
}

// formatTime([t [, format]]): t (default now) formatted by strftime (default "%c"), in t's zone.
// t may be an instant, seconds, or an ad as splitTime() makes.
Value FormatTime(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() > 2) return Value::Error();
  struct tm tm {};
  if (c.args.empty()) {
    time_t now = std::time(nullptr);
    if (localtime_r(&now, &tm) == nullptr) return Value::Error();
  } else {
    Value t = Arg(ev, c, f, 0);
    if (t.IsClassAd()) {
      tm = FieldsOfAd(*t.AsClassAd());
    } else {
      auto instant = AsInstant(t);
      if (!instant || !WallClock(*instant, &tm)) return Value::Error();
    }
    tm.tm_zone = nullptr;
  }
  std::string format = "%c";
  if (c.args.size() == 2) {
    Value fmt = Arg(ev, c, f, 1);
    if (!fmt.IsString()) return Value::Error();
    format = fmt.AsString();
  }
  char out[1024];
  size_t n = format.empty() ? 0 : std::strftime(out, sizeof(out), format.c_str(), &tm);
  return Value::String(std::string_view(out, n));
}

// interval(seconds): "[days+][h]h:mm:ss" with zero leading parts left out: 1 -> "1",
// 121 -> "2:01", 10921 -> "3:02:01", 356521 -> "4+03:02:01".
Value Interval(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = ToIntegerValue(Arg(ev, c, f, 0));
  if (!v.IsInteger()) return Value::Error();
  int64_t t = v.AsInteger();
  int64_t days = t / 86400, hours = t % 86400 / 3600, mins = t % 3600 / 60, secs = t % 60;
  char buf[96];
  auto a = [](int64_t x) { return static_cast<long long>(x < 0 ? -x : x); };
  if (days != 0) {
    std::snprintf(buf, sizeof(buf), "%lld+%02lld:%02lld:%02lld", static_cast<long long>(days),
                  a(hours), a(mins), a(secs));
  } else if (hours != 0) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(hours), a(mins),
                  a(secs));
  } else if (mins != 0) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", static_cast<long long>(mins), a(secs));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(secs));
  }
  return Value::String(buf);
}

enum class TimeField { kYear, kMonth, kDayOfYear, kDayOfMonth, kDayOfWeek, kHours, kMins, kSecs };

// getYear(t) ... getSeconds(t): a field of the instant t in the local zone, as HTCondor reads it.
template <TimeField kField>
Value GetField(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value t = Arg(ev, c, f, 0);
  if (!t.IsAbsTime()) return Value::Error();
  time_t clock = static_cast<time_t>(t.AsAbsTimeSeconds());
  struct tm tm {};
  if (localtime_r(&clock, &tm) == nullptr) return Value::Error();
  const int values[] = {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_yday, tm.tm_mday,
                        tm.tm_wday,        tm.tm_hour,    tm.tm_min,  tm.tm_sec};
  return Value::Integer(values[static_cast<int>(kField)]);
}

constexpr BuiltinEntry kTimeFunctions[] = {
    {"time", Time},
    {"currenttime", CurrentTime},
    {"abstime", AbsTimeFn},
    {"reltime", RelTimeFn},
    {"splittime", SplitTime},
    {"formattime", FormatTime},
    {"interval", Interval},
    {"getyear", GetField<TimeField::kYear>},
    {"getmonth", GetField<TimeField::kMonth>},
    {"getdayofyear", GetField<TimeField::kDayOfYear>},
    {"getdayofmonth", GetField<TimeField::kDayOfMonth>},
    {"getdayofweek", GetField<TimeField::kDayOfWeek>},
    {"gethours", GetField<TimeField::kHours>},
    {"getminutes", GetField<TimeField::kMins>},
    {"getseconds", GetField<TimeField::kSecs>},
};

}  // namespace

std::span<const BuiltinEntry> TimeFunctions() {
  return kTimeFunctions;
}

}  // namespace kite::classad
