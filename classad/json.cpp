// ClassAds as JSON, in the form condor_q -json writes: a fast hand-written writer and a reader
// built on Boost.JSON.
#include <boost/json.hpp>
#include <charconv>
#include <cmath>

#include "classad/io.h"
#include "classad/nodes.h"

namespace kite::classad {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t Utf8Length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

void AppendEscapedBody(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c >= 0x80) {
      if (size_t n = Utf8Length(s, i); n > 0) {
        out.append(s.substr(i, n));
        i += n - 1;
        continue;
      }
    }
    // Control characters, and bytes that are not UTF-8 (read as Latin-1), as \u00XX.
    out += "\\u00";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
}

void AppendQuotedExpr(std::string& out, const Expr& expr) {
  std::string text;
  AppendUnparse(text, expr);
  out += "\"\\/Expr(";
  AppendEscapedBody(out, text);
  out += ")\\/\"";
}

void AppendLiteral(std::string& out, const Expr& expr, const Value& v) {
  switch (v.type()) {
    case ValueType::kUndefined:
      out += "null";
      return;
    case ValueType::kBool:
      out += v.AsBool() ? "true" : "false";
      return;
    case ValueType::kInteger: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof(buf), v.AsInteger());
      out.append(buf, r.ptr);
      return;
    }
    case ValueType::kReal:
      if (std::isfinite(v.AsReal())) {
        AppendReal(out, v.AsReal());
        return;
      }
      AppendQuotedExpr(out, expr);
      return;
    case ValueType::kString:
      AppendJsonString(out, v.AsString());
      return;
    default:
      AppendQuotedExpr(out, expr);
      return;
  }
}

void AppendObject(std::string& out, const ClassAd& ad, JsonStyle style, int indent);

void AppendValue(std::string& out, const Expr& expr, JsonStyle style, int indent) {
  switch (expr.kind()) {
    case ExprKind::kLiteral:
      AppendLiteral(out, expr, static_cast<const LiteralExpr&>(expr).value);
      return;
    case ExprKind::kList: {
      const auto& items = static_cast<const ListExpr&>(expr).items;
      out.push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out.push_back(',');
        AppendValue(out, *items[i], style, indent);
      }
      out.push_back(']');
      return;
    }
    case ExprKind::kRecord:
      AppendObject(out, *static_cast<const RecordExpr&>(expr).ad, style, indent + 2);
      return;
    default:
      AppendQuotedExpr(out, expr);
      return;
  }
}

void AppendObject(std::string& out, const ClassAd& ad, JsonStyle style, int indent) {
  bool pretty = style == JsonStyle::kPretty;
  out.push_back('{');
  bool first = true;
  ForEachVisibleAttribute(ad, [&](std::string_view name, const Expr& expr) {
    if (!first) out.push_back(',');
    first = false;
    if (pretty) {
      out.push_back('\n');
      out.append(static_cast<size_t>(indent) + 2, ' ');
    }
    AppendJsonString(out, name);
    out += pretty ? ": " : ":";
    AppendValue(out, expr, style, indent);
  });
  if (pretty && !first) {
    out.push_back('\n');
    out.append(static_cast<size_t>(indent), ' ');
  }
  out.push_back('}');
}

// ---- reading ----

kite::Result<ExprPtr> FromJson(const boost::json::value& v, int depth);

kite::Result<std::shared_ptr<ClassAd>> ObjectToAd(const boost::json::object& obj, int depth) {
  auto ad = std::make_shared<ClassAd>();
  for (const auto& member : obj) {
    std::string_view name(member.key().data(), member.key().size());
    if (name.empty()) return kite::Fail(kite::ErrorCode::kInvalidInput, "empty attribute name");
    auto e = FromJson(member.value(), depth + 1);
    if (!e) return kite::Fail(e.error().Wrap("attribute " + std::string(name)));
    ad->Insert(name, std::move(*e));
  }
  return ad;
}

kite::Result<ExprPtr> FromJsonString(std::string_view s) {
  constexpr std::string_view kOpen = "/Expr(", kClose = ")/";
  if (s.size() >= kOpen.size() + kClose.size() && s.starts_with(kOpen) && s.ends_with(kClose)) {
    return ParseExpr(s.substr(kOpen.size(), s.size() - kOpen.size() - kClose.size()));
  }
  return MakeString(s);
}

kite::Result<ExprPtr> FromJson(const boost::json::value& v, int depth) {
  if (depth > kMaxExprDepth) {
    return kite::Fail(kite::ErrorCode::kInvalidInput, "JSON nested too deeply");
  }
  switch (v.kind()) {
    case boost::json::kind::null:
      return MakeUndefined();
    case boost::json::kind::bool_:
      return MakeBool(v.get_bool());
    case boost::json::kind::int64:
      return MakeInteger(v.get_int64());
    case boost::json::kind::uint64: {
      uint64_t u = v.get_uint64();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return MakeInteger(static_cast<int64_t>(u));
      return MakeReal(static_cast<double>(u));
    }
    case boost::json::kind::double_:
      return MakeReal(v.get_double());
    case boost::json::kind::string: {
      const auto& s = v.get_string();
      return FromJsonString(std::string_view(s.data(), s.size()));
    }
    case boost::json::kind::array: {
      std::vector<ExprPtr> items;
      int d = 1;
      for (const auto& item : v.get_array()) {
        auto e = FromJson(item, depth + 1);
        if (!e) return e;
        d = std::max(d, (*e)->depth() + 1);
        items.push_back(std::move(*e));
      }
      return std::make_shared<ListExpr>(std::move(items), d);
    }
    case boost::json::kind::object: {
      auto ad = ObjectToAd(v.get_object(), depth + 1);
      if (!ad) return kite::Fail(ad.error());
      int d = 1;
      for (const auto& attr : **ad) d = std::max(d, attr.expr().depth() + 1);
      return std::make_shared<RecordExpr>(std::move(*ad), d);
    }
  }
  return MakeUndefined();
}

kite::Result<boost::json::value> ParseJsonText(std::string_view text) {
  boost::json::parse_options opts;
  opts.max_depth = kMaxExprDepth;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(boost::json::string_view(text.data(), text.size()), ec,
                                            boost::json::storage_ptr(), opts);
  if (ec) return kite::Fail(kite::ErrorCode::kInvalidInput, "bad JSON: " + ec.message());
  return v;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  AppendEscapedBody(out, s);
  out.push_back('"');
}

void AppendJsonValue(std::string& out, const Expr& expr) {
  AppendValue(out, expr, JsonStyle::kCompact, 0);
}

void AppendJsonMember(std::string& out, std::string_view name, const Expr& expr) {
  AppendJsonString(out, name);
  out.push_back(':');
  AppendValue(out, expr, JsonStyle::kCompact, 0);
}

void AppendJsonMembers(std::string& out, const ClassAd& ad) {
  bool first = true;
  for (const auto& attr : ad) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonMember(out, attr.name(), attr.expr());
  }
}

void AppendJson(std::string& out, const ClassAd& ad, JsonStyle style) {
  AppendObject(out, ad, style, 0);
}

kite::Result<ClassAd> ParseJsonAd(std::string_view text) {
  auto v = ParseJsonText(text);
  if (!v) return kite::Fail(v.error());
  if (!v->is_object())
    return kite::Fail(kite::ErrorCode::kInvalidInput, "JSON ad must be an object");
  auto ad = ObjectToAd(v->get_object(), 1);
  if (!ad) return kite::Fail(ad.error());
  return std::move(**ad);
}

kite::Result<std::vector<ClassAd>> ParseJsonAds(std::string_view text) {
  auto v = ParseJsonText(text);
  if (!v) return kite::Fail(v.error());
  std::vector<ClassAd> ads;
  if (v->is_object()) {
    auto ad = ObjectToAd(v->get_object(), 1);
    if (!ad) return kite::Fail(ad.error());
    ads.push_back(std::move(**ad));
    return ads;
  }
  if (!v->is_array()) {
    return kite::Fail(kite::ErrorCode::kInvalidInput, "JSON ads must be an array of objects");
  }
  for (const auto& item : v->get_array()) {
    if (!item.is_object()) {
      return kite::Fail(kite::ErrorCode::kInvalidInput, "JSON ads must be an array of objects");
    }
    auto ad = ObjectToAd(item.get_object(), 1);
    if (!ad) return kite::Fail(ad.error().Wrap("ad " + std::to_string(ads.size())));
    ads.push_back(std::move(**ad));
  }
  return ads;
}

}  // namespace kite::classad
