// ClassAd expressions: the immutable parse tree, parsing, unparsing and literal constructors.
//
// An expression is a tree of immutable nodes shared through ExprPtr, so one parsed expression can
// sit in many ads and be evaluated from many threads at once. Node layouts live in
// classad/nodes.h (for the library's own use); callers work through the functions below.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "classad/value.h"
#include "common/error.h"

namespace kite::classad {

enum class ExprKind : uint8_t {
  kLiteral,  // 1, "a", true, undefined, error
  kAttrRef,  // Memory, MY.Memory, TARGET.Memory
  kSelect,   // expr.name (nested record selection)
  kUnary,    // -x, +x, !x, ~x
  kBinary,   // x op y, including subscript x[i] and the defaulting operator x ?: y
  kTernary,  // c ? a : b
  kCall,     // f(args)
  kList,     // { a, b }
  kRecord,   // [ a = 1; b = 2 ]
};

// Deepest nesting of expressions (parentheses, operators, lists, records) the parser accepts.
// Deeper input is refused with a clear error rather than risking the stack.
inline constexpr int kMaxExprDepth = 1000;

namespace internal {
struct NodeAccess;
}  // namespace internal

class Expr {
 public:
  ExprKind kind() const { return kind_; }
  // True when the source text had parentheses around this node; Unparse keeps them.
  bool parenthesized() const { return (flags_ & kParenFlag) != 0; }
  // 1 for a leaf; 1 + the deepest child otherwise.
  int depth() const { return depth_; }

  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

 protected:
  Expr(ExprKind kind, int depth, uint8_t op = 0)
      : kind_(kind), op_(op), depth_(static_cast<uint16_t>(depth)) {}
  ~Expr() = default;  // nodes are destroyed through their shared_ptr control block

  static constexpr uint8_t kParenFlag = 1;
  ExprKind kind_;
  uint8_t flags_ = 0;
  uint8_t op_;  // kUnary/kBinary: the operator; kAttrRef: the scope
  uint16_t depth_;

 private:
  friend struct internal::NodeAccess;  // lets the parser mark parenthesised nodes
};

using ExprPtr = std::shared_ptr<const Expr>;

// Parses one expression; the whole text must be consumed (surrounding blanks are fine).
// Errors name what was expected and where, e.g. "expected ')' at column 14".
kite::Result<ExprPtr> ParseExpr(std::string_view text);

// Canonical text of an expression; ParseExpr(Unparse(e)) yields an expression that unparses to
// the same text and evaluates the same.
std::string Unparse(const Expr& expr);
void AppendUnparse(std::string& out, const Expr& expr);

// Literal nodes. Small integers, booleans, UNDEFINED and ERROR are shared singletons.
ExprPtr MakeInteger(int64_t value);
ExprPtr MakeReal(double value);
ExprPtr MakeString(std::string_view value);
ExprPtr MakeBool(bool value);
ExprPtr MakeUndefined();
ExprPtr MakeError();
// Any value as an expression: scalars become literals, lists and ads become list and record
// expressions.
ExprPtr MakeLiteral(const Value& value);

// True when `expr` is a literal (lists and records are not); sets *value when given.
bool IsLiteral(const Expr& expr, Value* value = nullptr);

// Structural equality: same node kinds, operators, literal values (=?=), and names compared
// case-insensitively. Parentheses are ignored.
bool SameExpr(const Expr& a, const Expr& b);

}  // namespace kite::classad
