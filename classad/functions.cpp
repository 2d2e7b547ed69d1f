// Built-in ClassAd functions: the name table, type predicates, control, and the functions that
// look at expressions rather than values (eval, unparse, unresolved). HTCondor's definitions
// (its fnCall.cpp and the compatibility functions its daemons register) are the reference.
//
// Common rules: a wrong number of arguments or an argument of the wrong type gives ERROR; an
// UNDEFINED argument where a value is needed gives UNDEFINED; an ERROR argument gives ERROR.
// Where HTCondor departs from these rules for a function, the function says so.
#include <algorithm>
#include <set>
#include <string>

#include "classad/classad.h"
#include "classad/eval.h"
#include "classad/functions_util.h"
#include "common/strings.h"

namespace kite::classad {
namespace {

// ---- type predicates and control ----

template <ValueType T>
Value IsType(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  return Value::Bool(Arg(ev, c, f, 0).type() == T);
}

// isRelTime(x): Kite has no relative-time type (relTime() gives a real), so always false, as in
// the HTCondor build the conformance answers come from.
Value IsRelTime(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  (void)Arg(ev, c, f, 0);
  return Value::Bool(false);
}

Value IfThenElse(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 3) return Value::Error();
  Value cond = Arg(ev, c, f, 0);
  if (cond.IsUndefined()) return cond;
  bool b = false;
  if (!cond.BoolEquivalent(&b)) return Value::Error();
  return Arg(ev, c, f, b ? 1 : 2);
}

Value Debug(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  return Arg(ev, c, f, 0);
}

// ---- expressions as data ----

// eval(x): x converted to a string, parsed, and evaluated in the caller's scope. ERROR when x is
// UNDEFINED or ERROR or the text does not parse.
Value EvalFn(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  std::string text;
  if (!AppendConverted(text, Arg(ev, c, f, 0))) return Value::Error();
  if (ev.depth() >= kMaxEvalDepth) return Value::Error();
  auto expr = ParseExpr(text);
  if (!expr) return Value::Error();
  return ev.Eval(**expr, f);
}

// unparse(attr): the text of the expression bound to `attr` in the current ad, unevaluated; ""
// when it is absent (as HTCondor, which looks the name up as written, so MY.x and a.b give "").
Value UnparseFn(Evaluator&, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  const Expr& arg = *c.args[0];
  if (arg.kind() != ExprKind::kAttrRef && arg.kind() != ExprKind::kSelect) return Value::Error();
  if (arg.kind() != ExprKind::kAttrRef || f.my == nullptr) return Value::String("");
  const auto& ref = static_cast<const AttrRefExpr&>(arg);
  const Expr* bound = ref.scope() == Scope::kNone ? f.my->Lookup(ref.name) : nullptr;
  return Value::String(bound != nullptr ? classad::Unparse(*bound) : std::string());
}

using NameSet = std::set<std::string, bool (*)(const std::string&, const std::string&)>;

bool LessIgnoreCase(const std::string& a, const std::string& b) {
  return kite::ToLower(a) < kite::ToLower(b);
}

// The attribute names `e` refers to that the ad `my` does not define (TARGET.x counts as x).
void ExternalReferences(const Expr& e, const ClassAd* my, NameSet* out) {
  switch (e.kind()) {
    case ExprKind::kAttrRef: {
      const auto& r = static_cast<const AttrRefExpr&>(e);
      if (r.scope() == Scope::kTarget ||
          (r.scope() == Scope::kNone && (my == nullptr || my->Lookup(r.name) == nullptr))) {
        out->insert(std::string(NameText(r.name)));
      }
      return;
    }
    case ExprKind::kSelect:
      ExternalReferences(*static_cast<const SelectExpr&>(e).base, my, out);
      return;
    case ExprKind::kUnary:
      ExternalReferences(*static_cast<const UnaryExpr&>(e).operand, my, out);
      return;
    case ExprKind::kBinary:
      ExternalReferences(*static_cast<const BinaryExpr&>(e).lhs, my, out);
      ExternalReferences(*static_cast<const BinaryExpr&>(e).rhs, my, out);
      return;
    case ExprKind::kTernary: {
      const auto& t = static_cast<const TernaryExpr&>(e);
      for (const Expr* x : {t.cond.get(), t.then_expr.get(), t.else_expr.get()}) {
        ExternalReferences(*x, my, out);
      }
      return;
    }
    case ExprKind::kCall:
      for (const auto& a : static_cast<const CallExpr&>(e).args) ExternalReferences(*a, my, out);
      return;
    case ExprKind::kList:
      for (const auto& a : static_cast<const ListExpr&>(e).items) ExternalReferences(*a, my, out);
      return;
    default:
      return;
  }
}

// unresolved(attr): the names attr's expression refers to that the current ad does not define,
// sorted and comma-separated. unresolved(attr, pattern): whether any of them matches the
// (case-insensitive) regular expression. UNDEFINED when attr is absent.
Value Unresolved(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.empty() || c.args.size() > 2 || c.args[0]->kind() != ExprKind::kAttrRef) {
    return Value::Error();
  }
  const auto& ref = static_cast<const AttrRefExpr&>(*c.args[0]);
  const ClassAd* where = ref.scope() == Scope::kTarget ? f.target : f.my;
  const Expr* bound = where != nullptr ? where->Lookup(ref.name) : nullptr;
  if (bound == nullptr) return Value();
  Value pattern;
  if (c.args.size() == 2) {
    pattern = Arg(ev, c, f, 1);
    if (!pattern.IsString()) return Value::Error();
  }
  NameSet names(LessIgnoreCase);
  ExternalReferences(*bound, f.my, &names);
  if (c.args.size() == 2) {
    for (const auto& name : names) {
      Value m = RegexMatches(pattern.AsString(), name, "i");
      if (m.IsError()) return m;
      if (m.AsBool()) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ',';
    out += name;
  }
  return Value::String(out);
}

constexpr BuiltinEntry kCoreFunctions[] = {
    {"isundefined", IsType<ValueType::kUndefined>},
    {"iserror", IsType<ValueType::kError>},
    {"isstring", IsType<ValueType::kString>},
    {"isinteger", IsType<ValueType::kInteger>},
    {"isreal", IsType<ValueType::kReal>},
    {"isboolean", IsType<ValueType::kBool>},
    {"islist", IsType<ValueType::kList>},
    {"isclassad", IsType<ValueType::kClassAd>},
    {"isabstime", IsType<ValueType::kAbsTime>},
    {"isreltime", IsRelTime},
    {"ifthenelse", IfThenElse},
    {"debug", Debug},
    {"eval", EvalFn},
    {"unparse", UnparseFn},
    {"unresolved", Unresolved},
};

}  // namespace

BuiltinFn FindBuiltin(std::string_view name) {
  for (auto table : {std::span<const BuiltinEntry>(kCoreFunctions), StringFunctions(),
                     ListFunctions(), MathFunctions(), TimeFunctions(), RegexFunctions()}) {
    for (const BuiltinEntry& e : table) {
      if (kite::EqualsIgnoreCase(e.name, name)) return e.fn;
    }
  }
  return nullptr;
}

}  // namespace kite::classad
