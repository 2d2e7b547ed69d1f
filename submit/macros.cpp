// Submit-file definitions and $(NAME) expansion.
#include "submit/macros.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/strings.h"

namespace kite::submit {
namespace {

// Index of the ')' closing the '(' at `open`, honouring nested parentheses; npos when missing.
size_t FindClose(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

bool IsMacroName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), IsNameChar);
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

Error LineError(std::string_view file, int line, std::string_view message) {
  return Error(ErrorCode::kInvalidInput,
               std::string(file) + ":" + std::to_string(line) + ": " + std::string(message));
}

void MacroTable::Define(std::string_view name, std::string_view value, int line, bool is_command) {
  std::string key = ToLower(name);
  auto it = defs_.find(key);
  std::string text(value);
  if (it != defs_.end() && text.find("$(") != std::string::npos) {
    text = SubstituteSelf(text, name, it->second.value);
  }
  defs_[key] = Definition{std::string(name), std::move(text), line, is_command, false};
}

const Definition* MacroTable::Find(std::string_view lower_name) const {
  auto it = defs_.find(lower_name);
  return it == defs_.end() ? nullptr : &it->second;
}

Expander::Expander(const MacroTable& table, std::string file, long cluster_id)
    : table_(table), file_(std::move(file)), cluster_(std::to_string(cluster_id)) {}

Expander::Lookup Expander::Find(const std::string& name) {
  if (proc_ != nullptr && proc_->loop_names != nullptr) {
    for (size_t i = 0; i < proc_->loop_names->size(); ++i) {
      if ((*proc_->loop_names)[i] == name) {
        touched_ = true;
        return {(*proc_->loop_values)[i], nullptr};
      }
    }
  }
  if (name == "cluster" || name == "clusterid") return {cluster_, nullptr};
  if (proc_ != nullptr && (name == "process" || name == "procid")) {
    touched_ = true;
    return {std::to_string(proc_->proc_id), nullptr};
  }
  // A definition in the file wins over the remaining automatic variables, as in HTCondor.
  if (const Definition* def = table_.Find(name)) return {std::nullopt, def};
  if (proc_ != nullptr && name == "step") {
    touched_ = true;
    return {std::to_string(proc_->step), nullptr};
  }
  if (proc_ != nullptr && (name == "itemindex" || name == "row")) {
    touched_ = true;
    return {std::to_string(proc_->item_index), nullptr};
  }
  if (name == "dollar") return {"$", nullptr};
  if (name == "submit_file") return {file_, nullptr};
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
  if (found.literal) return Value{std::move(*found.literal), queue_line};
  if (found.def == nullptr) return std::optional<Value>();
  std::string out;
  if (auto st = ExpandDefinition(out, *found.def, found.def->line); !st) return Fail(st.error());
  return Value{std::move(out), found.def->line};
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
    size_t open = pos + 1;
    while (open < text.size() && std::isalpha(static_cast<unsigned char>(text[open]))) ++open;
    bool is_call = open < text.size() && text[open] == '(';
    if (text.substr(pos, 3) == "$$(") {
      // $$(Attr) is substituted at match time from the machine ad: keep it as written.
      size_t close = FindClose(text, pos + 2);
      if (close == std::string_view::npos)
        return Fail(LineError(file_, line, "missing ')' after $$("));
      out.append(text.substr(pos, close + 1 - pos));
      i = close + 1;
      continue;
    }
    if (!is_call) {
      out += '$';
      i = pos + 1;
      continue;
    }
    size_t close = FindClose(text, open);
    std::string_view word = text.substr(pos + 1, open - pos - 1);
    if (close == std::string_view::npos) {
      return Fail(LineError(file_, line, "missing ')' after $" + std::string(word) + "("));
    }
    std::string_view inner = text.substr(open + 1, close - open - 1);
    Status st = word.empty() ? ExpandReference(out, inner, line)
                : EqualsIgnoreCase(word, "ENV")
                    ? ExpandEnv(out, inner, line)
                    : Fail(LineError(file_, line,
                                     "unsupported macro function $" + std::string(word) + "()"));
    if (!st) return st;
    if (out.size() > kMaxExpansion) {
      return Fail(LineError(file_, line, "macro expansion is longer than 1 MiB"));
    }
    i = close + 1;
  }
  return {};
}

Status Expander::ExpandReference(std::string& out, std::string_view inner, int line) {
  auto [name, fallback] = SplitReference(inner);
  if (!IsMacroName(name)) {
    return Fail(LineError(file_, line, "bad macro reference $(" + std::string(inner) + ")"));
  }
  Lookup found = Find(ToLower(name));
  if (found.literal) {
    out.append(*found.literal);
    return {};
  }
  if (found.def != nullptr) return ExpandDefinition(out, *found.def, line);
  if (fallback) return ExpandInto(out, *fallback, line);
  return Fail(LineError(file_, line, "undefined macro $(" + std::string(name) + ")"));
}

Status Expander::ExpandDefinition(std::string& out, const Definition& def, int line) {
  if (auto cycle = std::find(stack_.begin(), stack_.end(), &def); cycle != stack_.end()) {
    std::string chain;
    for (auto it = cycle; it != stack_.end(); ++it) chain += (*it)->name + " -> ";
    return Fail(LineError(
        file_, def.line,
        "macro " + def.name + " is defined in terms of itself (" + chain + def.name + ")"));
  }
  if (stack_.size() >= kMaxDepth) {
    return Fail(LineError(file_, line, "macros nested more than 64 deep"));
  }
  def.used = true;
  stack_.push_back(&def);
  Status st = ExpandInto(out, def.value, def.line);
  stack_.pop_back();
  return st;
}

Status Expander::ExpandEnv(std::string& out, std::string_view inner, int line) {
  auto [name, fallback] = SplitReference(inner);
  if (!IsMacroName(name)) {
    return Fail(LineError(file_, line, "bad reference $ENV(" + std::string(inner) + ")"));
  }
  const char* value = std::getenv(std::string(name).c_str());
  if (value != nullptr) {
    out.append(value);
    return {};
  }
  if (fallback) return ExpandInto(out, *fallback, line);
  return Fail(LineError(file_, line, "environment variable " + std::string(name) + " is not set"));
}

}  // namespace kite::submit
