// Built-in conversion and arithmetic functions: int, real, string, bool, floor, ceiling, round,
// pow, quantize, random, as HTCondor defines them (its conversions read strings as strtod does,
// so int("0x10") is 16 and int("3.9") is 3).
#include <cmath>
#include <random>
#include <string>

#include "classad/functions_util.h"
#include "common/strings.h"

namespace kite::classad {
namespace {

Value OneArg(Evaluator& ev, const CallExpr& c, const Frame& f, Value (*convert)(const Value&)) {
  if (c.args.size() != 1) return Value::Error();
  return convert(Arg(ev, c, f, 0));
}

// int(x): reals truncate toward zero; strings are read as numbers; booleans are 0 and 1.
Value ConvInt(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return OneArg(ev, c, f, ToIntegerValue);
}

Value ConvReal(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return OneArg(ev, c, f, ToRealValue);
}

// string(x): strings unchanged; other values as HTCondor writes them ("1.500000000000000E+00").
Value ConvString(Evaluator& ev, const CallExpr& c, const Frame& f) {
  return OneArg(ev, c, f, ToStringValue);
}

// bool(x): numbers are true when non-zero; "true"/"false" in any case; any other string is
// UNDEFINED; other types are ERROR.
Value ConvBool(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsUndefined()) return v;
  bool b = false;
  if (v.BoolEquivalent(&b)) return Value::Bool(b);
  if (!v.IsString()) return Value::Error();
  if (kite::EqualsIgnoreCase(v.AsString(), "true")) return Value::Bool(true);
  if (kite::EqualsIgnoreCase(v.AsString(), "false")) return Value::Bool(false);
  return Value();
}

// floor/ceiling/round(x): integers unchanged; anything else through real(), then rounded to an
// integer. ERROR when real() fails (UNDEFINED included, as in HTCondor) or the result does not
// fit in 64 bits. round() rounds halves to even (round(2.5) is 2), as HTCondor's rint does.
template <double (*kRound)(double)>
Value RoundWith(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsInteger()) return v;
  Value r = ToRealValue(v);
  if (!r.IsReal()) return Value::Error();
  double x = kRound(r.AsReal());
  if (!(x >= -9.2233720368547758e18 && x < 9.2233720368547758e18)) return Value::Error();
  return Value::Integer(static_cast<int64_t>(x));
}

double RoundHalfEven(double x) {
  return std::nearbyint(x);  // the default rounding mode: to nearest, ties to even
}

// abs(x): Kite's; HTCondor has no abs().
Value Abs(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 1) return Value::Error();
  Value v = Arg(ev, c, f, 0);
  if (v.IsExceptional()) return v;
  if (v.IsInteger()) {
    int64_t i = v.AsInteger();
    return i < 0 ? Evaluator::UnaryOp(Op::kNeg, v) : v;
  }
  if (v.IsReal()) return Value::Real(std::fabs(v.AsReal()));
  return Value::Error();
}

// pow(b, e): an integer when both are integers and e >= 0 (wrapping on overflow, as * does),
// otherwise a real, with both arguments through real(); ERROR when either conversion fails.
Value Pow(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2) return Value::Error();
  Value b = Arg(ev, c, f, 0), e = Arg(ev, c, f, 1);
  if (b.IsInteger() && e.IsInteger() && e.AsInteger() >= 0) {
    uint64_t result = 1, base = static_cast<uint64_t>(b.AsInteger());
    for (int64_t n = e.AsInteger(); n > 0; n >>= 1) {
      if (n & 1) result *= base;
      base *= base;
    }
    return Value::Integer(static_cast<int64_t>(result));
  }
  Value rb = ToRealValue(b), re = ToRealValue(e);
  if (!rb.IsReal() || !re.IsReal()) return Value::Error();
  return Value::Real(std::pow(rb.AsReal(), re.AsReal()));
}

// quantize(a, q): the smallest multiple of q that is >= a (a itself when q is 0); with a list,
// the first item >= a, or else a multiple of the last item. Values go through real().
Value Quantize(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() != 2) return Value::Error();
  Value a = Arg(ev, c, f, 0), q = Arg(ev, c, f, 1);
  Value ra = ToRealValue(a);
  if (!ra.IsReal()) return Value::Error();
  double x = ra.AsReal();
  if (q.IsList()) {
    Value last = Value::Real(0.0);
    for (const Value& item : q.AsList()) {
      Value r = ToRealValue(item);
      if (!r.IsReal()) return Value::Error();
      if (r.AsReal() >= x) return item;
      last = item;
    }
    q = last;
  }
  Value rq = ToRealValue(q);
  if (!rq.IsReal()) return Value::Error();
  if (q.IsInteger()) {
    int64_t m = q.AsInteger();
    if (m == 0) return a;
    if (a.IsInteger()) {
      // ((a + m - 1) / m) * m in wrapping arithmetic, as HTCondor computes it.
      auto ua = static_cast<uint64_t>(a.AsInteger()), um = static_cast<uint64_t>(m);
      int64_t sum = static_cast<int64_t>(ua + um - 1);
      if (sum == INT64_MIN && m == -1) return Value::Error();
      return Value::Integer(static_cast<int64_t>(static_cast<uint64_t>(sum / m) * um));
    }
    return Value::Real(std::ceil(x / static_cast<double>(m)) * static_cast<double>(m));
  }
  double m = rq.AsReal();
  if (m >= -1e-8 && m <= 1e-8) return a;
  return Value::Real(std::ceil(x / m) * m);
}

// random([x]): an integer in [0, x) for an integer x > 0, a real in [0, x) for a real x > 0;
// random() is random(1.0).
Value Random(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() > 1) return Value::Error();
  Value x = c.args.empty() ? Value::Real(1.0) : Arg(ev, c, f, 0);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  if (x.IsInteger() && x.AsInteger() > 0) {
    return Value::Integer(std::uniform_int_distribution<int64_t>(0, x.AsInteger() - 1)(rng));
  }
  if (x.IsReal() && x.AsReal() > 0 && std::isfinite(x.AsReal())) {
    return Value::Real(std::uniform_real_distribution<double>(0, x.AsReal())(rng));
  }
  return Value::Error();
}

constexpr BuiltinEntry kMathFunctions[] = {
    {"int", ConvInt},
    {"real", ConvReal},
    {"string", ConvString},
    {"bool", ConvBool},
    {"floor", RoundWith<std::floor>},
    {"ceiling", RoundWith<std::ceil>},
    {"ceil", RoundWith<std::ceil>},
    {"round", RoundWith<RoundHalfEven>},
    {"abs", Abs},
    {"pow", Pow},
    {"quantize", Quantize},
    {"random", Random},
};

}  // namespace

std::span<const BuiltinEntry> MathFunctions() {
  return kMathFunctions;
}

}  // namespace kite::classad
