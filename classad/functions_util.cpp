// HTCondor's value conversions and string-list splitting, shared by the built-in functions.
#include "classad/functions_util.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "classad/classad.h"
#include "classad/expr.h"
#include "classad/parser.h"
#include "common/strings.h"

namespace kite::classad {
namespace {

void AppendHTCondorString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (std::isprint(static_cast<unsigned char>(c))) {
          out.push_back(c);
        } else {  // as HTCondor: every other byte, UTF-8 included, as a 3-digit octal escape
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\%03o", static_cast<unsigned char>(c));
          out += buf;
        }
    }
  }
  out.push_back('"');
}

void AppendHTCondorReal(std::string& out, double r) {
  char buf[64];
  if (r == 0.0) {
    std::snprintf(buf, sizeof(buf), "%.1f", r);  // keeps the sign of -0.0
  } else if (std::isnan(r)) {
    out += "real(\"NaN\")";
    return;
  } else if (std::isinf(r)) {
    out += r < 0 ? "real(\"-INF\")" : "real(\"INF\")";
    return;
  } else {
    std::snprintf(buf, sizeof(buf), "%1.15E", r);
  }
  out += buf;
}

void AppendHTCondorAd(std::string& out, const ClassAd& ad) {
  out += "[ ";
  bool first = true;
  for (const auto& attr : ad) {
    if (!first) out += "; ";
    first = false;
    AppendName(out, attr.name());
    out += " = ";
    Value v;
    if (IsLiteral(attr.expr(), &v)) {
      AppendHTCondorUnparse(out, v);
    } else {
      AppendUnparse(out, attr.expr());
    }
  }
  out += " ]";
}

}  // namespace

void AppendHTCondorUnparse(std::string& out, const Value& v) {
  switch (v.type()) {
    case ValueType::kString:
      AppendHTCondorString(out, v.AsString());
      return;
    case ValueType::kReal:
      AppendHTCondorReal(out, v.AsReal());
      return;
    case ValueType::kList: {
      out += "{ ";
      const auto& items = v.AsList();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out.push_back(',');
        AppendHTCondorUnparse(out, items[i]);
      }
      out += " }";
      return;
    }
    case ValueType::kClassAd:
      AppendHTCondorAd(out, *v.AsClassAd());
      return;
    default:  // undefined, error, booleans, integers and instants print as Kite prints them
      v.AppendTo(out);
      return;
  }
}

bool AppendConverted(std::string& out, const Value& v) {
  switch (v.type()) {
    case ValueType::kUndefined:
    case ValueType::kError:
      return false;
    case ValueType::kString:
      out += v.AsString();
      return true;
    case ValueType::kAbsTime:
      AppendAbsTimeText(out, v.AsAbsTimeSeconds(), v.AsAbsTimeOffset());
      return true;
    default:
      AppendHTCondorUnparse(out, v);
      return true;
  }
}

Value ToStringValue(const Value& v) {
  if (v.IsExceptional() || v.IsString()) return v;
  std::string text;
  AppendConverted(text, v);
  return Value::String(text);
}

Value ToRealValue(const Value& v) {
  switch (v.type()) {
    case ValueType::kUndefined:
      return v;
    case ValueType::kBool:
      return Value::Real(v.AsBool() ? 1.0 : 0.0);
    case ValueType::kInteger:
      return Value::Real(static_cast<double>(v.AsInteger()));
    case ValueType::kReal:
      return v;
    case ValueType::kAbsTime:
      return Value::Real(static_cast<double>(v.AsAbsTimeSeconds()));
    case ValueType::kString: {
      const char* start = v.AsCString();
      char* end = nullptr;
      double r = std::strtod(start, &end);
      if (end == start) return Value::Error();  // nothing numeric at all
      return Value::Real(r);
    }
    default:
      return Value::Error();
  }
}

Value ToIntegerValue(const Value& v) {
  if (v.IsInteger()) return v;
  Value r = ToRealValue(v);
  if (!r.IsReal()) return r;
  double x = std::trunc(r.AsReal());
  if (!(x >= -9.2233720368547758e18 && x < 9.2233720368547758e18)) return Value::Error();
  return Value::Integer(static_cast<int64_t>(x));
}

std::vector<std::string_view> SplitStringList(std::string_view s, std::string_view separators) {
  std::vector<std::string_view> out;
  AnyItem(s, separators, false, [&](std::string_view item) {
    out.push_back(item);
    return false;
  });
  return out;
}

}  // namespace kite::classad
