// The evaluator: HTCondor's three-valued semantics for references and operators.
#include "classad/eval.h"

#include <strings.h>
#include <cmath>
#include <cstring>
#include <limits>

namespace kite::classad {
namespace {

const Value& UndefinedValue() {
  static const Value v;
  return v;
}

// Counts recursion depth for the life of one Eval call.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  bool exceeded() const { return depth_ > kMaxEvalDepth; }

 private:
  int& depth_;
};

bool CompareResult(Op op, int cmp) {
  switch (op) {
    case Op::kEq:
      return cmp == 0;
    case Op::kNe:
      return cmp != 0;
    case Op::kLt:
      return cmp < 0;
    case Op::kLe:
      return cmp <= 0;
    case Op::kGt:
      return cmp > 0;
    case Op::kGe:
      return cmp >= 0;
    default:
      return false;
  }
}

// Booleans take part in arithmetic and comparison as 0 and 1, as in HTCondor.
bool IntLike(const Value& v, int64_t* i) {
  if (v.IsInteger()) {
    *i = v.AsInteger();
    return true;
  }
  if (v.IsBool()) {
    *i = v.AsBool() ? 1 : 0;
    return true;
  }
  return false;
}

bool NumberLike(const Value& v) {
  return v.IsNumber() || v.IsBool();
}

double AsDouble(const Value& v) {
  if (v.IsBool()) return v.AsBool() ? 1.0 : 0.0;
  return v.AsNumber();
}

Value IntArithmetic(Op op, int64_t a, int64_t b) {
  // Wrapping arithmetic through unsigned: overflow is defined, never a trap.
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Op::kAdd:
      return Value::Integer(static_cast<int64_t>(ua + ub));
    case Op::kSub:
      return Value::Integer(static_cast<int64_t>(ua - ub));
    case Op::kMul:
      return Value::Integer(static_cast<int64_t>(ua * ub));
    case Op::kDiv:
      if (b == 0) return Value::Error();
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        return Value::Integer(std::numeric_limits<int64_t>::max());
      }
      return Value::Integer(a / b);
    case Op::kMod:
      if (b == 0) return Value::Error();
      if (b == -1) return Value::Integer(0);
      return Value::Integer(a % b);
    default:
      return Value::Error();
  }
}

// Shifts as HTCondor computes them on x86-64, where a shift count is taken modulo 64
// (1 << 64 is 1), except that >> of a negative number by 64 or more gives -1. Written without
// undefined behaviour.
int64_t ShiftLeft(int64_t x, int64_t n) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) << (n & 63));
}
int64_t ShiftRight(int64_t x, int64_t n) {
  if (x >= 0) return x >> (n & 63);
  if (n <= 0) return x;  // HTCondor shifts a negative number n times, one bit at a time
  return n >= 64 ? -1 : x >> n;
}
int64_t ShiftRightUnsigned(int64_t x, int64_t n) {
  if (x >= 0) return x >> (n & 63);
  auto half = static_cast<uint64_t>(x) >> 1;  // the sign bit cleared
  return static_cast<int64_t>(half >> ((static_cast<uint64_t>(n) - 1) & 63));
}

// Instants compare with instants only, by the moment (not the zone they are shown in). Kept out
// of line: Compare is on every hot path and instants are rare.
[[gnu::noinline, gnu::cold]] Value CompareTimes(Op op, const Value& a, const Value& b) {
  if (!a.IsAbsTime() || !b.IsAbsTime()) return Value::Error();
  int64_t x = a.AsAbsTimeSeconds(), y = b.AsAbsTimeSeconds();
  return Value::Bool(CompareResult(op, x < y ? -1 : (x > y ? 1 : 0)));
}

}  // namespace

Value Evaluator::Compare(Op op, const Value& a, const Value& b) {
  if (op == Op::kIs) return Value::Bool(a.IdenticalTo(b));
  if (op == Op::kIsnt) return Value::Bool(!a.IdenticalTo(b));
  if (a.IsError() || b.IsError()) return Value::Error();
  if (a.IsUndefined() || b.IsUndefined()) return Value::Undefined();
  if (a.IsString() && b.IsString()) {
    std::string_view x = a.AsString(), y = b.AsString();
    // strcasecmp semantics on the common prefix, then length.
    size_t n = std::min(x.size(), y.size());
    int cmp = n == 0 ? 0 : strncasecmp(x.data(), y.data(), n);
    if (cmp == 0 && x.size() != y.size()) cmp = x.size() < y.size() ? -1 : 1;
    return Value::Bool(CompareResult(op, cmp));
  }
  int64_t i = 0, j = 0;
  if (IntLike(a, &i) && IntLike(b, &j)) {
    return Value::Bool(CompareResult(op, i < j ? -1 : (i > j ? 1 : 0)));
  }
  if (a.IsAbsTime() || b.IsAbsTime()) return CompareTimes(op, a, b);
  if (NumberLike(a) && NumberLike(b)) {
    double x = AsDouble(a), y = AsDouble(b);
    switch (op) {
      case Op::kEq:
        return Value::Bool(x == y);
      case Op::kNe:
        return Value::Bool(x != y);
      case Op::kLt:
        return Value::Bool(x < y);
      case Op::kLe:
        return Value::Bool(x <= y);
      case Op::kGt:
        return Value::Bool(x > y);
      case Op::kGe:
        return Value::Bool(x >= y);
      default:
        return Value::Error();
    }
  }
  return Value::Error();  // string vs number, lists, ads
}

Value Evaluator::Arithmetic(Op op, const Value& a, const Value& b) {
  if (a.IsError() || b.IsError()) return Value::Error();
  if (a.IsUndefined() || b.IsUndefined()) return Value::Undefined();
  int64_t i = 0, j = 0;
  if (IntLike(a, &i) && IntLike(b, &j)) return IntArithmetic(op, i, j);
  if (a.IsAbsTime() || b.IsAbsTime()) return TimeArithmetic(op, a, b);
  if (!NumberLike(a) || !NumberLike(b)) return Value::Error();
  double x = AsDouble(a), y = AsDouble(b), r = 0;
  switch (op) {
    case Op::kAdd:
      r = x + y;
      break;
    case Op::kSub:
      r = x - y;
      break;
    case Op::kMul:
      r = x * y;
      break;
    case Op::kDiv:
      r = x / y;
      break;
    default:
      return Value::Error();  // % is defined on integers only
  }
  // HTCondor's rule: a result of +infinity (overflow, or x / 0.0 with x > 0) is ERROR;
  // -infinity and NaN are values.
  return r == std::numeric_limits<double>::infinity() ? Value::Error() : Value::Real(r);
}

Value Evaluator::Bitwise(Op op, const Value& a, const Value& b) {
  if (a.IsError() || b.IsError()) return Value::Error();
  if (a.IsUndefined() || b.IsUndefined()) return Value::Undefined();
  if (!a.IsInteger() || !b.IsInteger()) return Value::Error();
  int64_t x = a.AsInteger(), y = b.AsInteger();
  switch (op) {
    case Op::kBitAnd:
      return Value::Integer(x & y);
    case Op::kBitOr:
      return Value::Integer(x | y);
    case Op::kBitXor:
      return Value::Integer(x ^ y);
    case Op::kShl:
      return Value::Integer(ShiftLeft(x, y));
    case Op::kShr:
      return Value::Integer(ShiftRight(x, y));
    case Op::kUShr:
      return Value::Integer(ShiftRightUnsigned(x, y));
    default:
      return Value::Error();
  }
}

// Instant +/- seconds is an instant (in the same zone); instant - instant is the seconds between
// them (a real, as relTime values are). Nothing else is defined on instants.
Value Evaluator::TimeArithmetic(Op op, const Value& a, const Value& b) {
  auto seconds = [](const Value& v, int64_t* s) {
    if (!v.IsNumber()) return false;
    double d = v.AsNumber();
    if (!(d > -9.2e18 && d < 9.2e18)) return false;
    *s = static_cast<int64_t>(d);
    return true;
  };
  auto shifted = [](const Value& t, int64_t by) {
    return Value::AbsTime(static_cast<int64_t>(static_cast<uint64_t>(t.AsAbsTimeSeconds()) +
                                               static_cast<uint64_t>(by)),
                          t.AsAbsTimeOffset());
  };
  int64_t n = 0;
  if (a.IsAbsTime() && b.IsAbsTime()) {
    if (op != Op::kSub) return Value::Error();
    return Value::Real(static_cast<double>(a.AsAbsTimeSeconds()) -
                       static_cast<double>(b.AsAbsTimeSeconds()));
  }
  if (a.IsAbsTime() && seconds(b, &n) && (op == Op::kAdd || op == Op::kSub)) {
    return shifted(a, op == Op::kAdd ? n : static_cast<int64_t>(0 - static_cast<uint64_t>(n)));
  }
  if (b.IsAbsTime() && seconds(a, &n) && op == Op::kAdd) return shifted(b, n);
  return Value::Error();
}

Value Evaluator::UnaryOp(Op op, const Value& a) {
  if (a.IsExceptional()) return a;
  switch (op) {
    case Op::kPlus:
      return a.IsNumber() ? a : Value::Error();
    case Op::kNeg:
      if (a.IsInteger())
        return Value::Integer(static_cast<int64_t>(0 - static_cast<uint64_t>(a.AsInteger())));
      if (a.IsReal()) return Value::Real(-a.AsReal());
      return Value::Error();
    case Op::kNot: {
      bool b = false;
      return a.BoolEquivalent(&b) ? Value::Bool(!b) : Value::Error();
    }
    case Op::kBitNot:
      return a.IsInteger() ? Value::Integer(~a.AsInteger()) : Value::Error();
    default:
      return Value::Error();
  }
}

bool Evaluator::Resolve(const AttrRefExpr& ref, const Frame& f, Found* out) const {
  uint32_t key = ref.name.key;
  switch (ref.scope()) {
    case Scope::kMy:
      if (f.my == nullptr) return false;
      out->expr = f.my->FindKey(key);
      out->frame = f;
      return out->expr != nullptr;
    case Scope::kTarget:
      if (f.target == nullptr) return false;
      out->expr = f.target->FindKey(key);
      out->frame = Frame{f.target, f.my, nullptr};
      return out->expr != nullptr;
    case Scope::kNone:
      for (const Frame* fr = &f; fr != nullptr; fr = fr->outer) {
        if (fr->my == nullptr) continue;
        if ((out->expr = fr->my->FindKey(key)) != nullptr) {
          out->frame = *fr;
          return true;
        }
      }
      if (f.target != nullptr && (out->expr = f.target->FindKey(key)) != nullptr) {
        out->frame = Frame{f.target, f.my, nullptr};
        return true;
      }
      return false;
  }
  return false;
}

Value Evaluator::EvalAttrRef(const AttrRefExpr& ref, const Frame& f) {
  Found found;
  if (Resolve(ref, f, &found)) return EvalAttribute(*found.expr, found.frame);
  if (ref.scope() == Scope::kNone) {
    // A bare MY or TARGET that is not an attribute names the ad itself.
    static const uint32_t kMyKey = InternName("my").key;
    static const uint32_t kTargetKey = InternName("target").key;
    if (ref.name.key == kMyKey) return Value::AdRef(f.my);
    if (ref.name.key == kTargetKey) return Value::AdRef(f.target);
  }
  return Value();
}

Value EvalMember(Evaluator& ev, const ClassAd& ad, uint32_t key, const Frame& outer) {
  const Expr* e = ad.FindKey(key);
  if (e == nullptr) return Value();
  return ev.EvalAttribute(*e, Frame{&ad, outer.target, &outer});
}

Value Evaluator::EvalAttribute(const Expr& bound, const Frame& f) {
  if (bound.kind() == ExprKind::kLiteral) return static_cast<const LiteralExpr&>(bound).value;
  for (const auto& [expr, my] : active_) {
    if (expr == &bound && my == f.my) return Value::Error();
  }
  active_.emplace_back(&bound, f.my);
  Value v = Eval(bound, f);
  active_.pop_back();
  return v;
}

Value Evaluator::EvalSelect(const SelectExpr& sel, const Frame& f) {
  size_t mark = scopes_.size();
  Lexical scope;
  Value v = ScopedSelect(sel, f, &scope);
  scopes_.Truncate(mark);  // no frame outlives the selection that made it
  return v;
}

namespace {
// Expressions whose value may be a record or list with a lexical scope.
bool MayYieldRecord(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kRecord:
    case ExprKind::kAttrRef:
    case ExprKind::kSelect:
    case ExprKind::kList:
      return true;
    case ExprKind::kBinary:
      return static_cast<const BinaryExpr&>(e).op() == Op::kSubscript;
    default:
      return false;
  }
}
}  // namespace

Value Evaluator::ScopedAttribute(const Expr& bound, const Frame& frame, Lexical* scope) {
  *scope = Lexical{};
  if (!MayYieldRecord(bound)) return EvalAttribute(bound, frame);
  for (const auto& [expr, my] : active_) {
    if (expr == &bound && my == frame.my) return Value::Error();
  }
  active_.emplace_back(&bound, frame.my);
  const Frame& stored = scopes_.Push(frame);
  Value v = EvalWithScope(bound, stored, scope);
  active_.pop_back();
  return v;
}

Value Evaluator::ScopedMember(uint32_t key, const Frame& record, Lexical* scope) {
  for (const Frame* fr = &record; fr != nullptr; fr = fr->outer) {
    if (fr->my == nullptr) continue;
    if (const Expr* e = fr->my->FindKey(key)) return ScopedAttribute(*e, *fr, scope);
  }
  *scope = Lexical{};
  return Value();
}

// HTCondor applies a selection to every ad in a list; ads written in the list literal keep
// their lexical scope.
Value Evaluator::SelectFromList(const Value& list, const Lexical& where, uint32_t key,
                                const Frame& f) {
  const auto& items = list.AsList();
  std::vector<Value> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].IsClassAd()) return Value::Error();
    const ClassAd* ad = items[i].AsClassAd();
    const Expr* written = where.list != nullptr && i < where.list->items.size()
                              ? where.list->items[i].get()
                              : nullptr;
    if (written != nullptr && written->kind() == ExprKind::kRecord &&
        static_cast<const RecordExpr*>(written)->ad.get() == ad) {
      Lexical ignored;
      out.push_back(ScopedMember(key, scopes_.Push(Frame{ad, f.target, where.frame}), &ignored));
    } else {
      out.push_back(EvalMember(*this, *ad, key, f));
    }
  }
  return Value::List(std::move(out));
}

Value Evaluator::ScopedSelect(const SelectExpr& sel, const Frame& f, Lexical* scope) {
  *scope = Lexical{};
  Lexical base_scope;
  Value base = EvalWithScope(*sel.base, f, &base_scope);
  if (base.IsExceptional()) return base;
  if (base.IsClassAd()) {
    const ClassAd* ad = base.AsClassAd();
    if (base_scope.frame != nullptr && base_scope.list == nullptr) {
      return ScopedMember(sel.name.key, *base_scope.frame, scope);
    }
    const Expr* member = ad->FindKey(sel.name.key);
    if (member == nullptr) return Value();
    return ScopedAttribute(*member, scopes_.Push(Frame{ad, f.target, &f}), scope);
  }
  if (base.IsList()) return SelectFromList(base, base_scope, sel.name.key, f);
  return Value::Error();
}

Value Evaluator::EvalWithScope(const Expr& e, const Frame& f, Lexical* scope) {
  *scope = Lexical{};
  DepthGuard guard(depth_);
  if (guard.exceeded()) return Value::Error();
  switch (e.kind()) {
    case ExprKind::kRecord: {
      const auto& r = static_cast<const RecordExpr&>(e);
      scope->frame = &scopes_.Push(Frame{r.ad.get(), f.target, &f});
      return Value::Ad(r.ad);
    }
    case ExprKind::kList:
      scope->frame = &f;
      scope->list = &static_cast<const ListExpr&>(e);
      return EvalList(*scope->list, f);
    case ExprKind::kAttrRef: {
      const auto& ref = static_cast<const AttrRefExpr&>(e);
      Found found;
      if (!Resolve(ref, f, &found)) return EvalAttrRef(ref, f);
      return ScopedAttribute(*found.expr, found.frame, scope);
    }
    case ExprKind::kSelect:
      return ScopedSelect(static_cast<const SelectExpr&>(e), f, scope);
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      if (b.op() == Op::kSubscript) return ScopedSubscript(b, f, scope);
      return Eval(e, f);
    }
    default:
      return Eval(e, f);
  }
}

Value Evaluator::EvalLogical(const BinaryExpr& b, const Frame& f) {
  bool is_and = b.op() == Op::kAnd;
  Value s1;
  const Value& a = Peek(*b.lhs, f, s1);
  bool ba = false;
  bool a_bool = a.BoolEquivalent(&ba);
  if (a_bool && ba != is_and) return Value::Bool(ba);      // false && x, true || x
  if (!a_bool && !a.IsUndefined()) return Value::Error();  // ERROR, or not a boolean
  Value s2;
  const Value& c = Peek(*b.rhs, f, s2);
  bool bc = false;
  bool c_bool = c.BoolEquivalent(&bc);
  if (!c_bool) return c.IsExceptional() ? c : Value::Error();
  if (a_bool) return Value::Bool(bc);  // a is the neutral element here
  // a is UNDEFINED: a decisive right side wins, otherwise the result stays UNDEFINED.
  if (bc != is_and) return Value::Bool(bc);
  return Value();
}

Value Evaluator::EvalSubscript(const BinaryExpr& b, const Frame& f) {
  size_t mark = scopes_.size();
  Lexical scope;
  Value out = ScopedSubscript(b, f, &scope);
  scopes_.Truncate(mark);
  return out;
}

// x[i] of a list, x["name"] of an ad (the ad's own attribute only, as HTCondor looks it up; the
// result keeps its lexical scope for a selection that follows).
Value Evaluator::ScopedSubscript(const BinaryExpr& b, const Frame& f, Lexical* scope) {
  *scope = Lexical{};
  Lexical base_scope;
  Value base = MayYieldRecord(*b.lhs) ? EvalWithScope(*b.lhs, f, &base_scope) : Eval(*b.lhs, f);
  Value s2;
  const Value& index = Peek(*b.rhs, f, s2);
  if (base.IsError() || index.IsError()) return Value::Error();
  if (base.IsUndefined() || index.IsUndefined()) return Value();
  if (base.IsList() && index.IsInteger()) {
    const auto& items = base.AsList();
    int64_t i = index.AsInteger();
    if (i < 0 || static_cast<uint64_t>(i) >= items.size()) return Value::Error();
    return items[static_cast<size_t>(i)];
  }
  if (base.IsClassAd() && index.IsString()) {
    auto key = FindNameKey(index.AsString());
    const Expr* member = key ? base.AsClassAd()->FindKey(*key) : nullptr;
    if (member == nullptr) return Value();
    const Frame& frame = base_scope.frame != nullptr && base_scope.list == nullptr
                             ? *base_scope.frame
                             : scopes_.Push(Frame{base.AsClassAd(), f.target, &f});
    return ScopedAttribute(*member, frame, scope);
  }
  return Value::Error();
}

Value Evaluator::EvalBinary(const BinaryExpr& b, const Frame& f) {
  Op op = b.op();
  if (op == Op::kAnd || op == Op::kOr) return EvalLogical(b, f);
  if (op == Op::kSubscript) return EvalSubscript(b, f);
  if (op == Op::kElvis) {
    Value a = Eval(*b.lhs, f);
    return a.IsUndefined() ? Eval(*b.rhs, f) : a;
  }
  Value s1, s2;
  const Value& x = Peek(*b.lhs, f, s1);
  const Value& y = Peek(*b.rhs, f, s2);
  if (IsComparison(op)) return Compare(op, x, y);
  if (IsArithmetic(op)) return Arithmetic(op, x, y);
  return Bitwise(op, x, y);
}

Value Evaluator::EvalTernary(const TernaryExpr& t, const Frame& f) {
  Value s;
  const Value& c = Peek(*t.cond, f, s);
  if (c.IsUndefined()) return Value();
  bool b = false;
  if (!c.BoolEquivalent(&b)) return Value::Error();
  return Eval(b ? *t.then_expr : *t.else_expr, f);
}

Value Evaluator::EvalList(const ListExpr& l, const Frame& f) {
  std::vector<Value> items;
  items.reserve(l.items.size());
  for (const auto& item : l.items) items.push_back(Eval(*item, f));
  return Value::List(std::move(items));
}

Value Evaluator::Eval(const Expr& e, const Frame& f) {
  DepthGuard guard(depth_);
  if (guard.exceeded()) return Value::Error();
  switch (e.kind()) {
    case ExprKind::kLiteral:
      return static_cast<const LiteralExpr&>(e).value;
    case ExprKind::kAttrRef:
      return EvalAttrRef(static_cast<const AttrRefExpr&>(e), f);
    case ExprKind::kSelect:
      return EvalSelect(static_cast<const SelectExpr&>(e), f);
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      Value s;
      return UnaryOp(u.op(), Peek(*u.operand, f, s));
    }
    case ExprKind::kBinary:
      return EvalBinary(static_cast<const BinaryExpr&>(e), f);
    case ExprKind::kTernary:
      return EvalTernary(static_cast<const TernaryExpr&>(e), f);
    case ExprKind::kCall: {
      const auto& c = static_cast<const CallExpr&>(e);
      return c.fn ? c.fn(*this, c, f) : Value::Error();
    }
    case ExprKind::kList:
      return EvalList(static_cast<const ListExpr&>(e), f);
    case ExprKind::kRecord:
      return Value::Ad(static_cast<const RecordExpr&>(e).ad);
  }
  return Value::Error();
}

const Value& Evaluator::Peek(const Expr& e, const Frame& f, Value& scratch) {
  if (e.kind() == ExprKind::kLiteral) return static_cast<const LiteralExpr&>(e).value;
  if (e.kind() == ExprKind::kAttrRef) {
    const auto& ref = static_cast<const AttrRefExpr&>(e);
    Found found;
    if (Resolve(ref, f, &found)) {
      if (found.expr->kind() == ExprKind::kLiteral) {
        return static_cast<const LiteralExpr*>(found.expr)->value;
      }
      DepthGuard guard(depth_);
      if (guard.exceeded()) return scratch = Value::Error();
      return scratch = EvalAttribute(*found.expr, found.frame);
    }
    if (ref.scope() != Scope::kNone) return UndefinedValue();
  }
  return scratch = Eval(e, f);
}

Value EvaluateExpr(const Expr& expr, const ClassAd* my, const ClassAd* target) {
  Evaluator ev;
  return ev.Eval(expr, Frame{my, target, nullptr});
}

}  // namespace kite::classad
