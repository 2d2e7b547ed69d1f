// The pool's matchmaking.
#include "agent/negotiator.h"

#include <cctype>
#include <map>

#include "classad/expr.h"
#include "classad/match.h"
#include "common/strings.h"

namespace kite::agent {

bool SlotMatches(const classad::ClassAd& job, const classad::ClassAd& slot) {
  if (!classad::Match(job, slot)) return false;
  auto runtime = job.EvaluateReal("MaxRuntime");
  auto ttl = slot.EvaluateReal("TimeToLive");
  return !(runtime && ttl && *runtime > *ttl);
}

std::optional<size_t> BestSlot(const classad::ClassAd& job,
                               const std::vector<const classad::ClassAd*>& slots) {
  std::optional<size_t> best;
  double best_job_rank = 0, best_slot_rank = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!SlotMatches(job, *slots[i])) continue;
    double job_rank = classad::Rank(job, *slots[i]);
    double slot_rank = classad::Rank(*slots[i], job);
    if (!best || job_rank > best_job_rank ||
        (job_rank == best_job_rank && slot_rank > best_slot_rank)) {
      best = i;
      best_job_rank = job_rank;
      best_slot_rank = slot_rank;
    }
  }
  return best;
}

namespace {
// An attribute named in quotes ('a b') is not a word NamesIn would find: such ads get no kind.
bool HasQuotedName(std::string_view text) {
  return text.find('\'') != std::string_view::npos;
}
}  // namespace

void NamesIn(std::string_view text, std::set<std::string>* names) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size();) {
    if (!word(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && word(text[j])) ++j;
    if (!std::isdigit(static_cast<unsigned char>(text[i])))
      names->insert(ToLower(text.substr(i, j - i)));
    i = j;
  }
}

MatchKinds::MatchKinds(const std::vector<const classad::ClassAd*>& slots) {
  bool quoted = false;
  for (const classad::ClassAd* slot : slots) {
    for (const auto& a : *slot) {
      std::string text = classad::Unparse(a.expr());
      quoted = quoted || HasQuotedName(text);
      NamesIn(a.name(), &slot_names_);
      NamesIn(text, &slot_names_);
    }
  }
  dynamic_ = slot_names_.count("eval") > 0 || quoted;
}

std::optional<std::string> MatchKinds::KindOf(const classad::ClassAd& job) const {
  if (dynamic_) return std::nullopt;
  // The job's attributes the slots could read, and its own matchmaking expressions; then every
  // name a significant attribute's expression mentions. (Walking the job's few attributes, not
  // the slots' many names: a thousand slot names would mean a thousand lookups per job.)
  std::vector<std::string> todo = {"requirements", "rank", "maxruntime"};
  for (const auto& a : job) {
    std::string name = ToLower(a.name());
    if (slot_names_.count(name)) todo.push_back(std::move(name));
  }
  std::map<std::string, std::string> seen;  // name → its expression's text ("" when absent)
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    if (seen.count(name)) continue;
    std::string& text = seen[name];
    const classad::Expr* e = job.Lookup(name);
    if (e == nullptr) continue;
    text = classad::Unparse(*e);
    std::set<std::string> more;
    NamesIn(text, &more);
    if (more.count("eval") || HasQuotedName(text)) return std::nullopt;
    for (auto& m : more)
      if (!seen.count(m)) todo.push_back(m);
  }
  // The kind: each significant attribute the job has, with its expression, in name order.
  std::string key;
  for (const auto& [name, text] : seen) {
    if (text.empty()) continue;
    key += name;
    key += '=';
    key += text;
    key += '\n';
  }
  return key;
}

}  // namespace kite::agent
