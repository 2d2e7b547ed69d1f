// Matchmaking: Requirements in both directions, and Rank.
#include "classad/match.h"

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

}  // namespace kite::classad
