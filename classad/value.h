// kite::classad::Value: the result of evaluating a ClassAd expression.
//
// A Value is 16 bytes: a type tag and either an inline scalar, an inline short string (up to 13
// bytes), an absolute time (seconds and zone offset), or a pointer to an immutable,
// reference-counted heap object (longer string, list, nested ClassAd). Copies share the heap
// object, so copying a Value never copies long string bytes. Values are immutable once built and
// safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kite::classad {

class ClassAd;

enum class ValueType : uint8_t {
  kUndefined,
  kError,
  kBool,
  kInteger,
  kReal,
  kString,
  kList,
  kClassAd,
  // An instant: seconds since the epoch (UTC) and the zone offset it is shown in (seconds east
  // of Greenwich), as absTime() makes it. There is no relative-time type: relTime() gives seconds
  // as a real, as the HTCondor build Kite's conformance answers come from does.
  kAbsTime,
};

// "undefined", "error", "boolean", "integer", "real", "string", "list", "classad", "abstime".
std::string_view ValueTypeName(ValueType type);

namespace internal {
struct HeapObject;
}  // namespace internal

class Value {
 public:
  Value() noexcept { p_.type = ValueType::kUndefined, p_.aux = 0, p_.u.i = 0; }
  Value(const Value& other) noexcept;
  Value(Value&& other) noexcept;
  Value& operator=(const Value& other) noexcept;
  Value& operator=(Value&& other) noexcept;
  ~Value();

  static Value Undefined() { return Value(); }
  static Value Error();
  static Value Bool(bool b);
  static Value Integer(int64_t i);
  static Value Real(double r);
  static Value String(std::string_view s);
  static Value List(std::vector<Value> items);
  // Shares ownership of `ad`.
  static Value Ad(std::shared_ptr<const ClassAd> ad);
  // A non-owning reference: `ad` must outlive the Value (used for MY and TARGET).
  static Value AdRef(const ClassAd* ad);
  static Value AbsTime(int64_t seconds, int32_t zone_offset);

  ValueType type() const { return p_.type; }
  bool IsUndefined() const { return type() == ValueType::kUndefined; }
  bool IsError() const { return type() == ValueType::kError; }
  bool IsExceptional() const { return type() <= ValueType::kError; }
  bool IsBool() const { return type() == ValueType::kBool; }
  bool IsInteger() const { return type() == ValueType::kInteger; }
  bool IsReal() const { return type() == ValueType::kReal; }
  bool IsNumber() const { return IsInteger() || IsReal(); }
  bool IsString() const { return type() == ValueType::kString; }
  bool IsList() const { return type() == ValueType::kList; }
  bool IsClassAd() const { return type() == ValueType::kClassAd; }
  bool IsAbsTime() const { return type() == ValueType::kAbsTime; }

  // HTCondor's boolean equivalence: true for `true` and for a non-zero integer or real.
  // UNDEFINED, ERROR, strings, lists and ads are not true.
  bool IsTrue() const;
  // Sets *b when the value is a boolean or a number (HTCondor's IsBooleanValueEquiv).
  bool BoolEquivalent(bool* b) const;

  // Typed accessors. REQUIRES: the matching Is...() is true.
  bool AsBool() const { return p_.u.b; }
  int64_t AsInteger() const { return p_.u.i; }
  double AsReal() const { return p_.u.r; }
  // Integer or real as double. REQUIRES: IsNumber().
  double AsNumber() const { return IsInteger() ? static_cast<double>(p_.u.i) : p_.u.r; }
  // Points into this Value for short strings: valid while this Value (or the literal holding
  // it) lives.
  std::string_view AsString() const;
  // NUL-terminated string bytes. REQUIRES: IsString().
  const char* AsCString() const;
  const std::vector<Value>& AsList() const;
  const ClassAd* AsClassAd() const;
  // REQUIRES: IsAbsTime().
  int64_t AsAbsTimeSeconds() const { return t_.seconds; }
  int32_t AsAbsTimeOffset() const { return t_.offset; }

  // The value as ClassAd literal text: 42, 2.5, "a \"b\"", true, undefined, { 1, 2 }, [ a = 1 ],
  // absTime("2004-01-01T00:00:00+00:00").
  std::string ToString() const;
  // Appends ToString() to `out`.
  void AppendTo(std::string& out) const;

  // The =?= relation: same type and same value; strings compare case-sensitively; UNDEFINED is
  // identical to UNDEFINED and ERROR to ERROR; 1 and 1.0 are not identical; absolute times
  // need the same instant and the same zone offset.
  bool IdenticalTo(const Value& other) const;

 private:
  static constexpr size_t kInlineChars = 13;   // plus the NUL
  static constexpr uint8_t kOwnedAd = 1;       // aux of kClassAd: a heap AdObject
  static constexpr uint8_t kInlineString = 1;  // aux of kString: bit 0; length in aux >> 1
  bool HasHeap() const;
  void Release() noexcept;
  void Retain() const noexcept;

  // The two views share their first two members (type, aux), which is how the union is read.
  struct InlineView {
    ValueType type;
    uint8_t aux;
    char text[kInlineChars + 1];
  };
  union Payload {
    bool b;
    int64_t i;
    double r;
    internal::HeapObject* heap;
    const ClassAd* ad_ref;
  };
  struct PayloadView {
    ValueType type;
    uint8_t aux;
    uint8_t pad[6];
    Payload u;
  };
  struct TimeView {
    ValueType type;
    uint8_t aux;
    uint8_t pad[2];
    int32_t offset;
    int64_t seconds;
  };
  union {
    InlineView s_;
    PayloadView p_;
    TimeView t_;
  };
};

// Appends `s` as a quoted ClassAd string literal with \" \\ \n \t \r escapes.
void AppendQuotedString(std::string& out, std::string_view s);
// Appends an instant as HTCondor writes it: "2004-01-01T00:00:00+01:00", the wall-clock time in
// its zone followed by the zone offset (a zero offset is written "-00:00", as HTCondor does).
void AppendAbsTimeText(std::string& out, int64_t seconds, int32_t zone_offset);
// Appends a real in the shortest text that reads back to the same double; always contains a
// '.', 'e' or is one of real("INF"), real("-INF"), real("NaN").
void AppendReal(std::string& out, double r);

}  // namespace kite::classad
