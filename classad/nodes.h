// Node layouts of the ClassAd expression tree (library-internal; callers use classad/expr.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "classad/expr.h"
#include "classad/names.h"
#include "classad/value.h"

namespace kite::classad {

class ClassAd;

// Operators, grouped so that range checks classify them.
enum class Op : uint8_t {
  // unary
  kNeg,
  kPlus,
  kNot,
  kBitNot,
  // comparison
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIs,    // =?=
  kIsnt,  // =!=
  // arithmetic
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  // bitwise
  kBitAnd,
  kBitOr,
  kBitXor,
  kShl,
  kShr,   // arithmetic shift right
  kUShr,  // logical shift right (>>>)
  // logical
  kAnd,
  kOr,
  // other binary
  kSubscript,  // x[i]
  kElvis,      // x ?: y
};

inline bool IsComparison(Op op) {
  return op >= Op::kEq && op <= Op::kIsnt;
}
inline bool IsArithmetic(Op op) {
  return op >= Op::kAdd && op <= Op::kMod;
}
inline bool IsBitwise(Op op) {
  return op >= Op::kBitAnd && op <= Op::kUShr;
}

// Operator text as written in canonical unparse ("&&", "=?=", ...).
std::string_view OpText(Op op);
// Binding strength for unparse/parse: higher binds tighter. Ternary is 1, unary 12, the
// defaulting operator x ?: y 13 (HTCondor parses it among the postfix operators: its left side
// is the postfix chain before it, its right side a whole postfix expression), postfix 14.
int OpPrecedence(Op op);
inline constexpr int kTernaryPrecedence = 1;
inline constexpr int kUnaryPrecedence = 12;
inline constexpr int kElvisPrecedence = 13;
inline constexpr int kPostfixPrecedence = 14;

// Where an attribute reference looks.
enum class Scope : uint8_t {
  kNone,    // unscoped: MY, then enclosing records, then TARGET
  kMy,      // MY.name
  kTarget,  // TARGET.name
};

struct LiteralExpr : Expr {
  explicit LiteralExpr(Value v) : Expr(ExprKind::kLiteral, 1), value(std::move(v)) {}
  Value value;
};

struct AttrRefExpr : Expr {
  AttrRefExpr(Scope scope, NameId n)
      : Expr(ExprKind::kAttrRef, 1, static_cast<uint8_t>(scope)), name(n) {}
  Scope scope() const { return static_cast<Scope>(op_); }
  NameId name;
};

struct SelectExpr : Expr {
  SelectExpr(ExprPtr b, NameId n)
      : Expr(ExprKind::kSelect, b->depth() + 1), base(std::move(b)), name(n) {}
  ExprPtr base;
  NameId name;
};

struct UnaryExpr : Expr {
  UnaryExpr(Op op, ExprPtr x)
      : Expr(ExprKind::kUnary, x->depth() + 1, static_cast<uint8_t>(op)), operand(std::move(x)) {}
  Op op() const { return static_cast<Op>(op_); }
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(Op op, ExprPtr l, ExprPtr r)
      : Expr(ExprKind::kBinary, std::max(l->depth(), r->depth()) + 1, static_cast<uint8_t>(op)),
        lhs(std::move(l)),
        rhs(std::move(r)) {}
  Op op() const { return static_cast<Op>(op_); }
  ExprPtr lhs, rhs;
};

struct TernaryExpr : Expr {
  TernaryExpr(ExprPtr c, ExprPtr t, ExprPtr e)
      : Expr(ExprKind::kTernary, std::max({c->depth(), t->depth(), e->depth()}) + 1),
        cond(std::move(c)),
        then_expr(std::move(t)),
        else_expr(std::move(e)) {}
  ExprPtr cond, then_expr, else_expr;
};

class Evaluator;
struct Frame;
struct CallExpr;
// A built-in function: evaluates its own arguments (so ifThenElse can be lazy).
using BuiltinFn = Value (*)(Evaluator& ev, const CallExpr& call, const Frame& frame);

struct CallExpr : Expr {
  CallExpr(std::string n, BuiltinFn f, std::vector<ExprPtr> a, int depth)
      : Expr(ExprKind::kCall, depth), name(std::move(n)), fn(f), args(std::move(a)) {}
  std::string name;  // as written
  BuiltinFn fn;      // nullptr: unknown function, evaluates to ERROR
  std::vector<ExprPtr> args;
};

struct ListExpr : Expr {
  ListExpr(std::vector<ExprPtr> i, int depth) : Expr(ExprKind::kList, depth), items(std::move(i)) {}
  std::vector<ExprPtr> items;
};

struct RecordExpr : Expr {
  RecordExpr(std::shared_ptr<const ClassAd> a, int depth)
      : Expr(ExprKind::kRecord, depth), ad(std::move(a)) {}
  std::shared_ptr<const ClassAd> ad;
};

// Looks up a built-in function by name, case-insensitively; nullptr when unknown.
BuiltinFn FindBuiltin(std::string_view name);

namespace internal {
struct NodeAccess {
  static void MarkParenthesized(Expr& e) { e.flags_ |= Expr::kParenFlag; }
};
}  // namespace internal

}  // namespace kite::classad
