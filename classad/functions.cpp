// Built-in ClassAd functions (strcat, substr, regexp, ifThenElse, ...), as HTCondor defines them.
//
// Common rules: a wrong number of arguments or an argument of the wrong type gives ERROR; an
// UNDEFINED argument where a value is needed gives UNDEFINED; an ERROR argument gives ERROR.
#include <regex.h>

#include <strings.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <string>

#include "classad/eval.h"
#include "classad/functions_util.h"
#include "common/strings.h"

namespace kite::classad {
namespace {

using Args = std::vector<ExprPtr>;

Value Arg(Evaluator& ev, const CallExpr& c, const Frame& f, size_t i) {
  return ev.Eval(*c.args[i], f);
}

// The exceptional value to return when `v` is UNDEFINED or ERROR.
bool Exceptional(const Value& v, Value* out) {
  if (!v.IsExceptional()) return false;
  *out = v;
  return true;
}

// ---- type predicates and control ----

template <ValueType T>
Value IsType(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  return Value::Bool(Arg(ev, c, f, 0).type() == T);
}

Value IfThenElse(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 3) return Value::Error();
  Value cond = Arg(ev, c, f, 0);
  Value out;
  if (Exceptional(cond, &out)) return out;
  bool b = false;
  if (!cond.BoolEquivalent(&b)) return Value::Error();
  return Arg(ev, c, f, b ? 1 : 2);
}

Value Debug(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  return Arg(ev, c, f, 0);
}

Value Time(Evaluator&, const CallExpr& c, const Frame&) {
  if (!c.args.empty()) return Value::Error();
  return Value::Integer(static_cast<int64_t>(std::time(nullptr)));
}

// ---- strings ----

Value StrCat(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::string out;
  bool undefined = false;
  for (size_t i = 0; i < c.args.size(); ++i) {
    Value v = Arg(ev, c, f, i);
    if (v.IsError()) return v;
    if (v.IsUndefined()) {
      undefined = true;
      continue;
    }
    if (!AppendAsText(out, v)) return Value::Error();
  }
  return undefined ? Value() : Value::String(out);
}

// join(list) | join(sep, list) | join(sep, a, b, ...); UNDEFINED items are skipped.
Value Join(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.empty()) return Value::Error();
  std::vector<Value> items;
  std::string sep;
  Value first = Arg(ev, c, f, 0);
  Value out;
  if (Exceptional(first, &out)) return out;
  if (c.args.size() == 1) {
    if (!first.IsList()) return Value::Error();
    items = first.AsList();
  } else {
    if (!AppendAsText(sep, first)) return Value::Error();
    Value second = Arg(ev, c, f, 1);
    if (c.args.size() == 2 && second.IsList()) {
      items = second.AsList();
    } else {
      items.push_back(second);
      for (size_t i = 2; i < c.args.size(); ++i) items.push_back(Arg(ev, c, f, i));
    }
  }
  std::string text;
  bool any = false;
  for (const Value& v : items) {
    if (v.IsError()) return v;
    if (v.IsUndefined()) continue;
    if (any) text += sep;
    if (!AppendAsText(text, v)) return Value::Error();
    any = true;
  }
  return Value::String(text);
}

// substr(s, offset [, length]): a negative offset counts from the end; a negative length leaves
// that many characters off the end. Out-of-range requests are clipped, never an error.
Value Substr(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2 && c.args.size() != 3) return Value::Error();
  Value s = Arg(ev, c, f, 0), off = Arg(ev, c, f, 1);
  Value len = c.args.size() == 3 ? Arg(ev, c, f, 2) : Value::Integer(INT64_MAX);
  Value out;
  if (Exceptional(s, &out) || Exceptional(off, &out) || Exceptional(len, &out)) return out;
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
  Value out;
  if (Exceptional(v, &out)) return out;
  if (v.IsString()) return Value::Integer(static_cast<int64_t>(v.AsString().size()));
  if (v.IsList()) return Value::Integer(static_cast<int64_t>(v.AsList().size()));
  if (v.IsClassAd()) return Value::Integer(static_cast<int64_t>(v.AsClassAd()->size()));
  return Value::Error();
}

template <bool kUpper>
Value ChangeCase(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  Value out;
  if (Exceptional(v, &out)) return out;
  std::string text;
  if (!AppendAsText(text, v)) return Value::Error();
  for (char& ch : text) {
    auto u = static_cast<unsigned char>(ch);
    ch = static_cast<char>(kUpper ? std::toupper(u) : std::tolower(u));
  }
  return Value::String(text);
}

// strcmp/stricmp: -1, 0 or 1; non-string scalars compare as their text.
template <bool kIgnoreCase>
Value StrCmp(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2) return Value::Error();
  Value a = Arg(ev, c, f, 0), b = Arg(ev, c, f, 1);
  Value out;
  if (Exceptional(a, &out) || Exceptional(b, &out)) return out;
  std::string x, y;
  if (!AppendAsText(x, a) || !AppendAsText(y, b)) return Value::Error();
  int cmp = kIgnoreCase ? strcasecmp(x.c_str(), y.c_str()) : std::strcmp(x.c_str(), y.c_str());
  return Value::Integer(cmp < 0 ? -1 : (cmp > 0 ? 1 : 0));
}

// ---- regular expressions (POSIX extended) ----

Value RegExp(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2 && c.args.size() != 3) return Value::Error();
  Value pat = Arg(ev, c, f, 0), target = Arg(ev, c, f, 1);
  Value opts = c.args.size() == 3 ? Arg(ev, c, f, 2) : Value::String("");
  Value out;
  if (Exceptional(pat, &out) || Exceptional(target, &out) || Exceptional(opts, &out)) return out;
  if (!pat.IsString() || !target.IsString() || !opts.IsString()) return Value::Error();
  bool icase = opts.AsString().find_first_of("iI") != std::string_view::npos;
  const regex_t* re = CachedRegex(pat.AsString(), icase);
  if (re == nullptr) return Value::Error();
  return Value::Bool(regexec(re, target.AsCString(), 0, nullptr, 0) == 0);
}

// ---- lists ----

template <bool kIdentical>
Value Member(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2) return Value::Error();
  Value x = Arg(ev, c, f, 0), list = Arg(ev, c, f, 1);
  if (list.IsUndefined() || (!kIdentical && x.IsUndefined())) return Value();
  if (!list.IsList() || x.IsList() || x.IsClassAd()) return Value::Error();
  if (!kIdentical && x.IsError()) return Value::Error();
  for (const Value& item : list.AsList()) {
    Value r = Evaluator::Compare(kIdentical ? Op::kIs : Op::kEq, item, x);
    if (r.IsBool() && r.AsBool()) return Value::Bool(true);
  }
  return Value::Bool(false);
}

// The numbers of a list argument (or of several scalar arguments); false on a non-number.
bool NumberArgs(Evaluator& ev, const CallExpr& c, const Frame& f, std::vector<Value>* nums,
                Value* out) {
  std::vector<Value> items;
  if (c.args.size() == 1) {
    Value v = Arg(ev, c, f, 0);
    if (Exceptional(v, out)) return false;
    if (!v.IsList()) {
      *out = Value::Error();
      return false;
    }
    items = v.AsList();
  } else {
    for (size_t i = 0; i < c.args.size(); ++i) items.push_back(Arg(ev, c, f, i));
  }
  for (Value& v : items) {
    if (!v.IsNumber()) {
      *out = Value::Error();
      return false;
    }
    nums->push_back(std::move(v));
  }
  return true;
}

template <bool kAverage>
Value SumAvg(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.empty()) return Value::Error();
  std::vector<Value> nums;
  Value out;
  if (!NumberArgs(ev, c, f, &nums, &out)) return out;
  if (kAverage && nums.empty()) return Value();
  Value sum = Value::Integer(0);
  for (const Value& v : nums) sum = Evaluator::Arithmetic(Op::kAdd, sum, v);
  if (!kAverage) return sum;
  return Evaluator::Arithmetic(Op::kDiv, sum, Value::Real(static_cast<double>(nums.size())));
}

template <bool kMin>
Value MinMax(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.empty()) return Value::Error();
  std::vector<Value> nums;
  Value out;
  if (!NumberArgs(ev, c, f, &nums, &out)) return out;
  if (nums.empty()) return Value();
  Value best = nums[0];
  for (const Value& v : nums) {
    if (Evaluator::Compare(kMin ? Op::kLt : Op::kGt, v, best).IsTrue()) best = v;
  }
  return best;
}

// split(s [, separators]): the non-empty pieces of s; default separators are blanks and commas.
Value SplitFn(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1 && c.args.size() != 2) return Value::Error();
  Value s = Arg(ev, c, f, 0);
  Value seps = c.args.size() == 2 ? Arg(ev, c, f, 1) : Value::String(kDefaultListSeparators);
  Value out;
  if (Exceptional(s, &out) || Exceptional(seps, &out)) return out;
  if (!s.IsString() || !seps.IsString()) return Value::Error();
  std::vector<Value> items;
  for (auto piece : SplitStringList(s.AsString(), seps.AsString())) {
    items.push_back(Value::String(piece));
  }
  return Value::List(std::move(items));
}

}  // namespace

// Functions over string lists, numbers and conversions live in functions_more.cpp.
Value StringListMember(Evaluator&, const CallExpr&, const Frame&);
Value StringListIMember(Evaluator&, const CallExpr&, const Frame&);
Value StringListSize(Evaluator&, const CallExpr&, const Frame&);
Value StringListSum(Evaluator&, const CallExpr&, const Frame&);
Value StringListAvg(Evaluator&, const CallExpr&, const Frame&);
Value StringListMin(Evaluator&, const CallExpr&, const Frame&);
Value StringListMax(Evaluator&, const CallExpr&, const Frame&);
Value ConvInt(Evaluator&, const CallExpr&, const Frame&);
Value ConvReal(Evaluator&, const CallExpr&, const Frame&);
Value ConvString(Evaluator&, const CallExpr&, const Frame&);
Value ConvBool(Evaluator&, const CallExpr&, const Frame&);
Value Floor(Evaluator&, const CallExpr&, const Frame&);
Value Ceiling(Evaluator&, const CallExpr&, const Frame&);
Value Round(Evaluator&, const CallExpr&, const Frame&);
Value Abs(Evaluator&, const CallExpr&, const Frame&);
Value Pow(Evaluator&, const CallExpr&, const Frame&);
Value Quantize(Evaluator&, const CallExpr&, const Frame&);

BuiltinFn FindBuiltin(std::string_view name) {
  struct Entry {
    std::string_view name;
    BuiltinFn fn;
  };
  static constexpr Entry kTable[] = {
      {"isundefined", IsType<ValueType::kUndefined>},
      {"iserror", IsType<ValueType::kError>},
      {"isstring", IsType<ValueType::kString>},
      {"isinteger", IsType<ValueType::kInteger>},
      {"isreal", IsType<ValueType::kReal>},
      {"isboolean", IsType<ValueType::kBool>},
      {"islist", IsType<ValueType::kList>},
      {"isclassad", IsType<ValueType::kClassAd>},
      {"ifthenelse", IfThenElse},
      {"debug", Debug},
      {"time", Time},
      {"strcat", StrCat},
      {"join", Join},
      {"substr", Substr},
      {"size", Size},
      {"length", Size},
      {"toupper", ChangeCase<true>},
      {"tolower", ChangeCase<false>},
      {"strcmp", StrCmp<false>},
      {"stricmp", StrCmp<true>},
      {"regexp", RegExp},
      {"member", Member<false>},
      {"identicalmember", Member<true>},
      {"sum", SumAvg<false>},
      {"avg", SumAvg<true>},
      {"min", MinMax<true>},
      {"max", MinMax<false>},
      {"split", SplitFn},
      {"stringlistmember", StringListMember},
      {"stringlistimember", StringListIMember},
      {"stringlistsize", StringListSize},
      {"stringlistsum", StringListSum},
      {"stringlistavg", StringListAvg},
      {"stringlistmin", StringListMin},
      {"stringlistmax", StringListMax},
      {"int", ConvInt},
      {"real", ConvReal},
      {"string", ConvString},
      {"bool", ConvBool},
      {"floor", Floor},
      {"ceiling", Ceiling},
      {"ceil", Ceiling},
      {"round", Round},
      {"abs", Abs},
      {"pow", Pow},
      {"quantize", Quantize},
  };
  for (const Entry& e : kTable) {
    if (kite::EqualsIgnoreCase(e.name, name)) return e.fn;
  }
  return nullptr;
}

}  // namespace kite::classad
