// Built-in functions over string lists, numbers and conversions, plus their shared helpers.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "classad/eval.h"
#include "classad/functions_util.h"
#include "common/strings.h"

namespace kite::classad {

bool AppendAsText(std::string& out, const Value& v) {
  switch (v.type()) {
    case ValueType::kString:
      out += v.AsString();
      return true;
    case ValueType::kInteger:
    case ValueType::kReal:
    case ValueType::kBool:
      v.AppendTo(out);
      return true;
    default:
      return false;
  }
}

std::vector<std::string_view> SplitStringList(std::string_view s, std::string_view separators) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = s.find_first_not_of(separators, i);
    if (start == std::string_view::npos) break;
    size_t end = s.find_first_of(separators, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    i = end;
  }
  return out;
}

namespace {

struct RegexEntry {
  std::string pattern;
  bool icase = false;
  bool ok = false;
  regex_t re{};
  ~RegexEntry() {
    if (ok) regfree(&re);
  }
};

// A few compiled patterns per thread: Requirements reuse the same handful of patterns, and
// compiling on every evaluation would dominate the cost of regexp().
constexpr size_t kRegexCacheSize = 16;

}  // namespace

const regex_t* CachedRegex(std::string_view pattern, bool ignore_case) {
  thread_local std::vector<std::unique_ptr<RegexEntry>> cache;
  thread_local size_t next = 0;
  for (auto& e : cache) {
    if (e->icase == ignore_case && e->pattern == pattern) return e->ok ? &e->re : nullptr;
  }
  auto entry = std::make_unique<RegexEntry>();
  entry->pattern.assign(pattern);
  entry->icase = ignore_case;
  int flags = REG_EXTENDED | REG_NOSUB | (ignore_case ? REG_ICASE : 0);
  entry->ok = regcomp(&entry->re, entry->pattern.c_str(), flags) == 0;
  const regex_t* result = entry->ok ? &entry->re : nullptr;
  if (cache.size() < kRegexCacheSize) {
    cache.push_back(std::move(entry));
  } else {
    cache[next] = std::move(entry);
    next = (next + 1) % kRegexCacheSize;
  }
  return result;
}

std::optional<Value> ParseNumber(std::string_view text) {
  text = kite::Trim(text);
  if (text.empty()) return std::nullopt;
  std::string_view digits = text.front() == '+' ? text.substr(1) : text;
  int64_t i = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
  if (ec == std::errc() && p == digits.data() + digits.size()) return Value::Integer(i);
  double r = 0;
  auto [q, ec2] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
  if (ec2 == std::errc() && q == digits.data() + digits.size()) return Value::Real(r);
  return std::nullopt;
}

namespace {

Value Arg(Evaluator& ev, const CallExpr& c, const Frame& f, size_t i) {
  return ev.Eval(*c.args[i], f);
}

// Evaluates the (list, [separators]) arguments of the stringList functions.
bool ListArgs(Evaluator& ev, const CallExpr& c, const Frame& f, size_t list_index,
              std::vector<std::string_view>* items, Value* list_holder, Value* seps_holder,
              Value* out) {
  if (c.args.size() != list_index + 1 && c.args.size() != list_index + 2) {
    *out = Value::Error();
    return false;
  }
  *list_holder = Arg(ev, c, f, list_index);
  *seps_holder = c.args.size() == list_index + 2 ? Arg(ev, c, f, list_index + 1)
                                                 : Value::String(kDefaultListSeparators);
  for (const Value* v : {list_holder, seps_holder}) {
    if (v->IsExceptional()) {
      *out = *v;
      return false;
    }
    if (!v->IsString()) {
      *out = Value::Error();
      return false;
    }
  }
  *items = SplitStringList(list_holder->AsString(), seps_holder->AsString());
  return true;
}

Value ListMember(Evaluator& ev, const CallExpr& c, const Frame& f, bool ignore_case) {
  if (c.args.empty()) return Value::Error();
  Value x = Arg(ev, c, f, 0);
  if (x.IsExceptional()) return x;
  std::string needle;
  if (!AppendAsText(needle, x)) return Value::Error();
  std::vector<std::string_view> items;
  Value list, seps, out;
  if (!ListArgs(ev, c, f, 1, &items, &list, &seps, &out)) return out;
  for (auto item : items) {
    if (ignore_case ? kite::EqualsIgnoreCase(item, needle) : item == needle) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

enum class ListStat { kSum, kAvg, kMin, kMax };

Value ListNumbers(Evaluator& ev, const CallExpr& c, const Frame& f, ListStat stat) {
  std::vector<std::string_view> items;
  Value list, seps, out;
  if (!ListArgs(ev, c, f, 0, &items, &list, &seps, &out)) return out;
  if (items.empty()) {
    return stat == ListStat::kSum ? Value::Integer(0)
                                  : (stat == ListStat::kAvg ? Value::Real(0) : Value());
  }
  Value acc;
  for (size_t i = 0; i < items.size(); ++i) {
    auto n = ParseNumber(items[i]);
    if (!n) return Value::Error();
    if (i == 0) {
      acc = *n;
    } else if (stat == ListStat::kSum || stat == ListStat::kAvg) {
      acc = Evaluator::Arithmetic(Op::kAdd, acc, *n);
    } else if (Evaluator::Compare(stat == ListStat::kMin ? Op::kLt : Op::kGt, *n, acc).IsTrue()) {
      acc = *n;
    }
  }
  if (stat == ListStat::kAvg) {
    return Evaluator::Arithmetic(Op::kDiv, acc, Value::Real(static_cast<double>(items.size())));
  }
  return acc;
}

// The argument as a number for the conversion and rounding functions; strings are parsed and
// booleans count as 0 and 1. Returns false with *out set otherwise.
bool NumericArg(const Value& v, Value* num, Value* out) {
  if (v.IsExceptional()) {
    *out = v;
    return false;
  }
  if (v.IsNumber()) {
    *num = v;
    return true;
  }
  if (v.IsBool()) {
    *num = Value::Integer(v.AsBool() ? 1 : 0);
    return true;
  }
  if (v.IsString()) {
    auto s = kite::Trim(v.AsString());
    if (kite::EqualsIgnoreCase(s, "INF") || kite::EqualsIgnoreCase(s, "+INF")) {
      *num = Value::Real(std::numeric_limits<double>::infinity());
      return true;
    }
    if (kite::EqualsIgnoreCase(s, "-INF")) {
      *num = Value::Real(-std::numeric_limits<double>::infinity());
      return true;
    }
    if (kite::EqualsIgnoreCase(s, "NaN")) {
      *num = Value::Real(std::numeric_limits<double>::quiet_NaN());
      return true;
    }
    if (auto n = ParseNumber(s)) {
      *num = *n;
      return true;
    }
  }
  *out = Value::Error();
  return false;
}

bool FitsInt64(double r) {
  return std::isfinite(r) && r >= -9.2233720368547758e18 && r < 9.2233720368547758e18;
}

Value OneNumber(Evaluator& ev, const CallExpr& c, const Frame& f, Value* num) {
  if (c.args.size() != 1) return Value::Error();
  Value out;
  if (!NumericArg(Arg(ev, c, f, 0), num, &out)) return out;
  return Value::Bool(true);  // marker: *num is valid
}

template <double (*kFn)(double)>
Value RoundWith(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Value num;
  Value r = OneNumber(ev, c, f, &num);
  if (!r.IsBool()) return r;
  if (num.IsInteger()) return num;
  double x = kFn(num.AsReal());
  return FitsInt64(x) ? Value::Integer(static_cast<int64_t>(x)) : Value::Real(x);
}

}  // namespace

Value StringListMember(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return ListMember(ev, c, f, false);
}
Value StringListIMember(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return ListMember(ev, c, f, true);
}

Value StringListSize(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::vector<std::string_view> items;
  Value list, seps, out;
  if (!ListArgs(ev, c, f, 0, &items, &list, &seps, &out)) return out;
  return Value::Integer(static_cast<int64_t>(items.size()));
}

Value StringListSum(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return ListNumbers(ev, c, f, ListStat::kSum);
}
Value StringListAvg(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return ListNumbers(ev, c, f, ListStat::kAvg);
}
Value StringListMin(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return ListNumbers(ev, c, f, ListStat::kMin);
}
Value StringListMax(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return ListNumbers(ev, c, f, ListStat::kMax);
}

// int(x): reals truncate toward zero; strings are parsed; booleans are 0 and 1.
Value ConvInt(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Value num;
  Value r = OneNumber(ev, c, f, &num);
  if (!r.IsBool()) return r;
  if (num.IsInteger()) return num;
  double x = std::trunc(num.AsReal());
  return FitsInt64(x) ? Value::Integer(static_cast<int64_t>(x)) : Value::Error();
}

Value ConvReal(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Value num;
  Value r = OneNumber(ev, c, f, &num);
  if (!r.IsBool()) return r;
  return Value::Real(num.AsNumber());
}

// string(x): strings unchanged; other values as their ClassAd text.
Value ConvString(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsExceptional() || v.IsString()) return v;
  return Value::String(v.ToString());
}

Value ConvBool(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsExceptional()) return v;
  bool b = false;
  if (v.BoolEquivalent(&b)) return Value::Bool(b);
  if (v.IsString()) {
    auto s = kite::Trim(v.AsString());
    if (kite::EqualsIgnoreCase(s, "true")) return Value::Bool(true);
    if (kite::EqualsIgnoreCase(s, "false")) return Value::Bool(false);
  }
  return Value::Error();
}

Value Floor(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return RoundWith<std::floor>(ev, c, f);
}
Value Ceiling(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return RoundWith<std::ceil>(ev, c, f);
}
Value Round(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return RoundWith<std::round>(ev, c, f);
}

Value Abs(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsExceptional()) return v;
  if (v.IsInteger()) {
    int64_t i = v.AsInteger();
    return i < 0 ? Evaluator::UnaryOp(Op::kNeg, v) : v;
  }
  if (v.IsReal()) return Value::Real(std::fabs(v.AsReal()));
  return Value::Error();
}

// pow(b, e): an integer when both are integers and e >= 0, otherwise a real.
Value Pow(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2) return Value::Error();
  Value b = Arg(ev, c, f, 0), e = Arg(ev, c, f, 1);
  if (b.IsError() || e.IsError()) return Value::Error();
  if (b.IsUndefined() || e.IsUndefined()) return Value();
  if (!b.IsNumber() || !e.IsNumber()) return Value::Error();
  if (b.IsInteger() && e.IsInteger() && e.AsInteger() >= 0) {
    uint64_t result = 1, base = static_cast<uint64_t>(b.AsInteger());
    for (int64_t n = e.AsInteger(); n > 0; n >>= 1) {  // wraps on overflow, like * does
      if (n & 1) result *= base;
      base *= base;
    }
    return Value::Integer(static_cast<int64_t>(result));
  }
  return Value::Real(std::pow(b.AsNumber(), e.AsNumber()));
}

// quantize(a, q): the smallest multiple of q that is >= a; with a list, the first element
// >= a, or else the smallest multiple of the last element that is >= a.
Value Quantize(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2) return Value::Error();
  Value a = Arg(ev, c, f, 0), q = Arg(ev, c, f, 1);
  if (a.IsError() || q.IsError()) return Value::Error();
  if (a.IsUndefined() || q.IsUndefined()) return Value();
  if (!a.IsNumber()) return Value::Error();
  if (q.IsList()) {
    const auto& items = q.AsList();
    if (items.empty()) return Value::Error();
    for (const Value& item : items) {
      if (!item.IsNumber()) return Value::Error();
      if (Evaluator::Compare(Op::kGe, item, a).IsTrue()) return item;
    }
    q = items.back();
  }
  if (!q.IsNumber() || q.AsNumber() == 0) return Value::Error();
  if (a.IsInteger() && q.IsInteger() && q.AsInteger() != INT64_MIN) {
    int64_t x = a.AsInteger(), m = q.AsInteger() < 0 ? -q.AsInteger() : q.AsInteger();
    int64_t r = x % m;
    // Unsigned arithmetic: rounding up near INT64_MAX wraps instead of being undefined.
    uint64_t up = static_cast<uint64_t>(x) - static_cast<uint64_t>(r) + static_cast<uint64_t>(m);
    return Value::Integer(r == 0 ? x : (x > 0 ? static_cast<int64_t>(up) : x - r));
  }
  double m = std::fabs(q.AsNumber());
  return Value::Real(std::ceil(a.AsNumber() / m) * m);
}

}  // namespace kite::classad
