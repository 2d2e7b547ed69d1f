// ClassAd: attribute storage, lookup, chaining and the typed evaluation helpers.
#include "classad/classad.h"

#include <bit>
#include <cmath>

namespace kite::classad {
namespace {

// Ads up to this size are searched linearly; beyond it they keep a hash index.
constexpr size_t kLinearLimit = 12;

inline uint32_t Slot(uint32_t key, uint32_t mask) {
  return (key * 0x9E3779B1u >> 7) & mask;
}

}  // namespace

ClassAd::ClassAd(const ClassAd& other) : attrs_(other.attrs_), parent_(other.parent_) {
  RebuildIndex();
}

ClassAd& ClassAd::operator=(const ClassAd& other) {
  if (this != &other) {
    attrs_ = other.attrs_;
    parent_ = other.parent_;
    RebuildIndex();
  }
  return *this;
}

int ClassAd::FindIndex(uint32_t key) const {
  if (!index_) {
    const Attribute* a = attrs_.data();
    for (size_t i = 0, n = attrs_.size(); i < n; ++i) {
      if (a[i].name_.key == key) return static_cast<int>(i);
    }
    return -1;
  }
  for (uint32_t s = Slot(key, index_mask_);; s = (s + 1) & index_mask_) {
    uint32_t v = index_[s];
    if (v == 0) return -1;
    if (attrs_[v - 1].name_.key == key) return static_cast<int>(v - 1);
  }
}

void ClassAd::IndexInsert(uint32_t key, int pos) {
  uint32_t s = Slot(key, index_mask_);
  while (index_[s] != 0) s = (s + 1) & index_mask_;
  index_[s] = static_cast<uint32_t>(pos + 1);
}

void ClassAd::RebuildIndex() {
  if (attrs_.size() <= kLinearLimit) {
    index_.reset();
    index_mask_ = 0;
    return;
  }
  // Load factor at most 1/2 after the rebuild, so probes stay short until the next one.
  uint32_t cap = std::bit_ceil(static_cast<uint32_t>(attrs_.size()) * 4);
  index_ = std::make_unique<uint32_t[]>(cap);
  index_mask_ = cap - 1;
  for (size_t i = 0; i < attrs_.size(); ++i) IndexInsert(attrs_[i].name_.key, static_cast<int>(i));
}

void ClassAd::Insert(NameId name, ExprPtr expr) {
  if (!expr) return;
  int pos = FindIndex(name.key);
  if (pos >= 0) {
    attrs_[pos] = Attribute(name, std::move(expr));
    return;
  }
  // Grow gently: most ads are small and never grow again, so doubling would waste half.
  if (attrs_.size() == attrs_.capacity()) {
    attrs_.reserve(attrs_.size() < 8 ? attrs_.size() + 1 : attrs_.size() + attrs_.size() / 2);
  }
  attrs_.push_back(Attribute(name, std::move(expr)));
  if (attrs_.size() > kLinearLimit) {
    if (!index_ || attrs_.size() * 2 > index_mask_ + 1) {
      RebuildIndex();
    } else {
      IndexInsert(name.key, static_cast<int>(attrs_.size() - 1));
    }
  }
}

void ClassAd::Insert(std::string_view name, ExprPtr expr) {
  if (!expr) return;
  Insert(InternName(name), std::move(expr));
}

kite::Status ClassAd::InsertText(std::string_view name, std::string_view expr_text) {
  auto expr = ParseExpr(expr_text);
  if (!expr) return kite::Fail(expr.error().Wrap(std::string(name)));
  Insert(name, std::move(*expr));
  return {};
}

void ClassAd::Assign(std::string_view name, int64_t value) {
  Insert(name, MakeInteger(value));
}
void ClassAd::Assign(std::string_view name, double value) {
  Insert(name, MakeReal(value));
}
void ClassAd::Assign(std::string_view name, bool value) {
  Insert(name, MakeBool(value));
}
void ClassAd::Assign(std::string_view name, std::string_view value) {
  Insert(name, MakeString(value));
}

bool ClassAd::Remove(std::string_view name) {
  auto key = FindNameKey(name);
  if (!key) return false;
  int pos = FindIndex(*key);
  if (pos < 0) return false;
  attrs_.erase(attrs_.begin() + pos);
  RebuildIndex();
  return true;
}

void ClassAd::Clear() {
  attrs_.clear();
  index_.reset();
  index_mask_ = 0;
}

const Expr* ClassAd::FindOwnKey(uint32_t key) const {
  int pos = FindIndex(key);
  return pos < 0 ? nullptr : attrs_[pos].expr_.get();
}

const Expr* ClassAd::FindKey(uint32_t key) const {
  for (const ClassAd* ad = this; ad != nullptr; ad = ad->parent_) {
    if (const Expr* e = ad->FindOwnKey(key)) return e;
  }
  return nullptr;
}

const Expr* ClassAd::Lookup(std::string_view name) const {
  auto key = FindNameKey(name);
  return key ? FindKey(*key) : nullptr;
}

const Expr* ClassAd::LookupOwn(std::string_view name) const {
  auto key = FindNameKey(name);
  return key ? FindOwnKey(*key) : nullptr;
}

Value ClassAd::Evaluate(std::string_view name, const ClassAd* target) const {
  const Expr* e = Lookup(name);
  if (e == nullptr) return Value();
  return EvaluateExpr(*e, this, target);
}

std::optional<int64_t> ClassAd::EvaluateInt(std::string_view name, const ClassAd* target) const {
  Value v = Evaluate(name, target);
  if (v.IsInteger()) return v.AsInteger();
  if (v.IsReal() && std::isfinite(v.AsReal()) && std::fabs(v.AsReal()) < 9.2e18) {
    return static_cast<int64_t>(v.AsReal());
  }
  return std::nullopt;
}

std::optional<double> ClassAd::EvaluateReal(std::string_view name, const ClassAd* target) const {
  Value v = Evaluate(name, target);
  if (v.IsNumber()) return v.AsNumber();
  return std::nullopt;
}

std::optional<bool> ClassAd::EvaluateBool(std::string_view name, const ClassAd* target) const {
  bool b = false;
  if (Evaluate(name, target).BoolEquivalent(&b)) return b;
  return std::nullopt;
}

std::optional<std::string> ClassAd::EvaluateString(std::string_view name,
                                                   const ClassAd* target) const {
  Value v = Evaluate(name, target);
  if (v.IsString()) return std::string(v.AsString());
  return std::nullopt;
}

size_t ClassAd::MemoryFootprint() const {
  size_t bytes = sizeof(ClassAd) + attrs_.capacity() * sizeof(Attribute);
  if (index_) bytes += (index_mask_ + 1) * sizeof(uint32_t);
  return bytes;
}

}  // namespace kite::classad
