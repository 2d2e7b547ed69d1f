// Number, size and expression helpers of the submit language.
#include "submit/expr_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "classad/classad.h"
#include "classad/expr.h"
#include "common/strings.h"

namespace kite::submit {
namespace {

std::optional<long long> PlainInteger(std::string_view s) {
  s = Trim(s);
  long long n = 0;
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  auto [p, ec] = std::from_chars(begin, s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return n;
}

// Multiplier of a size unit ("", "k", "mb", "GiB", ...), in bytes; 0 when it is not one.
int64_t UnitBytes(std::string_view unit, int64_t base_bytes) {
  std::string u = ToLower(unit);
  if (u.empty()) return base_bytes;
  if (u == "b") return 1;
  static const char* kLetters = "kmgtp";
  for (int i = 0; kLetters[i] != '\0'; ++i) {
    std::string l(1, kLetters[i]);
    if (u == l || u == l + "b" || u == l + "ib") return int64_t{1} << (10 * (i + 1));
  }
  return 0;
}

}  // namespace

Result<classad::Value> EvalText(std::string_view text) {
  auto expr = classad::ParseExpr(text);
  if (!expr) return Fail(expr.error());
  classad::ClassAd empty;
  return classad::EvaluateExpr(**expr, &empty);
}

std::optional<long long> EvalInteger(std::string_view text) {
  if (auto n = PlainInteger(text)) return n;
  auto v = EvalText(text);
  if (!v) return std::nullopt;
  if (v->IsInteger()) return v->AsInteger();
  if (v->IsBool()) return v->AsBool() ? 1 : 0;
  if (v->IsReal() && std::isfinite(v->AsReal()) && std::fabs(v->AsReal()) < 9.2e18) {
    return static_cast<long long>(v->AsReal());
  }
  return std::nullopt;
}

std::optional<double> EvalReal(std::string_view text) {
  auto v = EvalText(text);
  if (!v) return std::nullopt;
  if (v->IsNumber()) return v->AsNumber();
  if (v->IsBool()) return v->AsBool() ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<int64_t> ParseBytes(std::string_view text, int64_t base_bytes) {
  std::string_view s = Trim(text);
  size_t end = 0;
  while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.')) {
    ++end;
  }
  if (end == 0 || std::count(s.begin(), s.begin() + static_cast<long>(end), '.') > 1 ||
      (end == 1 && s[0] == '.')) {
    return std::nullopt;
  }
  int64_t mult = UnitBytes(Trim(s.substr(end)), base_bytes);
  if (mult == 0) return std::nullopt;
  double n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + end, n);
  if (ec != std::errc() || p != s.data() + end) return std::nullopt;
  double units = std::ceil(n * static_cast<double>(mult) / static_cast<double>(base_bytes));
  if (!std::isfinite(units) || units > 9.0e18) return std::nullopt;
  return static_cast<int64_t>(units);
}

std::string WrapForJoin(std::string_view expr, JoinOp op) {
  auto parsed = classad::ParseExpr(expr);
  if (!parsed) return std::string(Trim(expr));
  std::string text = classad::Unparse(**parsed);
  int depth = 0;
  bool weaker = false;
  for (size_t i = 0; i < text.size() && !weaker; ++i) {
    char c = text[i];
    if (c == '"') {  // skip a string literal
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth != 0) continue;
    if (c == '?') weaker = true;  // c ? a : b and a ?: b bind less tightly than || and &&
    if (op == JoinOp::kAnd && c == '|' && i + 1 < text.size() && text[i + 1] == '|') weaker = true;
  }
  return weaker ? "(" + text + ")" : std::string(Trim(expr));
}

std::set<std::string> ReferencedNames(std::string_view expr, bool include_my) {
  std::set<std::string> out;
  auto parsed = classad::ParseExpr(expr);
  if (!parsed) return out;
  std::string text = classad::Unparse(**parsed);
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      ++i;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && ident(text[i])) ++i;
    std::string word = ToLower(std::string_view(text).substr(start, i - start));
    bool after_dot = start > 0 && text[start - 1] == '.';
    if (after_dot) continue;  // the name after a scope is taken with the scope below
    if ((word == "target" || word == "my") && i < text.size() && text[i] == '.') {
      size_t name_start = ++i;
      while (i < text.size() && ident(text[i])) ++i;
      if (word == "target" || include_my) {
        out.insert(ToLower(std::string_view(text).substr(name_start, i - name_start)));
      }
      continue;
    }
    bool call = i < text.size() && text[i] == '(';
    static const char* kKeywords[] = {"true", "false", "undefined", "error", "is", "isnt"};
    if (call ||
        std::find(std::begin(kKeywords), std::end(kKeywords), word) != std::end(kKeywords)) {
      continue;
    }
    out.insert(word);
  }
  return out;
}

std::optional<std::string> StringLiteral(std::string_view expr) {
  auto parsed = classad::ParseExpr(expr);
  if (!parsed || (*parsed)->kind() != classad::ExprKind::kLiteral) return std::nullopt;
  classad::ClassAd empty;
  classad::Value v = classad::EvaluateExpr(**parsed, &empty);
  if (!v.IsString()) return std::nullopt;
  return std::string(v.AsString());
}

std::string CanonicalExpr(std::string_view text) {
  auto parsed = classad::ParseExpr(text);
  return parsed ? classad::Unparse(**parsed) : std::string(text);
}

}  // namespace kite::submit
