// Built-in string functions: strcat, join, substr, size, case, comparison, version comparison and
// splitting, as HTCondor defines them. Arguments that are not strings are converted with
// HTCondor's string() rules (AppendConverted) where HTCondor converts them.
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "classad/classad.h"
#include "classad/functions_util.h"

namespace kite::classad {
namespace {

// strcat(a, b, ...): the converted arguments joined. UNDEFINED as soon as an argument is
// UNDEFINED (before it, only ERROR wins), ERROR when one is ERROR.
Value StrCat(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::string out;
  for (size_t i = 0; i < c.args.size(); ++i) {
    Value v = Arg(ev, c, f, i);
    if (v.IsUndefined()) return v;
    if (!AppendConverted(out, v)) return Value::Error();
  }
  return Value::String(out);
}

// join(sep, a, b, ...), join(sep, list), join(list): the converted items with `sep` between
// them (only between non-empty text: join(",", "", "a") is "a"). UNDEFINED items are skipped;
// UNDEFINED when nothing but UNDEFINED was there to join.
Value JoinValues(const std::vector<Value>& items) {
  std::string sep, out;
  bool any_defined = false, any_undefined = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const Value& v = items[i];
    if (v.IsUndefined()) {
      any_undefined = true;
      continue;
    }
    std::string text;
    if (!AppendConverted(text, v)) return Value::Error();
    if (i == 0) {
      sep = std::move(text);
      continue;
    }
    if (!out.empty()) out += sep;
    out += text;
    any_defined = true;
  }
  if (any_undefined && !any_defined) return Value();
  return Value::String(out);
}

Value Join(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::vector<Value> items;
  items.reserve(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) items.push_back(Arg(ev, c, f, i));
  if (!items.empty() && items.size() <= 2 && items.back().IsList()) {
    std::vector<Value> expanded;
    expanded.push_back(items.size() == 2 ? items[0] : Value::String(""));
    for (const Value& v : items.back().AsList()) expanded.push_back(v);
    return JoinValues(expanded);
  }
  return JoinValues(items);
}

// substr(s, offset [, length]): a negative offset counts from the end; a negative length leaves
// that many characters off the end. Out-of-range requests are clipped, never an error.
Value Substr(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2 && c.args.size() != 3) return Value::Error();
  Value s = Arg(ev, c, f, 0), off = Arg(ev, c, f, 1);
  Value len = c.args.size() == 3 ? Arg(ev, c, f, 2) : Value::Integer(INT64_MAX);
  if (s.IsUndefined() || off.IsUndefined() || len.IsUndefined()) return Value();
  if (!s.IsString() || !off.IsInteger() || !len.IsInteger()) return Value::Error();
  auto text = s.AsString();
  auto size = static_cast<int64_t>(text.size());
  int64_t start = off.AsInteger();
  if (start < 0) start = std::max<int64_t>(0, size + start);
  if (start >= size) return Value::String("");
  int64_t n = len.AsInteger();
  int64_t end = n < 0 ? size + n : (n > size - start ? size : start + n);
  if (end <= start) return Value::String("");
  return Value::String(text.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)));
}

Value Size(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsUndefined()) return v;
  if (v.IsString()) return Value::Integer(static_cast<int64_t>(v.AsString().size()));
  if (v.IsList()) return Value::Integer(static_cast<int64_t>(v.AsList().size()));
  if (v.IsClassAd()) return Value::Integer(static_cast<int64_t>(v.AsClassAd()->size()));
  return Value::Error();
}

template <bool kUpper>
Value ChangeCase(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = ToStringValue(Arg(ev, c, f, 0));
  if (!v.IsString()) return v;
  std::string text(v.AsString());
  for (char& ch : text) {
    auto u = static_cast<unsigned char>(ch);
    ch = static_cast<char>(kUpper ? std::toupper(u) : std::tolower(u));
  }
  return Value::String(text);
}

// The two arguments converted to text for a comparison: UNDEFINED when either is UNDEFINED,
// ERROR when either cannot be converted; otherwise true with *x and *y set.
bool TwoTexts(Evaluator& ev, const CallExpr& c, const Frame& f, std::string* x, std::string* y,
              Value* out) {
  if (c.args.size() != 2) {
    *out = Value::Error();
    return false;
  }
  Value a = Arg(ev, c, f, 0), b = Arg(ev, c, f, 1);
  if (a.IsUndefined() || b.IsUndefined()) {
    *out = Value();
    return false;
  }
  if (!AppendConverted(*x, a) || !AppendConverted(*y, b)) {
    *out = Value::Error();
    return false;
  }
  return true;
}

// strcmp/stricmp: -1, 0 or 1.
template <bool kIgnoreCase>
Value StrCmp(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::string x, y;
  Value out;
  if (!TwoTexts(ev, c, f, &x, &y, &out)) return out;
  int cmp = kIgnoreCase ? strcasecmp(x.c_str(), y.c_str()) : std::strcmp(x.c_str(), y.c_str());
  return Value::Integer(cmp < 0 ? -1 : (cmp > 0 ? 1 : 0));
}

// ---- version comparison ----

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// HTCondor's "natural" comparison (strverscmp's order): where the first difference falls in a
// run of digits, the runs compare as numbers, except that more leading zeros sort first
// (000 < 00 < 01 < 010 < 09 < 0 < 1 < 9 < 10). Returns HTCondor's value: negative, 0, positive.
int NaturalCompare(const std::string& a, const std::string& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  auto at = [](const std::string& s, size_t i) { return i < s.size() ? s[i] : '\0'; };
  if (k == a.size() && k == b.size()) return 0;
  size_t n = k;  // start of the digit run (common to both) that holds the difference
  while (n > 0 && IsDigit(a[n - 1])) --n;
  if (n == k && (!IsDigit(at(a, k)) || !IsDigit(at(b, k)))) return at(a, k) - at(b, k);
  auto zeros = [&](const std::string& s) {
    size_t z = n;
    while (at(s, z) == '0') ++z;
    if (z > n && !IsDigit(at(s, z))) --z;  // a lone final zero is the number, not padding
    return static_cast<int>(z - n);
  };
  int za = zeros(a), zb = zeros(b);
  if (za != zb) return zb - za;
  if (za > 0) return at(a, k) - at(b, k);
  auto run = [&](const std::string& s) {
    size_t e = n;
    while (IsDigit(at(s, e))) ++e;
    return static_cast<int>(e - n);
  };
  int ra = run(a), rb = run(b);
  return ra != rb ? ra - rb : at(a, k) - at(b, k);
}

enum class VersionOp { kCmp, kLt, kLe, kGt, kGe, kEq };

template <VersionOp kOp>
Value VersionCompare(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::string x, y;
  Value out;
  if (!TwoTexts(ev, c, f, &x, &y, &out)) return out;
  int r = NaturalCompare(x, y);
  switch (kOp) {
    case VersionOp::kCmp:
      return Value::Integer(r);
    case VersionOp::kLt:
      return Value::Bool(r < 0);
    case VersionOp::kLe:
      return Value::Bool(r <= 0);
    case VersionOp::kGt:
      return Value::Bool(r > 0);
    case VersionOp::kGe:
      return Value::Bool(r >= 0);
    case VersionOp::kEq:
      return Value::Bool(r == 0);
  }
  return Value::Error();
}

// version_in_range(v, min, max): versionLE(min, v) && versionLE(v, max). UNDEFINED when min or
// max is UNDEFINED; an UNDEFINED v is ERROR, as in HTCondor.
Value VersionInRange(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 3) return Value::Error();
  Value v = Arg(ev, c, f, 0), lo = Arg(ev, c, f, 1), hi = Arg(ev, c, f, 2);
  if (lo.IsUndefined() || hi.IsUndefined()) return Value();
  std::string sv, slo, shi;
  if (!AppendConverted(sv, v) || !AppendConverted(slo, lo) || !AppendConverted(shi, hi)) {
    return Value::Error();
  }
  return Value::Bool(NaturalCompare(slo, sv) <= 0 && NaturalCompare(sv, shi) <= 0);
}

// ---- splitting ----

// split(s [, separators]): the pieces of s between separator characters (default ", \t"). Blank
// separators merge with their neighbours, but a repeated non-blank separator marks an empty
// item: "a,,b" is { "a", "", "b" }, "a, b" is { "a", "b" }.
Value SplitFn(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1 && c.args.size() != 2) return Value::Error();
  Value s = Arg(ev, c, f, 0);
  Value seps = c.args.size() == 2 ? Arg(ev, c, f, 1) : Value::String(", \t");
  if (!s.IsString() || !seps.IsString()) return Value::Error();
  std::string_view text = s.AsString(), sep = seps.AsString();
  std::vector<Value> items;
  size_t last = 0;
  int prev_sep = -1;  // the last non-blank separator seen
  if (!sep.empty()) {
    for (size_t i = text.find_first_of(sep); i != std::string_view::npos;
         i = text.find_first_of(sep, last)) {
      if (i > last) {
        items.push_back(Value::String(text.substr(last, i - last)));
      } else if (!std::isspace(prev_sep) && prev_sep == static_cast<unsigned char>(text[i])) {
        items.push_back(Value::String(""));
      }
      if (!std::isspace(static_cast<unsigned char>(text[i]))) {
        prev_sep = static_cast<unsigned char>(text[i]);
      }
      last = i + 1;
    }
  }
  if (text.size() > last) items.push_back(Value::String(text.substr(last)));
  return Value::List(std::move(items));
}

// splitUserName("user@domain") is { "user", "domain" }, without '@' { name, "" };
// splitSlotName("slot1@host") is { "slot1", "host" }, without '@' { "", name }.
template <bool kSlot>
Value SplitAt(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value s = Arg(ev, c, f, 0);
  if (!s.IsString()) return Value::Error();
  std::string_view text = s.AsString();
  size_t at = text.find('@');
  std::vector<Value> pair;
  if (at == std::string_view::npos) {
    pair.push_back(Value::String(kSlot ? "" : text));
    pair.push_back(Value::String(kSlot ? text : ""));
  } else {
    pair.push_back(Value::String(text.substr(0, at)));
    pair.push_back(Value::String(text.substr(at + 1)));
  }
  return Value::List(std::move(pair));
}

constexpr BuiltinEntry kStringFunctions[] = {
    {"strcat", StrCat},
    {"join", Join},
    {"substr", Substr},
    {"size", Size},
    {"length", Size},  // Kite's alias; not in HTCondor
    {"toupper", ChangeCase<true>},
    {"tolower", ChangeCase<false>},
    {"strcmp", StrCmp<false>},
    {"stricmp", StrCmp<true>},
    {"versioncmp", VersionCompare<VersionOp::kCmp>},
    {"versionlt", VersionCompare<VersionOp::kLt>},
    {"versionle", VersionCompare<VersionOp::kLe>},
    {"versiongt", VersionCompare<VersionOp::kGt>},
    {"versionge", VersionCompare<VersionOp::kGe>},
    {"versioneq", VersionCompare<VersionOp::kEq>},
    {"version_in_range", VersionInRange},
    {"split", SplitFn},
    {"splitusername", SplitAt<false>},
    {"splitslotname", SplitAt<true>},
};

}  // namespace

std::span<const BuiltinEntry> StringFunctions() {
  return kStringFunctions;
}

}  // namespace kite::classad
