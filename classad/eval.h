// The expression evaluator (library-internal): scopes, attribute resolution, operators.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "classad/classad.h"
#include "classad/nodes.h"
#include "classad/value.h"

namespace kite::classad {

// Deepest evaluation recursion (tree depth plus attribute indirections) before giving ERROR;
// guards against self-referential ads (a = b; b = a) and keeps the stack bounded.
inline constexpr int kMaxEvalDepth = 1500;

// The scopes an expression is evaluated in. `outer` links to the frame of the ad that encloses a
// nested record, so unscoped names missing in the record are looked up outside it.
struct Frame {
  const ClassAd* my = nullptr;
  const ClassAd* target = nullptr;
  const Frame* outer = nullptr;
};

// A stack of frames whose addresses stay put while it grows (frames point at each other). It
// allocates nothing until the first push, so the common evaluation that selects from no nested
// record pays nothing for it.
class FrameStack {
 public:
  size_t size() const { return size_; }
  const Frame& Push(const Frame& f) {
    if (size_ / kChunk == chunks_.size()) chunks_.push_back(std::make_unique<Frame[]>(kChunk));
    Frame& slot = chunks_[size_ / kChunk][size_ % kChunk];
    slot = f;
    ++size_;
    return slot;
  }
  // Drops the frames above `n` (their memory is kept for reuse). REQUIRES: n <= size().
  void Truncate(size_t n) { size_ = n; }

 private:
  static constexpr size_t kChunk = 16;
  std::vector<std::unique_ptr<Frame[]>> chunks_;
  size_t size_ = 0;
};

class Evaluator {
 public:
  Value Eval(const Expr& e, const Frame& f);
  // Evaluates the expression bound to an attribute. An attribute whose evaluation needs its own
  // value (a = b; b = a + a) is ERROR as soon as the cycle closes, as in HTCondor: a depth cap
  // alone would let an attribute that names itself twice cost 2^depth steps.
  Value EvalAttribute(const Expr& bound, const Frame& f);
  // The value of `e` without copying it when `e` is, or refers to, a literal; otherwise it is
  // evaluated into `scratch`. The result lives as long as the ads and `scratch`.
  const Value& Peek(const Expr& e, const Frame& f, Value& scratch);

  // The depth of nested evaluation so far; built-ins that evaluate further text (eval()) check it.
  int depth() const { return depth_; }

  // Binary and unary operator semantics on values (strict operators only).
  static Value Compare(Op op, const Value& a, const Value& b);
  static Value Arithmetic(Op op, const Value& a, const Value& b);
  static Value Bitwise(Op op, const Value& a, const Value& b);
  static Value TimeArithmetic(Op op, const Value& a, const Value& b);
  static Value UnaryOp(Op op, const Value& a);

 private:
  struct Found {
    const Expr* expr = nullptr;
    Frame frame;
  };
  bool Resolve(const AttrRefExpr& ref, const Frame& f, Found* out) const;
  Value EvalAttrRef(const AttrRefExpr& ref, const Frame& f);
  Value EvalSelect(const SelectExpr& sel, const Frame& f);
  // Where a value lives lexically (HTCondor scopes a nested ad by where it is written).
  struct Lexical {
    // A record: its own frame, enclosed by the frame of the ad that holds it. A list written as
    // a literal: the frame of the ad that holds it.
    const Frame* frame = nullptr;
    const ListExpr* list = nullptr;  // the literal, for a list
  };
  // Evaluates `e`, setting *scope when the value is a record or list written in some ad.
  Value EvalWithScope(const Expr& e, const Frame& f, Lexical* scope);
  Value ScopedAttribute(const Expr& bound, const Frame& frame, Lexical* scope);
  Value ScopedSelect(const SelectExpr& sel, const Frame& f, Lexical* scope);
  // Attribute `key` of a record with frame `record`: found in the record or, failing that, in
  // the ads enclosing it.
  Value ScopedMember(uint32_t key, const Frame& record, Lexical* scope);
  Value SelectFromList(const Value& list, const Lexical& where, uint32_t key, const Frame& f);
  Value EvalBinary(const BinaryExpr& b, const Frame& f);
  Value EvalLogical(const BinaryExpr& b, const Frame& f);
  Value EvalSubscript(const BinaryExpr& b, const Frame& f);
  Value ScopedSubscript(const BinaryExpr& b, const Frame& f, Lexical* scope);
  Value EvalTernary(const TernaryExpr& t, const Frame& f);
  Value EvalList(const ListExpr& l, const Frame& f);

  int depth_ = 0;
  // Attributes being evaluated, innermost last: (bound expression, the ad it is evaluated as MY).
  std::vector<std::pair<const Expr*, const ClassAd*>> active_;
  // Frames of nested records reached by selection. Frames link to their enclosing frame by
  // pointer, so they live here (stable addresses) until the outermost selection returns.
  FrameStack scopes_;
};

// Evaluates attribute `key` of `ad` (following its parents) as a nested-record member, with the
// record as MY and `outer` as its enclosing scope. UNDEFINED when absent.
Value EvalMember(Evaluator& ev, const ClassAd& ad, uint32_t key, const Frame& outer);

}  // namespace kite::classad
