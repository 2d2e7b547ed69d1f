// condor_q's -af, -format and -long output forms.
#include "agent/print_format.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "classad/io.h"
#include "classad/value.h"

namespace kite::agent {
namespace {

constexpr int kMaxDigits = 4;  // width and precision up to 9999
constexpr std::string_view kIntConversions = "diuxXoc";
constexpr std::string_view kRealConversions = "feEgG";
constexpr std::string_view kValueConversions = "svV";

std::unexpected<Error> Bad(std::string_view format, const std::string& why) {
  return Fail(ErrorCode::kInvalidInput, "-format '" + std::string(format) + "': " + why);
}

Result<classad::ExprPtr> ParseItemExpr(const char* option, std::string_view text) {
  auto e = classad::ParseExpr(text);
  if (!e)
    return Fail(ErrorCode::kInvalidInput, std::string(option) + ": bad expression '" +
                                              std::string(text) + "': " + e.error().message());
  return *e;
}

// The text of a format outside a conversion: "%%" and C's escapes resolved. `*i` is left on the
// '%' that starts the next conversion (or at the end).
std::string Literal(std::string_view f, size_t* i) {
  std::string out;
  for (; *i < f.size(); ++*i) {
    char c = f[*i];
    if (c == '%') {
      if (*i + 1 < f.size() && f[*i + 1] == '%') {
        out += '%';
        ++*i;
        continue;
      }
      break;
    }
    if (c == '\\' && *i + 1 < f.size()) {
      char n = f[*i + 1];
      const char* resolved = n == 'n'    ? "\n"
                             : n == 't'  ? "\t"
                             : n == '\\' ? "\\"
                             : n == '"'  ? "\""
                                         : nullptr;
      if (resolved) {
        out += resolved;
        ++*i;
        continue;
      }
    }
    out += c;
  }
  return out;
}

// Up to kMaxDigits digits at f[*i]; -1 when there are none.
Result<int> Digits(std::string_view f, size_t* i) {
  int n = -1, count = 0;
  while (*i < f.size() && std::isdigit(static_cast<unsigned char>(f[*i]))) {
    if (++count > kMaxDigits) return Fail(ErrorCode::kInvalidInput, "width or precision too large");
    n = (n < 0 ? 0 : n * 10) + (f[*i] - '0');
    ++*i;
  }
  return n;
}

// Reads "%[flags][width][.precision][l|h...]conv" at f[*i] (on the '%').
Status Conversion(std::string_view f, size_t* i, PrintfItem* item) {
  ++*i;
  while (*i < f.size() && std::string_view("-+ #0").find(f[*i]) != std::string_view::npos) {
    if (item->flags.size() >= 5) return Fail(ErrorCode::kInvalidInput, "too many flags");
    item->flags += f[(*i)++];
  }
  auto w = Digits(f, i);
  if (!w) return Fail(w.error());
  item->width = *w;
  if (*i < f.size() && f[*i] == '.') {
    ++*i;
    auto p = Digits(f, i);
    if (!p) return Fail(p.error());
    item->precision = std::max(*p, 0);
  }
  while (*i < f.size() && (f[*i] == 'l' || f[*i] == 'h')) ++*i;  // C length modifiers: ignored
  if (*i >= f.size()) return Fail(ErrorCode::kInvalidInput, "a '%' with no conversion");
  char c = f[(*i)++];
  if (std::string(kIntConversions).append(kRealConversions).append(kValueConversions).find(c) ==
      std::string::npos)
    return Fail(ErrorCode::kInvalidInput, std::string("unknown conversion %") + c);
  item->conversion = c;
  return {};
}

// The C format for `item`, keeping only flags C defines for its conversion.
std::string CFormat(const PrintfItem& item, const char* length, char conversion) {
  std::string f = "%";
  bool numeric = conversion != 's' && conversion != 'c';
  bool alt_ok = std::string_view("oxXfeEgG").find(conversion) != std::string_view::npos;
  for (char flag : item.flags) {
    if ((flag == '#' && !alt_ok) || (flag == '0' && !numeric)) continue;
    f += flag;
  }
  if (item.width >= 0) f += std::to_string(item.width);
  if (item.precision >= 0 && conversion != 'c') f += "." + std::to_string(item.precision);
  return f + length + conversion;
}

template <typename T>
std::string Print(const std::string& format, T value) {
  int n = std::snprintf(nullptr, 0, format.c_str(), value);
  if (n <= 0) return "";
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format.c_str(), value);
  out.resize(static_cast<size_t>(n));
  return out;
}

// A value as -af and %v show it: strings bare, anything else as its literal.
std::string ValueText(const classad::Value& v, bool quoted) {
  if (v.IsString() && !quoted) return std::string(v.AsString());
  return v.ToString();
}

std::string Converted(const PrintfItem& item, const classad::Value& v) {
  char c = item.conversion;
  bool int_conv = kIntConversions.find(c) != std::string_view::npos;
  bool real_conv = kRealConversions.find(c) != std::string_view::npos;
  if (int_conv || real_conv) {
    std::optional<double> real;
    std::optional<long long> whole;
    if (v.IsInteger()) whole = v.AsInteger();
    if (v.IsReal()) real = v.AsReal();
    if (v.IsBool()) whole = v.AsBool() ? 1 : 0;
    if (whole) real = static_cast<double>(*whole);
    if (real && !whole && int_conv) {
      double r = *real;
      whole = r != r      ? 0
              : r > 9e18  ? 9000000000000000000LL
              : r < -9e18 ? -9000000000000000000LL
                          : static_cast<long long>(r);
    }
    if (real_conv && real) return Print(CFormat(item, "", c), *real);
    if (int_conv && whole) {
      if (c == 'd' || c == 'i') return Print(CFormat(item, "ll", c), *whole);
      if (c == 'c')
        return Print(CFormat(item, "", c), static_cast<int>(static_cast<unsigned char>(*whole)));
      return Print(CFormat(item, "ll", c), static_cast<unsigned long long>(*whole));
    }
    // Not a number (a string, undefined...): its text, in the field's width.
  }
  PrintfItem as_string = item;
  if (c != 's' && c != 'v' && c != 'V') as_string.precision = -1;
  std::string text = ValueText(v, c == 'V');
  return Print(CFormat(as_string, "", 's'), text.c_str());
}

}  // namespace

Result<AutoFormat> ParseAutoFormat(std::string_view modifiers,
                                   const std::vector<std::string>& exprs) {
  AutoFormat af;
  for (char m : modifiers) {
    switch (m) {
      case 'j':
        af.job_id = true;
        break;
      case 'l':
        af.labels = true;
        break;
      case 'h':
        af.header = true;
        break;
      case 'V':
        af.quoted = true;
        break;
      case 'r':
      case 'o':
        af.raw = true;
        break;
      case 'g':
        af.blank_after = true;
        break;
      case 't':
        af.separator = "\t";
        break;
      case ',':
        af.separator = ",";
        break;
      case 'n':
        af.separator = "\n";
        break;
      default:
        return Fail(ErrorCode::kInvalidInput,
                    std::string("-af: unknown modifier '") + m +
                        "' (known: j job id, l labels, h header, t tab, ',' comma, n newline, g "
                        "blank line, V quoted, r raw)");
    }
  }
  if (exprs.empty()) return Fail(ErrorCode::kInvalidInput, "-af needs at least one attribute");
  for (auto& e : exprs) {
    auto p = ParseItemExpr("-af", e);
    if (!p) return Fail(p.error());
    af.names.push_back(e);
    af.exprs.push_back(std::move(*p));
  }
  return af;
}

Result<PrintfItem> ParsePrintfItem(std::string_view format, std::string_view expr) {
  PrintfItem item;
  size_t i = 0;
  item.before = Literal(format, &i);
  if (i < format.size()) {
    if (auto st = Conversion(format, &i, &item); !st) return Bad(format, st.error().message());
    item.after = Literal(format, &i);
    if (i < format.size()) return Bad(format, "one conversion per -format; give -format again");
  }
  auto p = ParseItemExpr("-format", expr);
  if (!p) return Fail(p.error());
  item.name = std::string(expr);
  item.expr = std::move(*p);
  return item;
}

std::string FormatAutoLine(const AutoFormat& af, const classad::ClassAd& ad, int cluster, int proc,
                           bool first) {
  std::string out;
  std::string sep = af.separator;
  if (first && af.header) {
    if (af.job_id) out += "ID" + sep;
    for (size_t i = 0; i < af.names.size(); ++i) out += (i ? sep : "") + af.names[i];
    out += af.line_end;
  }
  if (af.job_id) {
    out += af.labels ? "ID = " : "";
    out += std::to_string(cluster) + "." + std::to_string(proc) + sep;
  }
  for (size_t i = 0; i < af.exprs.size(); ++i) {
    if (i) out += sep;
    if (af.labels) out += af.names[i] + " = ";
    if (af.raw) {
      const classad::Expr* bound = ad.Lookup(af.names[i]);
      out += classad::Unparse(bound ? *bound : *af.exprs[i]);
    } else {
      out += ValueText(classad::EvaluateExpr(*af.exprs[i], &ad), af.quoted);
    }
  }
  out += af.line_end;
  if (af.blank_after) out += "\n";
  return out;
}

std::string FormatPrintf(const std::vector<PrintfItem>& items, const classad::ClassAd& ad) {
  std::string out;
  for (auto& item : items) {
    out += item.before;
    if (item.conversion) out += Converted(item, classad::EvaluateExpr(*item.expr, &ad));
    out += item.after;
  }
  return out;
}

std::string FormatLong(const classad::ClassAd& ad) {
  return classad::ToOldText(ad) + "\n";
}

}  // namespace kite::agent
