// Matchmaking: Requirements in both directions, and Rank.
#include "classad/match.h"

#include "classad/expr.h"
#include "classad/nodes.h"

namespace kite::classad {
namespace {

uint32_t Key(std::string_view name) {
  return InternName(name).key;
}

}  // namespace

bool RequirementsMet(const ClassAd& my, const ClassAd& target) {
  static const uint32_t kRequirements = Key("Requirements");
  const Expr* req = my.FindKey(kRequirements);
  return req != nullptr && EvaluateExpr(*req, &my, &target).IsTrue();
}

bool Match(const ClassAd& a, const ClassAd& b) {
  return RequirementsMet(a, b) && RequirementsMet(b, a);
}

double Rank(const ClassAd& my, const ClassAd& target) {
  static const uint32_t kRank = Key("Rank");
  const Expr* rank = my.FindKey(kRank);
  if (rank == nullptr) return 0.0;
  Value v = EvaluateExpr(*rank, &my, &target);
  if (v.IsNumber()) return v.AsNumber();
  if (v.IsBool()) return v.AsBool() ? 1.0 : 0.0;
  return 0.0;
}

std::vector<const Expr*> Conjuncts(const Expr& expr) {
  if (expr.kind() == ExprKind::kBinary) {
    const auto& b = static_cast<const BinaryExpr&>(expr);
    if (b.op() == Op::kAnd) {
      auto out = Conjuncts(*b.lhs);
      auto rest = Conjuncts(*b.rhs);
      out.insert(out.end(), rest.begin(), rest.end());
      return out;
    }
  }
  return {&expr};
}

namespace {

std::string AsText(const Value& v) {
  return v.IsString() ? std::string(v.AsString()) : v.ToString();
}

// One reference's value: what is between "$$(" and its ")".
kite::Result<std::string> Resolve(std::string_view inner, const ClassAd& job,
                                  const ClassAd& machine) {
  auto missing = [&] {
    return kite::Fail(kite::ErrorCode::kNotFound,
                      "$$(" + std::string(inner) + ") cannot be expanded against the machine");
  };
  if (inner.size() >= 2 && inner.front() == '[' && inner.back() == ']') {
    auto e = ParseExpr(inner.substr(1, inner.size() - 2));
    if (!e)
      return kite::Fail(kite::ErrorCode::kInvalidInput,
                        "$$(" + std::string(inner) + "): " + e.error().message());
    Value v = EvaluateExpr(**e, &job, &machine);
    if (v.IsExceptional()) return missing();
    return AsText(v);
  }
  std::string_view name = inner;
  std::optional<std::string_view> fallback;
  if (auto colon = inner.find(':'); colon != std::string_view::npos) {
    name = inner.substr(0, colon);
    fallback = inner.substr(colon + 1);
  }
  Value v = machine.Evaluate(name, &job);
  if (!v.IsExceptional()) return AsText(v);
  if (fallback) return std::string(*fallback);
  return missing();
}

}  // namespace

kite::Result<std::string> ExpandMatchReferences(std::string_view text, const ClassAd& job,
                                                const ClassAd& machine) {
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = text.find("$$(", pos)) != std::string_view::npos;) {
    // The reference ends at the ")" that closes it: brackets may hold parentheses.
    size_t i = at + 3;
    int depth = 1;
    for (; i < text.size() && depth > 0; ++i) {
      if (text[i] == '(') ++depth;
      if (text[i] == ')') --depth;
    }
    if (depth > 0)
      return kite::Fail(kite::ErrorCode::kInvalidInput,
                        "missing ')' after $$( in \"" + std::string(text) + "\"");
    auto value = Resolve(text.substr(at + 3, i - 1 - (at + 3)), job, machine);
    if (!value) return value;
    out.append(text.substr(pos, at - pos));
    out += *value;
    pos = i;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace kite::classad
