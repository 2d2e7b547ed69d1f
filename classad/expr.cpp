// Literal constructors, structural equality and the canonical unparser.
#include "classad/expr.h"

#include <array>
#include <cmath>

#include "classad/classad.h"
#include "classad/internal.h"
#include "classad/nodes.h"
#include "classad/parser.h"
#include "common/strings.h"

namespace kite::classad {
namespace {

constexpr int64_t kCacheMin = -16;
constexpr int64_t kCacheMax = 1023;

// Small integers are shared: ads hold many 0s, 1s and status codes, and one node serves them all.
const std::array<ExprPtr, kCacheMax - kCacheMin + 1>& IntegerCache() {
  static const auto* cache = [] {
    auto* c = new std::array<ExprPtr, kCacheMax - kCacheMin + 1>();
    for (int64_t i = kCacheMin; i <= kCacheMax; ++i) {
      (*c)[i - kCacheMin] = std::make_shared<LiteralExpr>(Value::Integer(i));
    }
    return c;
  }();
  return *cache;
}

int NodePrecedence(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kLiteral: {
      const Value& v = static_cast<const LiteralExpr&>(e).value;
      bool negative =
          (v.IsInteger() && v.AsInteger() < 0) || (v.IsReal() && std::signbit(v.AsReal()));
      return negative ? kUnaryPrecedence : kPostfixPrecedence;
    }
    case ExprKind::kUnary:
      return kUnaryPrecedence;
    case ExprKind::kBinary:
      return OpPrecedence(static_cast<const BinaryExpr&>(e).op());
    case ExprKind::kTernary:
      return kTernaryPrecedence;
    default:
      return kPostfixPrecedence;
  }
}

void Emit(std::string& out, const Expr& e, int min_prec);

// Whether `e`, written bare after a minus, starts with a non-negative number that the parser
// would take into the minus as one negative literal: a number itself, or a number defaulted with
// ?: ("- (0 ?: 3)" written "-0 ?: 3" reads back as (-0) ?: 3). A number followed by "." or "["
// is never taken in, and a parenthesized operand is written with its parentheses.
bool LeadsWithFoldableNumber(const Expr& e) {
  if (e.parenthesized()) return false;
  Value v;
  if (IsLiteral(e, &v))
    return v.IsNumber() && (v.IsInteger() ? v.AsInteger() >= 0 : !std::signbit(v.AsReal()));
  if (e.kind() != ExprKind::kBinary) return false;
  const auto& b = static_cast<const BinaryExpr&>(e);
  return b.op() == Op::kElvis && LeadsWithFoldableNumber(*b.lhs);
}

void EmitInner(std::string& out, const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kLiteral:
      static_cast<const LiteralExpr&>(e).value.AppendTo(out);
      return;
    case ExprKind::kAttrRef: {
      const auto& r = static_cast<const AttrRefExpr&>(e);
      if (r.scope() == Scope::kMy) out += "MY.";
      if (r.scope() == Scope::kTarget) out += "TARGET.";
      AppendName(out, NameText(r.name));
      return;
    }
    case ExprKind::kSelect: {
      const auto& s = static_cast<const SelectExpr&>(e);
      Emit(out, *s.base, kPostfixPrecedence);
      out.push_back('.');
      AppendName(out, NameText(s.name));
      return;
    }
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      out += OpText(u.op());
      // "-5" would read back as the literal -5, so a minus before a number keeps parentheses.
      if (u.op() == Op::kNeg && LeadsWithFoldableNumber(*u.operand)) {
        out.push_back('(');
        EmitInner(out, *u.operand);
        out.push_back(')');
        return;
      }
      Emit(out, *u.operand, kUnaryPrecedence);
      return;
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      int prec = OpPrecedence(b.op());
      if (b.op() == Op::kSubscript) {
        Emit(out, *b.lhs, kPostfixPrecedence);
        out.push_back('[');
        Emit(out, *b.rhs, 0);
        out.push_back(']');
        return;
      }
      if (b.op() == Op::kElvis) {
        // x ?: y binds like a postfix operator: its left side is a postfix chain, and its right
        // side may itself be a defaulting chain (a ?: b ?: c is a ?: (b ?: c)).
        Emit(out, *b.lhs, kPostfixPrecedence);
        out += " ?: ";
        Emit(out, *b.rhs, kElvisPrecedence);
        return;
      }
      // Left-associative: an equal-precedence operator needs parentheses only on the right.
      Emit(out, *b.lhs, prec);
      out.push_back(' ');
      out += OpText(b.op());
      out.push_back(' ');
      Emit(out, *b.rhs, prec + 1);
      return;
    }
    case ExprKind::kTernary: {
      const auto& t = static_cast<const TernaryExpr&>(e);
      Emit(out, *t.cond, kTernaryPrecedence + 1);
      out += " ? ";
      Emit(out, *t.then_expr, 0);
      out += " : ";
      Emit(out, *t.else_expr, kTernaryPrecedence);
      return;
    }
    case ExprKind::kCall: {
      const auto& c = static_cast<const CallExpr&>(e);
      out += c.name;
      out.push_back('(');
      for (size_t i = 0; i < c.args.size(); ++i) {
        if (i > 0) out += ", ";
        Emit(out, *c.args[i], 0);
      }
      out.push_back(')');
      return;
    }
    case ExprKind::kList: {
      const auto& l = static_cast<const ListExpr&>(e);
      if (l.items.empty()) {
        out += "{}";
        return;
      }
      out += "{ ";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) out += ", ";
        Emit(out, *l.items[i], 0);
      }
      out += " }";
      return;
    }
    case ExprKind::kRecord:
      internal::AppendNewSyntax(out, *static_cast<const RecordExpr&>(e).ad);
      return;
  }
}

void Emit(std::string& out, const Expr& e, int min_prec) {
  bool parens = e.parenthesized() || NodePrecedence(e) < min_prec;
  if (parens) out.push_back('(');
  EmitInner(out, e);
  if (parens) out.push_back(')');
}

bool SameAds(const ClassAd& a, const ClassAd& b) {
  if (a.size() != b.size()) return false;
  for (const auto& attr : a) {
    const Expr* other = b.FindOwnKey(attr.name_id().key);
    if (other == nullptr || !SameExpr(attr.expr(), *other)) return false;
  }
  return true;
}

bool SameList(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameExpr(*a[i], *b[i])) return false;
  }
  return true;
}

}  // namespace

std::string_view OpText(Op op) {
  switch (op) {
    case Op::kNeg:
      return "-";
    case Op::kPlus:
      return "+";
    case Op::kNot:
      return "!";
    case Op::kBitNot:
      return "~";
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kIs:
      return "=?=";
    case Op::kIsnt:
      return "=!=";
    case Op::kAdd:
      return "+";
    case Op::kSub:
      return "-";
    case Op::kMul:
      return "*";
    case Op::kDiv:
      return "/";
    case Op::kMod:
      return "%";
    case Op::kBitAnd:
      return "&";
    case Op::kBitOr:
      return "|";
    case Op::kBitXor:
      return "^";
    case Op::kShl:
      return "<<";
    case Op::kShr:
      return ">>";
    case Op::kUShr:
      return ">>>";
    case Op::kAnd:
      return "&&";
    case Op::kOr:
      return "||";
    case Op::kSubscript:
      return "[]";
    case Op::kElvis:
      return "?:";
  }
  return "?";
}

int OpPrecedence(Op op) {
  switch (op) {
    case Op::kElvis:
      return kElvisPrecedence;
    case Op::kOr:
      return 2;
    case Op::kAnd:
      return 3;
    case Op::kBitOr:
      return 4;
    case Op::kBitXor:
      return 5;
    case Op::kBitAnd:
      return 6;
    case Op::kEq:
    case Op::kNe:
    case Op::kIs:
    case Op::kIsnt:
      return 7;
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe:
      return 8;
    case Op::kShl:
    case Op::kShr:
    case Op::kUShr:
      return 9;
    case Op::kAdd:
    case Op::kSub:
      return 10;
    case Op::kMul:
    case Op::kDiv:
    case Op::kMod:
      return 11;
    case Op::kNeg:
    case Op::kPlus:
    case Op::kNot:
    case Op::kBitNot:
      return kUnaryPrecedence;
    case Op::kSubscript:
      return kPostfixPrecedence;
  }
  return 0;
}

void AppendUnparse(std::string& out, const Expr& expr) {
  Emit(out, expr, 0);
}

std::string Unparse(const Expr& expr) {
  std::string out;
  AppendUnparse(out, expr);
  return out;
}

ExprPtr MakeInteger(int64_t value) {
  if (value >= kCacheMin && value <= kCacheMax) return IntegerCache()[value - kCacheMin];
  return std::make_shared<LiteralExpr>(Value::Integer(value));
}

ExprPtr MakeReal(double value) {
  return std::make_shared<LiteralExpr>(Value::Real(value));
}

ExprPtr MakeString(std::string_view value) {
  if (value.empty()) {
    static const ExprPtr* empty = new ExprPtr(std::make_shared<LiteralExpr>(Value::String("")));
    return *empty;
  }
  return std::make_shared<LiteralExpr>(Value::String(value));
}

ExprPtr MakeBool(bool value) {
  static const ExprPtr* t = new ExprPtr(std::make_shared<LiteralExpr>(Value::Bool(true)));
  static const ExprPtr* f = new ExprPtr(std::make_shared<LiteralExpr>(Value::Bool(false)));
  return value ? *t : *f;
}

ExprPtr MakeUndefined() {
  static const ExprPtr* u = new ExprPtr(std::make_shared<LiteralExpr>(Value()));
  return *u;
}

ExprPtr MakeError() {
  static const ExprPtr* e = new ExprPtr(std::make_shared<LiteralExpr>(Value::Error()));
  return *e;
}

ExprPtr MakeLiteral(const Value& value) {
  switch (value.type()) {
    case ValueType::kUndefined:
      return MakeUndefined();
    case ValueType::kError:
      return MakeError();
    case ValueType::kBool:
      return MakeBool(value.AsBool());
    case ValueType::kInteger:
      return MakeInteger(value.AsInteger());
    case ValueType::kList: {
      std::vector<ExprPtr> items;
      int depth = 1;
      for (const Value& v : value.AsList()) {
        items.push_back(MakeLiteral(v));
        depth = std::max(depth, items.back()->depth() + 1);
      }
      return std::make_shared<ListExpr>(std::move(items), depth);
    }
    case ValueType::kClassAd: {
      auto ad = std::make_shared<ClassAd>(*value.AsClassAd());
      int depth = 1;
      for (const auto& attr : *ad) depth = std::max(depth, attr.expr().depth() + 1);
      return std::make_shared<RecordExpr>(std::move(ad), depth);
    }
    default:
      return std::make_shared<LiteralExpr>(value);
  }
}

bool IsLiteral(const Expr& expr, Value* value) {
  if (expr.kind() != ExprKind::kLiteral) return false;
  if (value != nullptr) *value = static_cast<const LiteralExpr&>(expr).value;
  return true;
}

bool SameExpr(const Expr& a, const Expr& b) {
  if (&a == &b) return true;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ExprKind::kLiteral:
      return static_cast<const LiteralExpr&>(a).value.IdenticalTo(
          static_cast<const LiteralExpr&>(b).value);
    case ExprKind::kAttrRef: {
      const auto& x = static_cast<const AttrRefExpr&>(a);
      const auto& y = static_cast<const AttrRefExpr&>(b);
      return x.scope() == y.scope() && x.name.key == y.name.key;
    }
    case ExprKind::kSelect: {
      const auto& x = static_cast<const SelectExpr&>(a);
      const auto& y = static_cast<const SelectExpr&>(b);
      return x.name.key == y.name.key && SameExpr(*x.base, *y.base);
    }
    case ExprKind::kUnary: {
      const auto& x = static_cast<const UnaryExpr&>(a);
      const auto& y = static_cast<const UnaryExpr&>(b);
      return x.op() == y.op() && SameExpr(*x.operand, *y.operand);
    }
    case ExprKind::kBinary: {
      const auto& x = static_cast<const BinaryExpr&>(a);
      const auto& y = static_cast<const BinaryExpr&>(b);
      return x.op() == y.op() && SameExpr(*x.lhs, *y.lhs) && SameExpr(*x.rhs, *y.rhs);
    }
    case ExprKind::kTernary: {
      const auto& x = static_cast<const TernaryExpr&>(a);
      const auto& y = static_cast<const TernaryExpr&>(b);
      return SameExpr(*x.cond, *y.cond) && SameExpr(*x.then_expr, *y.then_expr) &&
             SameExpr(*x.else_expr, *y.else_expr);
    }
    case ExprKind::kCall: {
      const auto& x = static_cast<const CallExpr&>(a);
      const auto& y = static_cast<const CallExpr&>(b);
      return x.fn == y.fn && kite::EqualsIgnoreCase(x.name, y.name) && SameList(x.args, y.args);
    }
    case ExprKind::kList:
      return SameList(static_cast<const ListExpr&>(a).items, static_cast<const ListExpr&>(b).items);
    case ExprKind::kRecord:
      return SameAds(*static_cast<const RecordExpr&>(a).ad, *static_cast<const RecordExpr&>(b).ad);
  }
  return false;
}

}  // namespace kite::classad
