// Submit-file definitions and $(NAME) expansion (the macro functions are in macro_functions.cpp).
#include "submit/macros.h"

#include <algorithm>
#include <cctype>
#include <random>

#include "common/strings.h"

namespace kite::submit {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Splits the inside of $(...) into name and optional default ("NAME:default").
std::pair<std::string_view, std::optional<std::string_view>> SplitReference(
    std::string_view inner) {
  auto colon = inner.find(':');
  if (colon == std::string_view::npos) return {Trim(inner), std::nullopt};
  return {Trim(inner.substr(0, colon)), inner.substr(colon + 1)};
}

// Replaces $(name) and $(name:...) in `value` by `previous`.
std::string SubstituteSelf(std::string_view value, std::string_view name,
                           std::string_view previous) {
  std::string out;
  size_t i = 0;
  while (i < value.size()) {
    size_t pos = value.find("$(", i);
    if (pos == std::string_view::npos) break;
    size_t close = FindClose(value, pos + 1);
    bool match_dollar = pos > 0 && value[pos - 1] == '$';  // $$(...) is not a macro
    if (close == std::string_view::npos) break;
    auto [ref, def] = SplitReference(value.substr(pos + 2, close - pos - 2));
    out.append(value.substr(i, pos - i));
    if (!match_dollar && EqualsIgnoreCase(ref, name)) {
      out.append(previous);
    } else {
      out.append(value.substr(pos, close + 1 - pos));
    }
    i = close + 1;
  }
  out.append(value.substr(std::min(i, value.size())));
  return out;
}

}  // namespace

bool IsMacroName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), IsNameChar);
}

size_t FindClose(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

void MacroTable::Define(std::string_view key, std::string_view name, std::string_view value,
                        int line, bool is_command) {
  auto it = defs_.find(key);
  std::string text(value);
  if (it != defs_.end() && text.find("$(") != std::string::npos) {
    text = SubstituteSelf(text, name, it->second.value);
  }
  defs_[std::string(key)] = Definition{std::string(name), std::move(text), line, is_command, false};
}

const Definition* MacroTable::Find(std::string_view lower_name) const {
  auto it = defs_.find(lower_name);
  return it == defs_.end() ? nullptr : &it->second;
}

Expander::Expander(const MacroTable& table, const SourceMap& map, BuiltinMacros builtins,
                   std::function<uint32_t()> random)
    : table_(table), map_(map), builtins_(std::move(builtins)), random_(std::move(random)) {}

uint32_t Expander::Random() {
  touched_ = true;  // a random value is drawn again for every proc
  if (random_) return random_();
  static thread_local std::mt19937 gen{std::random_device{}()};
  return static_cast<uint32_t>(gen());
}

// Proc variables come first, then the file's definitions, then condor_submit's built-ins; only
// Cluster and Process cannot be redefined (as in HTCondor, which sets them live per job).
Expander::Lookup Expander::Find(const std::string& name) {
  if (proc_ != nullptr && proc_->loop_names != nullptr) {
    for (size_t i = 0; i < proc_->loop_names->size(); ++i) {
      if ((*proc_->loop_names)[i] == name) {
        touched_ = true;
        const std::string& v = (*proc_->loop_values)[i];
        return {v, nullptr, v.find('$') != std::string::npos};
      }
    }
  }
  if (name == "cluster" || name == "clusterid") return {builtins_.cluster, nullptr};
  if (proc_ != nullptr && (name == "process" || name == "procid")) {
    touched_ = true;
    return {std::to_string(proc_->proc_id), nullptr};
  }
  if (const Definition* def = table_.Find(name)) return {std::nullopt, def};
  return FindBuiltin(name);
}

Expander::Lookup Expander::FindBuiltin(const std::string& name) {
  if (proc_ != nullptr) {
    if (name == "step") {
      touched_ = true;
      return {std::to_string(proc_->step), nullptr};
    }
    if (name == "itemindex" || name == "row") {
      touched_ = true;
      return {std::to_string(proc_->item_index), nullptr};
    }
    if (name == "jobid") {
      touched_ = true;
      return {builtins_.cluster + "." + std::to_string(proc_->proc_id), nullptr};
    }
    if (name == "node") return {std::string(), nullptr};  // "" outside parallel universe
  }
  static const std::pair<const char*, std::string BuiltinMacros::*> kFixed[] = {
      {"submit_file", &BuiltinMacros::submit_file},
      {"submit_time", &BuiltinMacros::submit_time},
      {"year", &BuiltinMacros::year},
      {"month", &BuiltinMacros::month},
      {"day", &BuiltinMacros::day},
      {"arch", &BuiltinMacros::arch},
      {"opsys", &BuiltinMacros::opsys},
  };
  for (const auto& [key, member] : kFixed) {
    if (name == key) return {builtins_.*member, nullptr};
  }
  if (name == "dollar") return {"$", nullptr};
  if (name == "islinux") return {builtins_.opsys == "LINUX" ? "1" : "0", nullptr};
  if (name == "iswindows") return {builtins_.opsys == "WINDOWS" ? "1" : "0", nullptr};
  return {};
}

Result<std::string> Expander::Expand(std::string_view text, int line) {
  std::string out;
  stack_.clear();
  if (auto st = ExpandInto(out, text, line); !st) return Fail(st.error());
  return out;
}

Result<std::optional<Expander::Value>> Expander::ExpandName(const std::string& lower_name,
                                                            int queue_line) {
  stack_.clear();
  Lookup found = Find(lower_name);
  if (found.literal && !found.expand) return Value{std::move(*found.literal), queue_line};
  if (!found.literal && found.def == nullptr) return std::optional<Value>();
  int line = found.def != nullptr ? found.def->line : queue_line;
  std::string out;
  if (auto st = AppendFound(out, found, line); !st) return Fail(st.error());
  return Value{std::move(out), line};
}

Status Expander::AppendFound(std::string& out, const Lookup& found, int line) {
  if (found.def != nullptr) return ExpandDefinition(out, *found.def, line);
  if (!found.expand) {
    out.append(*found.literal);
    return {};
  }
  if (item_depth_ >= kMaxDepth) return Fail(Bad(line, "queue items nested more than 64 deep"));
  ++item_depth_;
  Status st = ExpandInto(out, *found.literal, line);
  --item_depth_;
  return st;
}

Status Expander::ExpandInto(std::string& out, std::string_view text, int line) {
  size_t i = 0;
  while (i < text.size()) {
    size_t pos = text.find('$', i);
    if (pos == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, pos - i));
    if (text.substr(pos, 3) == "$$(") {
      // $$(Attr) is substituted at match time from the machine ad: keep it as written.
      size_t close = FindClose(text, pos + 2);
      if (close == std::string_view::npos) return Fail(Bad(line, "missing ')' after $$("));
      out.append(text.substr(pos, close + 1 - pos));
      i = close + 1;
      continue;
    }
    size_t open = pos + 1;
    while (open < text.size() &&
           (std::isalpha(static_cast<unsigned char>(text[open])) || text[open] == '_')) {
      ++open;
    }
    if (open >= text.size() || text[open] != '(') {
      out += '$';  // a plain '$' ("cost $5")
      i = pos + 1;
      continue;
    }
    size_t close = FindClose(text, open);
    std::string_view word = text.substr(pos + 1, open - pos - 1);
    if (close == std::string_view::npos) {
      return Fail(Bad(line, "missing ')' after $" + std::string(word) + "("));
    }
    std::string_view inner = text.substr(open + 1, close - open - 1);
    Status st =
        word.empty() ? ExpandReference(out, inner, line) : ExpandFunction(out, word, inner, line);
    if (!st) return st;
    if (out.size() > kMaxExpansion) return Fail(Bad(line, "macro expansion is longer than 1 MiB"));
    i = close + 1;
  }
  return {};
}

Status Expander::ExpandReference(std::string& out, std::string_view inner, int line) {
  auto [name, fallback] = SplitReference(inner);
  if (!IsMacroName(name)) {
    return Fail(Bad(line, "bad macro reference $(" + std::string(inner) + ")"));
  }
  Lookup found = Find(ToLower(name));
  if (found.literal || found.def != nullptr) {
    size_t before = out.size();
    if (auto st = AppendFound(out, found, line); !st) return st;
    // HTCondor uses the default when the value is empty, not only when it is missing.
    if (out.size() == before && fallback) return ExpandInto(out, *fallback, line);
    return {};
  }
  if (fallback) return ExpandInto(out, *fallback, line);
  // condor_submit expands a macro nobody defined to nothing (DAGMan's VARS rely on it); the
  // parser warns of each.
  undefined_.emplace(line, std::string(name));
  return {};
}

Status Expander::ExpandDefinition(std::string& out, const Definition& def, int line) {
  if (auto cycle = std::find(stack_.begin(), stack_.end(), &def); cycle != stack_.end()) {
    std::string chain;
    for (auto it = cycle; it != stack_.end(); ++it) chain += (*it)->name + " -> ";
    return Fail(Bad(def.line, "macro " + def.name + " is defined in terms of itself (" + chain +
                                  def.name + ")"));
  }
  if (stack_.size() >= kMaxDepth) return Fail(Bad(line, "macros nested more than 64 deep"));
  def.used = true;
  stack_.push_back(&def);
  Status st = ExpandInto(out, def.value, def.line);
  stack_.pop_back();
  return st;
}

}  // namespace kite::submit
