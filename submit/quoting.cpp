// HTCondor argument and environment quoting, ClassAd string literals.
#include "submit/quoting.h"

#include <cstdio>

#include "common/strings.h"

namespace kite::submit {
namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// HTCondor's V2 raw form of one word: blanks and single quotes go inside single quotes (a quote
// doubled), one quoted section per run of them ("The Quicker, Fox" -> The' 'Quicker,' 'Fox); an
// empty word is ''.
void AppendV2Word(std::string& out, std::string_view word) {
  if (!out.empty()) out += ' ';
  if (word.empty()) {
    out += "''";
    return;
  }
  size_t word_start = out.size();
  for (char c : word) {
    if (!IsBlank(c) && c != '\'') {
      out += c;
      continue;
    }
    if (out.size() > word_start && out.back() == '\'') {
      out.pop_back();  // extend the quoted section just closed rather than open another
    } else {
      out += '\'';
    }
    if (c == '\'') out += '\'';
    out += c;
    out += '\'';
  }
}

// The inside of a new-style `"..."` value with "" turned into ", or nullopt-like error when the
// value is not wrapped in double quotes or holds a lone double quote.
Result<std::string> UnwrapDoubleQuoted(std::string_view value) {
  if (value.size() < 2 || value.front() != '"' || value.back() != '"') {
    return Fail(ErrorCode::kInvalidInput, "a value starting with '\"' must end with '\"'");
  }
  std::string_view inner = value.substr(1, value.size() - 2);
  std::string out;
  out.reserve(inner.size());
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] != '"') {
      out += inner[i];
    } else if (i + 1 < inner.size() && inner[i + 1] == '"') {
      out += '"';
      ++i;
    } else {
      return Fail(ErrorCode::kInvalidInput,
                  "a double quote inside a quoted value must be doubled (\"\")");
    }
  }
  return out;
}

// Old-syntax arguments: blanks separate, \" is a double quote, nothing else is special.
std::vector<std::string> SplitArgumentsV1(std::string_view value) {
  std::vector<std::string> args;
  std::string cur;
  bool in_arg = false;
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (IsBlank(c)) {
      if (in_arg) args.push_back(std::move(cur));
      cur.clear();
      in_arg = false;
      continue;
    }
    in_arg = true;
    if (c == '\\' && i + 1 < value.size() && value[i + 1] == '"') {
      cur += '"';
      ++i;
    } else {
      cur += c;
    }
  }
  if (in_arg) args.push_back(std::move(cur));
  return args;
}

Result<EnvEntry> ParseEnvEntry(std::string_view entry) {
  auto eq = entry.find('=');
  if (eq == std::string_view::npos || Trim(entry.substr(0, eq)).empty()) {
    return Fail(ErrorCode::kInvalidInput,
                "environment entry '" + std::string(entry) + "' is not NAME=VALUE");
  }
  return EnvEntry{std::string(Trim(entry.substr(0, eq))), std::string(entry.substr(eq + 1))};
}

void AddEnv(std::vector<EnvEntry>& env, EnvEntry entry) {
  for (auto& e : env) {
    if (e.first == entry.first) {
      e.second = std::move(entry.second);
      return;
    }
  }
  env.push_back(std::move(entry));
}

}  // namespace

Result<std::vector<std::string>> SplitArgumentsV2(std::string_view raw) {
  std::vector<std::string> args;
  std::string cur;
  bool in_arg = false;
  size_t i = 0;
  while (i < raw.size()) {
    char c = raw[i];
    if (IsBlank(c)) {
      if (in_arg) args.push_back(std::move(cur));
      cur.clear();
      in_arg = false;
      ++i;
      continue;
    }
    in_arg = true;
    if (c != '\'') {
      cur += c;
      ++i;
      continue;
    }
    // A single-quoted section: blanks are literal, '' is one single quote.
    for (++i;; ++i) {
      if (i >= raw.size()) {
        return Fail(ErrorCode::kInvalidInput, "unbalanced single quote in '" + std::string(raw) +
                                                  "' (write '' for a literal one)");
      }
      if (raw[i] != '\'') {
        cur += raw[i];
      } else if (i + 1 < raw.size() && raw[i + 1] == '\'') {
        cur += '\'';
        ++i;
      } else {
        ++i;
        break;
      }
    }
  }
  if (in_arg) args.push_back(std::move(cur));
  return args;
}

Result<std::vector<std::string>> SplitArguments(std::string_view value) {
  value = Trim(value);
  if (value.empty() || value.front() != '"') return SplitArgumentsV1(value);
  auto inner = UnwrapDoubleQuoted(value);
  if (!inner) return Fail(inner.error());
  return SplitArgumentsV2(*inner);
}

std::string JoinArgumentsV1(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

std::vector<std::string> SplitArgumentsV1Raw(std::string_view raw) {
  std::vector<std::string> out;
  for (const auto& word : Split(raw, ' ')) {
    for (const auto& w : Split(word, '\t')) out.push_back(w);
  }
  return out;
}

bool IsV2Quoted(std::string_view value) {
  value = Trim(value);
  return !value.empty() && value.front() == '"';
}

std::string JoinArgumentsV2(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) AppendV2Word(out, a);
  return out;
}

Result<std::vector<EnvEntry>> SplitEnvironmentV2(std::string_view raw) {
  auto words = SplitArgumentsV2(raw);
  if (!words) return Fail(words.error());
  std::vector<EnvEntry> env;
  for (const auto& w : *words) {
    auto entry = ParseEnvEntry(w);
    if (!entry) return Fail(entry.error());
    AddEnv(env, std::move(*entry));
  }
  return env;
}

Result<std::vector<EnvEntry>> SplitEnvironment(std::string_view value) {
  value = Trim(value);
  if (!value.empty() && value.front() == '"') {
    auto inner = UnwrapDoubleQuoted(value);
    if (!inner) return Fail(inner.error());
    return SplitEnvironmentV2(*inner);
  }
  // Old syntax: entries separated by ';', blanks are literal.
  std::vector<EnvEntry> env;
  for (const auto& piece : Split(value, ';', false)) {
    if (piece.empty()) continue;
    auto entry = ParseEnvEntry(piece);
    if (!entry) return Fail(entry.error());
    AddEnv(env, std::move(*entry));
  }
  return env;
}

std::string JoinEnvironmentV1(const std::vector<EnvEntry>& env) {
  std::string out;
  for (const auto& [name, value] : env) out += (out.empty() ? "" : ";") + name + "=" + value;
  return out;
}

std::string JoinEnvironmentV2(const std::vector<EnvEntry>& env) {
  std::string out;
  for (const auto& [name, value] : env) AppendV2Word(out, name + "=" + value);
  return out;
}

std::string QuoteClassAdString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  size_t plain = 0;  // start of the run of characters that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    if (c != '"' && c != '\\' && !control) continue;
    out.append(s.substr(plain, i - plain));
    plain = i + 1;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned>(c & 0xff));
      out += buf;
    }
  }
  out.append(s.substr(plain));
  out += '"';
  return out;
}

}  // namespace kite::submit
