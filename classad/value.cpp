// Value: construction, reference counting, identity and text form.
#include "classad/value.h"

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

#include "classad/classad.h"
#include "classad/internal.h"

namespace kite::classad {
namespace internal {

// The shared, immutable payload of a string, list or owned ClassAd value.
struct HeapObject {
  std::atomic<uint32_t> refs{1};
  ValueType kind;
  explicit HeapObject(ValueType k) : kind(k) {}
};

namespace {

struct StringObject : HeapObject {
  size_t size;
  char data[1];  // size + 1 bytes allocated; NUL-terminated
  explicit StringObject(size_t n) : HeapObject(ValueType::kString), size(n) {}
};

struct ListObject : HeapObject {
  std::vector<Value> items;
  explicit ListObject(std::vector<Value> v) : HeapObject(ValueType::kList), items(std::move(v)) {}
};

struct AdObject : HeapObject {
  std::shared_ptr<const ClassAd> ad;
  explicit AdObject(std::shared_ptr<const ClassAd> a)
      : HeapObject(ValueType::kClassAd), ad(std::move(a)) {}
};

StringObject* NewString(std::string_view s) {
  void* mem = ::operator new(sizeof(StringObject) + s.size());  // data[1] holds the NUL
  auto* obj = new (mem) StringObject(s.size());
  if (!s.empty()) std::memcpy(obj->data, s.data(), s.size());
  obj->data[s.size()] = '\0';
  return obj;
}

void Destroy(HeapObject* h) {
  switch (h->kind) {
    case ValueType::kString: {
      auto* s = static_cast<StringObject*>(h);
      s->~StringObject();
      ::operator delete(s);
      return;
    }
    case ValueType::kList:
      delete static_cast<ListObject*>(h);
      return;
    default:
      delete static_cast<AdObject*>(h);
      return;
  }
}

}  // namespace
}  // namespace internal

using internal::AdObject;
using internal::ListObject;
using internal::StringObject;

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kUndefined:
      return "undefined";
    case ValueType::kError:
      return "error";
    case ValueType::kBool:
      return "boolean";
    case ValueType::kInteger:
      return "integer";
    case ValueType::kReal:
      return "real";
    case ValueType::kString:
      return "string";
    case ValueType::kList:
      return "list";
    case ValueType::kClassAd:
      return "classad";
    case ValueType::kAbsTime:
      return "abstime";
  }
  return "unknown";
}

bool Value::HasHeap() const {
  switch (type()) {
    case ValueType::kString:
      return (p_.aux & kInlineString) == 0;
    case ValueType::kList:
      return true;
    case ValueType::kClassAd:
      return p_.aux == kOwnedAd;
    default:
      return false;
  }
}

void Value::Retain() const noexcept {
  if (HasHeap()) p_.u.heap->refs.fetch_add(1, std::memory_order_relaxed);
}

void Value::Release() noexcept {
  if (HasHeap() && p_.u.heap->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    internal::Destroy(p_.u.heap);
  }
}

// All 16 bytes are copied as raw bits: whichever view is active, they carry it.
Value::Value(const Value& other) noexcept {
  std::memcpy(static_cast<void*>(this), &other, sizeof(Value));
  Retain();
}

Value::Value(Value&& other) noexcept {
  std::memcpy(static_cast<void*>(this), &other, sizeof(Value));
  other.p_.type = ValueType::kUndefined;
  other.p_.aux = 0;
}

// `other` may live inside a list this value owns, so it is taken over before releasing.
Value& Value::operator=(const Value& other) noexcept {
  if (this != &other) {
    Value copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Value& Value::operator=(Value&& other) noexcept {
  if (this != &other) {
    Value taken(std::move(other));
    Release();
    std::memcpy(static_cast<void*>(this), &taken, sizeof(Value));
    taken.p_.type = ValueType::kUndefined;
    taken.p_.aux = 0;
  }
  return *this;
}

Value::~Value() {
  Release();
}

Value Value::Error() {
  Value v;
  v.p_.type = ValueType::kError;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.p_.type = ValueType::kBool;
  v.p_.u.b = b;
  return v;
}

Value Value::Integer(int64_t i) {
  Value v;
  v.p_.type = ValueType::kInteger;
  v.p_.u.i = i;
  return v;
}

Value Value::Real(double r) {
  Value v;
  v.p_.type = ValueType::kReal;
  v.p_.u.r = r;
  return v;
}

Value Value::String(std::string_view s) {
  Value v;
  if (s.size() <= kInlineChars) {
    // Short strings live in the Value itself: no allocation, no reference count.
    v.s_.type = ValueType::kString;
    v.s_.aux = static_cast<uint8_t>(kInlineString | (s.size() << 1));
    if (!s.empty()) std::memcpy(v.s_.text, s.data(), s.size());
    v.s_.text[s.size()] = '\0';
    return v;
  }
  v.p_.type = ValueType::kString;
  v.p_.aux = 0;
  v.p_.u.heap = internal::NewString(s);
  return v;
}

Value Value::List(std::vector<Value> items) {
  Value v;
  v.p_.type = ValueType::kList;
  v.p_.u.heap = new ListObject(std::move(items));
  return v;
}

Value Value::Ad(std::shared_ptr<const ClassAd> ad) {
  if (!ad) return Value();
  Value v;
  v.p_.type = ValueType::kClassAd;
  v.p_.aux = kOwnedAd;
  v.p_.u.heap = new AdObject(std::move(ad));
  return v;
}

Value Value::AdRef(const ClassAd* ad) {
  if (ad == nullptr) return Value();
  Value v;
  v.p_.type = ValueType::kClassAd;
  v.p_.aux = 0;
  v.p_.u.ad_ref = ad;
  return v;
}

Value Value::AbsTime(int64_t seconds, int32_t zone_offset) {
  Value v;
  v.t_.type = ValueType::kAbsTime;
  v.t_.offset = zone_offset;
  v.t_.seconds = seconds;
  return v;
}

bool Value::BoolEquivalent(bool* b) const {
  switch (type()) {
    case ValueType::kBool:
      *b = p_.u.b;
      return true;
    case ValueType::kInteger:
      *b = p_.u.i != 0;
      return true;
    case ValueType::kReal:
      *b = p_.u.r != 0.0;
      return true;
    default:
      return false;
  }
}

bool Value::IsTrue() const {
  bool b = false;
  return BoolEquivalent(&b) && b;
}

std::string_view Value::AsString() const {
  if (s_.aux & kInlineString) return std::string_view(s_.text, s_.aux >> 1);
  auto* s = static_cast<const StringObject*>(p_.u.heap);
  return std::string_view(s->data, s->size);
}

const char* Value::AsCString() const {
  if (s_.aux & kInlineString) return s_.text;
  return static_cast<const StringObject*>(p_.u.heap)->data;
}

const std::vector<Value>& Value::AsList() const {
  return static_cast<const ListObject*>(p_.u.heap)->items;
}

const ClassAd* Value::AsClassAd() const {
  return p_.aux == kOwnedAd ? static_cast<const AdObject*>(p_.u.heap)->ad.get() : p_.u.ad_ref;
}

bool Value::IdenticalTo(const Value& other) const {
  if (type() != other.type()) return false;
  switch (type()) {
    case ValueType::kUndefined:
    case ValueType::kError:
      return true;
    case ValueType::kBool:
      return AsBool() == other.AsBool();
    case ValueType::kInteger:
      return AsInteger() == other.AsInteger();
    case ValueType::kReal:
      return AsReal() == other.AsReal();
    case ValueType::kString:
      return AsString() == other.AsString();
    case ValueType::kList: {
      const auto& a = AsList();
      const auto& b = other.AsList();
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!a[i].IdenticalTo(b[i])) return false;
      }
      return true;
    }
    case ValueType::kClassAd:
      return AsClassAd() == other.AsClassAd();
    case ValueType::kAbsTime:
      return t_.seconds == other.t_.seconds && t_.offset == other.t_.offset;
  }
  return false;
}

void AppendQuotedString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out.push_back(c);
    }
  }
  out.push_back('"');
}

void AppendAbsTimeText(std::string& out, int64_t seconds, int32_t zone_offset) {
  time_t wall = static_cast<time_t>(seconds + zone_offset);
  struct tm tm {};
  char buf[64];
  if (gmtime_r(&wall, &tm) == nullptr ||
      std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
    out += "0000-00-00T00:00:00";
  } else {
    out += buf;
  }
  int32_t off = zone_offset > 0 ? zone_offset : -zone_offset;
  std::snprintf(buf, sizeof(buf), "%c%02d:%02d", zone_offset > 0 ? '+' : '-', off / 3600,
                (off / 60) % 60);
  out += buf;
}

void AppendReal(std::string& out, double r) {
  if (std::isnan(r)) {
    out += "real(\"NaN\")";
    return;
  }
  if (std::isinf(r)) {
    out += r < 0 ? "real(\"-INF\")" : "real(\"INF\")";
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), r);
  std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
  out += text;
  if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

void Value::AppendTo(std::string& out) const {
  switch (type()) {
    case ValueType::kUndefined:
      out += "undefined";
      return;
    case ValueType::kError:
      out += "error";
      return;
    case ValueType::kBool:
      out += AsBool() ? "true" : "false";
      return;
    case ValueType::kInteger: {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof(buf), AsInteger());
      out.append(buf, res.ptr);
      return;
    }
    case ValueType::kReal:
      AppendReal(out, AsReal());
      return;
    case ValueType::kString:
      AppendQuotedString(out, AsString());
      return;
    case ValueType::kList: {
      const auto& items = AsList();
      if (items.empty()) {
        out += "{}";
        return;
      }
      out += "{ ";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        items[i].AppendTo(out);
      }
      out += " }";
      return;
    }
    case ValueType::kClassAd:
      internal::AppendNewSyntax(out, *AsClassAd());
      return;
    case ValueType::kAbsTime:
      out += "absTime(\"";
      AppendAbsTimeText(out, t_.seconds, t_.offset);
      out += "\")";
      return;
  }
}

std::string Value::ToString() const {
  std::string out;
  AppendTo(out);
  return out;
}

}  // namespace kite::classad
