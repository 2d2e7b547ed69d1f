// kite::classad::ClassAd: a set of named expressions, with evaluation and parent chaining.
//
// Names are case-insensitive and keep the spelling they were inserted with. Attributes are kept
// in insertion order in a flat vector of (interned name, ExprPtr): a small ad costs a few dozen
// bytes plus its values. Ads with many attributes also keep a small open-addressing index.
//
// Thread-safety: const methods may run concurrently; mutation needs exclusive access.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classad/expr.h"
#include "classad/names.h"
#include "classad/value.h"

namespace kite::classad {

class ClassAd {
 public:
  // One attribute of the ad itself (not of its chained parent).
  class Attribute {
   public:
    std::string_view name() const { return NameText(name_); }
    const Expr& expr() const { return *expr_; }
    const ExprPtr& expr_ptr() const { return expr_; }
    NameId name_id() const { return name_; }

   private:
    friend class ClassAd;
    Attribute(NameId n, ExprPtr e) : name_(n), expr_(std::move(e)) {}
    NameId name_;
    ExprPtr expr_;
  };
  using const_iterator = std::vector<Attribute>::const_iterator;

  ClassAd() = default;
  ClassAd(const ClassAd& other);
  ClassAd& operator=(const ClassAd& other);
  ClassAd(ClassAd&&) noexcept = default;
  ClassAd& operator=(ClassAd&&) noexcept = default;
  ~ClassAd() = default;

  // Sets `name` to `expr`, replacing any attribute of the same name (in its old position).
  // A null `expr` is ignored.
  void Insert(std::string_view name, ExprPtr expr);
  void Insert(NameId name, ExprPtr expr);
  // Parses `expr_text` and inserts it; the ad is unchanged on a parse error.
  kite::Status InsertText(std::string_view name, std::string_view expr_text);
  void Assign(std::string_view name, int64_t value);
  void Assign(std::string_view name, int value) { Assign(name, static_cast<int64_t>(value)); }
  void Assign(std::string_view name, double value);
  void Assign(std::string_view name, bool value);
  void Assign(std::string_view name, std::string_view value);
  void Assign(std::string_view name, const char* value) { Assign(name, std::string_view(value)); }
  void Assign(std::string_view name, const std::string& value) {
    Assign(name, std::string_view(value));
  }
  // Removes `name` from this ad (not from its parent). Returns whether it was there.
  bool Remove(std::string_view name);
  void Clear();

  // The expression bound to `name` in this ad or, failing that, its chain of parents.
  // nullptr when absent. Does not allocate.
  const Expr* Lookup(std::string_view name) const;
  const Expr* Lookup(NameId name) const { return FindKey(name.key); }
  // Like Lookup but only this ad, not its parents.
  const Expr* LookupOwn(std::string_view name) const;
  const Expr* FindKey(uint32_t key) const;
  const Expr* FindOwnKey(uint32_t key) const;

  // Evaluates attribute `name` with MY = this ad and TARGET = `target`. UNDEFINED when absent.
  Value Evaluate(std::string_view name, const ClassAd* target = nullptr) const;
  // Typed helpers: nullopt when the attribute is absent or of another type. EvaluateInt takes
  // integers and truncates reals; EvaluateBool takes booleans and numbers (non-zero is true).
  std::optional<int64_t> EvaluateInt(std::string_view name, const ClassAd* target = nullptr) const;
  std::optional<double> EvaluateReal(std::string_view name, const ClassAd* target = nullptr) const;
  std::optional<bool> EvaluateBool(std::string_view name, const ClassAd* target = nullptr) const;
  std::optional<std::string> EvaluateString(std::string_view name,
                                            const ClassAd* target = nullptr) const;

  // Chains this ad to `parent` (HTCondor's proc ad -> cluster ad): lookups that miss here
  // continue in the parent, and the parent's expressions are evaluated with MY = this ad.
  // The parent must outlive this ad or be reset first. nullptr unchains.
  void SetParent(const ClassAd* parent) { parent_ = parent; }
  const ClassAd* parent() const { return parent_; }

  // This ad's own attributes, in insertion order.
  const_iterator begin() const { return attrs_.begin(); }
  const_iterator end() const { return attrs_.end(); }
  size_t size() const { return attrs_.size(); }
  bool empty() const { return attrs_.empty(); }

  // Bytes of heap and object this ad uses itself, not counting shared expression nodes.
  size_t MemoryFootprint() const;

 private:
  int FindIndex(uint32_t key) const;
  void IndexInsert(uint32_t key, int pos);
  void RebuildIndex();

  std::vector<Attribute> attrs_;
  // Open-addressing index over attrs_ (slot = position + 1; 0 empty), only when the ad is large.
  std::unique_ptr<uint32_t[]> index_;
  uint32_t index_mask_ = 0;
  const ClassAd* parent_ = nullptr;
};

// Evaluates `expr` with MY = `my` (may be null) and TARGET = `target` (may be null).
Value EvaluateExpr(const Expr& expr, const ClassAd* my, const ClassAd* target = nullptr);

}  // namespace kite::classad
