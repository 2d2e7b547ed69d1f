// Built-in functions over lists ({ 1, 2 }) and over string lists ("a, b"), as HTCondor defines
// them (the string-list ones as its daemons register them: their default separators and their
// treatment of UNDEFINED differ from function to function, and are kept).
#include <cstdio>
#include <set>
#include <string>

#include "classad/functions_util.h"
#include "common/strings.h"

namespace kite::classad {
namespace {

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

// The single list argument of sum/avg/min/max: false with *out set (UNDEFINED for an UNDEFINED
// argument, ERROR otherwise) when there is no list.
bool ListArg(Evaluator& ev, const CallExpr& c, const Frame& f, Value* list, Value* out) {
  if (c.args.size() != 1) {
    *out = Value::Error();
    return false;
  }
  *list = Arg(ev, c, f, 0);
  if (list->IsList()) return true;
  *out = list->IsUndefined() ? Value() : Value::Error();
  return false;
}

// sum(list), avg(list): UNDEFINED items are skipped; another non-number is ERROR. sum({}) is 0;
// avg of nothing is 0 too (an integer), as HTCondor computes it.
template <bool kAverage>
Value SumAvg(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Value list, out;
  if (!ListArg(ev, c, f, &list, &out)) return out;
  Value sum = Value::Integer(0);
  int64_t n = 0;
  for (const Value& v : list.AsList()) {
    if (v.IsUndefined()) continue;
    if (!v.IsNumber()) return Value::Error();
    sum = n++ == 0 ? v : Evaluator::Arithmetic(Op::kAdd, sum, v);
  }
  if (!kAverage || n == 0) return sum;
  return Evaluator::Arithmetic(Op::kDiv, sum, Value::Real(static_cast<double>(n)));
}

// min(list), max(list): UNDEFINED items are skipped; UNDEFINED for an empty list.
template <bool kMin>
Value MinMax(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Value list, out;
  if (!ListArg(ev, c, f, &list, &out)) return out;
  Value best;
  for (const Value& v : list.AsList()) {
    if (v.IsUndefined()) continue;
    if (!v.IsNumber()) return Value::Error();
    if (best.IsUndefined() || Evaluator::Compare(kMin ? Op::kLt : Op::kGt, v, best).IsTrue()) {
      best = v;
    }
  }
  return best;
}

bool ComparisonOp(std::string_view name, Op* op) {
  static constexpr struct {
    std::string_view text;
    Op op;
  } kOps[] = {{"<", Op::kLt}, {"<=", Op::kLe}, {"!=", Op::kNe}, {"==", Op::kEq},
              {">", Op::kGt}, {">=", Op::kGe}, {"is", Op::kIs}, {"isnt", Op::kIsnt}};
  for (const auto& o : kOps) {
    if (o.text == name) {
      *op = o.op;
      return true;
    }
  }
  return false;
}

// anyCompare(op, list, x) / allCompare(op, list, x): whether op holds between some / every item
// and x. An item that compares UNDEFINED ends the scan: false for allCompare, and for
// anyCompare the answer so far (false); any other non-boolean comparison is ERROR.
template <bool kAll>
Value ListCompare(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 3) return Value::Error();
  Value name = Arg(ev, c, f, 0);
  if (name.IsUndefined()) return name;
  Op op{};
  if (!name.IsString() || !ComparisonOp(name.AsString(), &op)) return Value::Error();
  Value list = Arg(ev, c, f, 1);
  if (list.IsUndefined()) return list;
  if (!list.IsList()) return Value::Error();
  Value x = Arg(ev, c, f, 2);
  for (const Value& item : list.AsList()) {
    Value r = Evaluator::Compare(op, item, x);
    if (!r.IsBool()) return r.IsUndefined() ? Value::Bool(false) : Value::Error();
    if (r.AsBool() != kAll) return Value::Bool(!kAll);
  }
  return Value::Bool(kAll);
}

// ---- string lists ----

// Arguments that must all be strings (as HTCondor's stringListSize/Sum/...): the list and an
// optional separator set. False with *out = ERROR otherwise.
bool StringArgs(Evaluator& ev, const CallExpr& c, const Frame& f, size_t min, size_t max,
                std::vector<Value>* args, Value* out) {
  if (c.args.size() < min || c.args.size() > max) {
    *out = Value::Error();
    return false;
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    args->push_back(Arg(ev, c, f, i));
    if (!args->back().IsString()) {
      *out = Value::Error();
      return false;
    }
  }
  return true;
}

constexpr std::string_view kCommaSpace = ", ";

Value StringListSize(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::vector<Value> a;
  Value out;
  if (!StringArgs(ev, c, f, 1, 2, &a, &out)) return out;
  auto seps = a.size() == 2 ? a[1].AsString() : kCommaSpace;
  return Value::Integer(static_cast<int64_t>(SplitStringList(a[0].AsString(), seps).size()));
}

enum class ListStat { kSum, kAvg, kMin, kMax };

// stringListSum/Avg/Min/Max: each item read as a number (its leading number, as sscanf reads
// it); ERROR when one is not. The result is an integer unless some item has characters other
// than digits and signs, so stringListAvg("1,2") is 1, as in HTCondor. An empty list gives
// 0.0 for Sum and Avg and UNDEFINED for Min and Max.
template <ListStat kStat>
Value StringListStat(Evaluator& ev, const CallExpr& c, const Frame& f) {
  std::vector<Value> a;
  Value out;
  if (!StringArgs(ev, c, f, 1, 2, &a, &out)) return out;
  auto items = SplitStringList(a[0].AsString(), a.size() == 2 ? a[1].AsString() : kCommaSpace);
  if (items.empty()) {
    return kStat == ListStat::kSum || kStat == ListStat::kAvg ? Value::Real(0.0) : Value();
  }
  double acc = 0;
  bool is_real = false;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item(items[i]);
    double x = 0;
    if (std::sscanf(item.c_str(), "%lf", &x) != 1) return Value::Error();
    if (item.find_first_not_of("+-0123456789") != std::string::npos) is_real = true;
    if (kStat == ListStat::kSum || kStat == ListStat::kAvg) {
      acc += x;
    } else if (i == 0 || (kStat == ListStat::kMin ? x < acc : x > acc)) {
      acc = x;
    }
  }
  if (kStat == ListStat::kAvg) acc /= static_cast<double>(items.size());
  if (is_real) return Value::Real(acc);
  if (!(acc > -9.2233720368547758e18 && acc < 9.2233720368547758e18)) return Value::Error();
  return Value::Integer(static_cast<int64_t>(acc));
}

// The (item, list [, separators]) arguments of stringListMember and stringListSubsetMatch:
// strings or UNDEFINED (which counts as ""); UNDEFINED when both are UNDEFINED. On success the
// three texts are views into `args`.
struct MemberTexts {
  Value args[3];
  std::string_view item, list, seps = ", \t\r\n";
};

bool MemberArgs(Evaluator& ev, const CallExpr& c, const Frame& f, MemberTexts* t, Value* out) {
  if (c.args.size() != 2 && c.args.size() != 3) {
    *out = Value::Error();
    return false;
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    t->args[i] = Arg(ev, c, f, i);
    if (!t->args[i].IsUndefined() && !t->args[i].IsString()) {
      *out = Value::Error();
      return false;
    }
  }
  if (t->args[0].IsUndefined() && t->args[1].IsUndefined()) {
    *out = Value();
    return false;
  }
  if (t->args[0].IsString()) t->item = t->args[0].AsString();
  if (t->args[1].IsString()) t->list = t->args[1].AsString();
  if (t->args[2].IsString()) t->seps = t->args[2].AsString();
  return true;
}

bool Same(std::string_view a, std::string_view b, bool ignore_case) {
  return ignore_case ? kite::EqualsIgnoreCase(a, b) : a == b;
}

bool InList(std::string_view list, std::string_view seps, std::string_view x, bool ignore_case) {
  return AnyItem(list, seps, true,
                 [&](std::string_view item) { return Same(item, x, ignore_case); });
}

// stringListMember(x, list [, seps]) / stringListIMember: whether x is an item of list (items
// trimmed of blanks; default separators: comma and blanks).
template <bool kIgnoreCase>
Value StringListMember(Evaluator& ev, const CallExpr& c, const Frame& f) {
  MemberTexts t;
  Value out;
  if (!MemberArgs(ev, c, f, &t, &out)) return out;
  return Value::Bool(InList(t.list, t.seps, t.item, kIgnoreCase));
}

// stringListSubsetMatch(a, b [, seps]) / stringListISubsetMatch: whether every item of a is an
// item of b; true when a is empty.
template <bool kIgnoreCase>
Value StringListSubsetMatch(Evaluator& ev, const CallExpr& c, const Frame& f) {
  MemberTexts t;
  Value out;
  if (!MemberArgs(ev, c, f, &t, &out)) return out;
  bool missing = AnyItem(t.item, t.seps, true, [&](std::string_view item) {
    return !InList(t.list, t.seps, item, kIgnoreCase);
  });
  return Value::Bool(!missing);
}

// stringListsIntersect(a, b [, seps]): whether the lists share an item (default separators:
// space and comma).
Value StringListsIntersect(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2 && c.args.size() != 3) return Value::Error();
  Value a = Arg(ev, c, f, 0), b = Arg(ev, c, f, 1);
  Value s = c.args.size() == 3 ? Arg(ev, c, f, 2) : Value::String(" ,");
  if (a.IsError() || b.IsError() || s.IsError()) return Value::Error();
  if (a.IsUndefined() || b.IsUndefined() || s.IsUndefined()) return Value();
  if (!a.IsString() || !b.IsString() || !s.IsString()) return Value::Error();
  std::string_view seps = s.AsString().empty() ? std::string_view(" ,") : s.AsString();
  auto right = SplitStringList(b.AsString(), seps);
  std::set<std::string_view> set(right.begin(), right.end());
  for (auto item : SplitStringList(a.AsString(), seps)) {
    if (set.contains(item)) return Value::Bool(true);
  }
  return Value::Bool(false);
}

constexpr BuiltinEntry kListFunctions[] = {
    {"member", Member<false>},
    {"identicalmember", Member<true>},
    {"sum", SumAvg<false>},
    {"avg", SumAvg<true>},
    {"min", MinMax<true>},
    {"max", MinMax<false>},
    {"anycompare", ListCompare<false>},
    {"allcompare", ListCompare<true>},
    {"stringlistsize", StringListSize},
    {"stringlistsum", StringListStat<ListStat::kSum>},
    {"stringlistavg", StringListStat<ListStat::kAvg>},
    {"stringlistmin", StringListStat<ListStat::kMin>},
    {"stringlistmax", StringListStat<ListStat::kMax>},
    {"stringlistmember", StringListMember<false>},
    {"stringlistimember", StringListMember<true>},
    {"stringlistsubsetmatch", StringListSubsetMatch<false>},
    {"stringlistisubsetmatch", StringListSubsetMatch<true>},
    {"stringlistsintersect", StringListsIntersect},
};

}  // namespace

std::span<const BuiltinEntry> ListFunctions() {
  return kListFunctions;
}

}  // namespace kite::classad
