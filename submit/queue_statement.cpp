// Parsing queue statements and gathering their items (inline lists, files, globs).
#include "submit/queue_statement.h"

#include <glob.h>
#include <sys/stat.h>

#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include "common/files.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/macros.h"

namespace kite::submit {
namespace {

enum class Source { kNone, kIn, kFrom, kMatching };

bool IsSeparator(char c) {
  return c == ',' || c == ' ' || c == '\t';
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::vector<std::string> SplitItems(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSeparator(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !IsSeparator(text[i])) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

// The statement's words before the keyword: [count] [vars...], and the keyword with its rest.
struct Head {
  std::vector<std::string> words;
  Source source = Source::kNone;
  std::string_view rest;
};

Head SplitHead(std::string_view args) {
  Head head;
  size_t i = 0;
  while (i < args.size()) {
    while (i < args.size() && IsSeparator(args[i])) ++i;
    size_t start = i;
    while (i < args.size() && !IsSeparator(args[i]) && args[i] != '(') ++i;
    std::string_view word = args.substr(start, i - start);
    if (word.empty()) {
      if (i < args.size()) head.words.emplace_back(args.substr(i));  // a stray '(' : bad
      break;
    }
    Source src = EqualsIgnoreCase(word, "in")         ? Source::kIn
                 : EqualsIgnoreCase(word, "from")     ? Source::kFrom
                 : EqualsIgnoreCase(word, "matching") ? Source::kMatching
                                                      : Source::kNone;
    if (src != Source::kNone) {
      head.source = src;
      head.rest = Trim(args.substr(i));
      break;
    }
    head.words.emplace_back(word);
  }
  return head;
}

class QueueParser {
 public:
  QueueParser(const QueueContext& ctx, const std::vector<LogicalLine>& lines, size_t* next)
      : ctx_(ctx), lines_(lines), next_(next) {}

  Result<QueueSpec> Parse(std::string_view args);

 private:
  Error Bad(std::string_view msg) const { return LineError(*ctx_.map, ctx_.line, msg); }
  Status ParseCount(std::string_view text);
  Status ParseCountAndVars(const Head& head, std::string_view args);
  Status ParseSlice(std::string_view* rest);
  Result<std::vector<std::string>> ReadList(std::string_view rest, bool* parenthesized);
  Result<std::vector<std::string>> ReadItemFile(std::string_view name);
  Result<std::vector<std::string>> RunItemCommand(std::string_view command);
  Result<std::vector<std::string>> Glob(const std::vector<std::string>& patterns, bool files,
                                        bool dirs);
  void Select(const std::vector<std::string>& items);

  const QueueContext& ctx_;
  const std::vector<LogicalLine>& lines_;
  size_t* next_;
  QueueSpec spec_;
  std::optional<long> slice_start_, slice_stop_;
  long slice_step_ = 1;
};

bool StartsLikeCount(std::string_view w) {
  return !w.empty() && !IsIdentifier(w);
}

// The count: a whole number or an expression that evaluates to one (`queue 15*1000`).
Status QueueParser::ParseCount(std::string_view text) {
  text = Trim(text);
  auto v = EvalText(text);
  bool whole =
      v && (v->IsInteger() ||
            (v->IsReal() && v->AsReal() == static_cast<double>(static_cast<long>(v->AsReal()))));
  long n = !whole           ? -1
           : v->IsInteger() ? static_cast<long>(v->AsInteger())
                            : static_cast<long>(v->AsReal());
  if (n < 0) {
    return Fail(Bad("queue count must be a non-negative integer, not '" + std::string(text) + "'"));
  }
  spec_.count = n;
  return {};
}

Status QueueParser::ParseCountAndVars(const Head& head, std::string_view args) {
  if (head.source == Source::kNone) {
    // No list: the whole statement is [COUNT], which may be an expression with blanks.
    std::string_view text = Trim(args);
    if (text.empty()) return {};
    if (!head.words.empty() && IsIdentifier(head.words[0])) {
      return Fail(
          Bad("bad queue statement: expected a count, or 'in', 'from' or 'matching' "
              "after the variable names"));
    }
    return ParseCount(text);
  }
  size_t first_var = 0;
  if (!head.words.empty() && StartsLikeCount(head.words[0])) {
    if (auto st = ParseCount(head.words[0]); !st) return st;
    first_var = 1;
  }
  for (size_t i = first_var; i < head.words.size(); ++i) {
    if (!IsIdentifier(head.words[i])) {
      return Fail(Bad("bad queue statement: '" + head.words[i] + "' is not a variable name"));
    }
    std::string name = ToLower(head.words[i]);
    for (const auto& v : spec_.vars) {
      if (v == name) return Fail(Bad("queue variable " + head.words[i] + " appears twice"));
    }
    spec_.vars.push_back(std::move(name));
  }
  if (spec_.vars.empty()) spec_.vars.push_back("item");
  return {};
}

// An optional python-style slice "[start:stop:step]" at the front of *rest.
Status QueueParser::ParseSlice(std::string_view* rest) {
  if (rest->empty() || rest->front() != '[') return {};
  size_t close = rest->find(']');
  if (close == std::string_view::npos) return Fail(Bad("slice '[' is missing its ']'"));
  std::string_view body = rest->substr(1, close - 1);
  auto parts = Split(body, ':', false);
  if (parts.size() < 2 || parts.size() > 3) {
    return Fail(Bad("bad slice [" + std::string(body) + "]: expected [start:stop:step]"));
  }
  auto number = [&](const std::string& s, std::optional<long>* out) -> Status {
    if (s.empty()) return {};
    long n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || p != s.data() + s.size()) {
      return Fail(Bad("bad slice [" + std::string(body) + "]: '" + s + "' is not an integer"));
    }
    *out = n;
    return {};
  };
  std::optional<long> step;
  if (auto st = number(parts[0], &slice_start_); !st) return st;
  if (auto st = number(parts[1], &slice_stop_); !st) return st;
  if (parts.size() == 3) {
    if (auto st = number(parts[2], &step); !st) return st;
  }
  if (step && *step <= 0) return Fail(Bad("slice step must be positive"));
  slice_step_ = step.value_or(1);
  *rest = Trim(rest->substr(close + 1));
  return {};
}

// The lines of the item list: the rest of the statement, or a "( ... )" block that may span
// lines up to one starting with ')'.
Result<std::vector<std::string>> QueueParser::ReadList(std::string_view rest, bool* parenthesized) {
  *parenthesized = !rest.empty() && rest.front() == '(';
  if (!*parenthesized) return std::vector<std::string>{std::string(rest)};
  size_t close = rest.find(')');
  if (close != std::string_view::npos) {
    if (!Trim(rest.substr(close + 1)).empty()) {
      return Fail(Bad("unexpected text after ')' in queue statement"));
    }
    auto inner = Trim(rest.substr(1, close - 1));
    if (inner.empty()) return std::vector<std::string>{};
    return std::vector<std::string>{std::string(inner)};
  }
  std::vector<std::string> out;
  if (auto first = Trim(rest.substr(1)); !first.empty()) out.emplace_back(first);
  for (; *next_ < lines_.size(); ++*next_) {
    std::string_view t = Trim(lines_[*next_].text);
    if (!t.empty() && t.front() == ')') {
      if (!Trim(t.substr(1)).empty()) {
        return Fail(LineError(*ctx_.map, lines_[*next_].line, "unexpected text after ')'"));
      }
      ++*next_;
      return out;
    }
    if (!IsBlankOrComment(t)) out.emplace_back(t);
  }
  return Fail(Bad("the list opened with '(' is never closed (by a line starting with ')')"));
}

// The items of a file or of a command's output: its lines, except blank lines and comments.
std::vector<std::string> ItemLines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& line : Split(text, '\n')) {
    if (!IsBlankOrComment(line)) out.push_back(line);
  }
  return out;
}

Result<std::vector<std::string>> QueueParser::ReadItemFile(std::string_view name) {
  if (name.empty()) return Fail(Bad("queue ... from: missing file name"));
  if (name.back() == '|') return RunItemCommand(Trim(name.substr(0, name.size() - 1)));
  std::string path = JoinPath(ctx_.list_dir, std::string(name));
  auto text = ReadFile(path, {.allow_pipe = true});
  if (!text) return Fail(Bad("cannot read item file " + path + ": " + text.error().message()));
  return ItemLines(*text);
}

Result<std::vector<std::string>> QueueParser::RunItemCommand(std::string_view command) {
  if (command.empty()) return Fail(Bad("queue ... from: missing command before '|'"));
  if (ctx_.run_command == nullptr) {
    return Fail(Bad("queue ... from a command ('" + std::string(command) +
                    " |') is not allowed here; use a file"));
  }
  auto out = (*ctx_.run_command)(std::string(command), ctx_.list_dir);
  if (!out) return Fail(Bad("queue ... from: " + out.error().message()));
  return ItemLines(*out);
}

Result<std::vector<std::string>> QueueParser::Glob(const std::vector<std::string>& patterns,
                                                   bool files, bool dirs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::string prefix =
      ctx_.glob_dir.empty() || ctx_.glob_dir.back() == '/' ? ctx_.glob_dir : ctx_.glob_dir + "/";
  for (const auto& pattern : patterns) {
    bool relative = pattern.front() != '/';
    std::string full = relative ? prefix + pattern : pattern;
    glob_t g{};
    int rc = ::glob(full.c_str(), 0, nullptr, &g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      globfree(&g);
      return Fail(Bad("cannot expand pattern '" + pattern + "'"));
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::string path = g.gl_pathv[i];
      struct stat sb;
      if (::stat(path.c_str(), &sb) != 0) continue;
      bool is_dir = S_ISDIR(sb.st_mode);
      if ((is_dir && !dirs) || (!is_dir && !files)) continue;
      if (relative && StartsWith(path, prefix)) path = path.substr(prefix.size());
      if (seen.insert(path).second) out.push_back(std::move(path));
    }
    globfree(&g);
  }
  return out;
}

void QueueParser::Select(const std::vector<std::string>& items) {
  long n = static_cast<long>(items.size());
  auto clamp = [n](std::optional<long> v, long dflt) {
    long x = v.value_or(dflt);
    if (x < 0) x += n;
    return x < 0 ? 0 : (x > n ? n : x);
  };
  long start = clamp(slice_start_, 0), stop = clamp(slice_stop_, n);
  for (long i = start; i < stop; i += slice_step_) {
    spec_.rows.push_back(SplitColumns(items[static_cast<size_t>(i)], spec_.vars.size()));
    spec_.item_index.push_back(i);
  }
}

Result<QueueSpec> QueueParser::Parse(std::string_view args) {
  Head head = SplitHead(Trim(args));
  if (auto st = ParseCountAndVars(head, args); !st) return Fail(st.error());
  if (head.source == Source::kNone) return std::move(spec_);
  spec_.foreach = true;
  std::string_view rest = head.rest;
  bool files = true, dirs = true;
  if (head.source == Source::kMatching) {
    auto word = rest.substr(0, rest.find_first_of(" \t(["));
    if (EqualsIgnoreCase(word, "files") || EqualsIgnoreCase(word, "dirs")) {
      files = EqualsIgnoreCase(word, "files");
      dirs = !files;
      rest = Trim(rest.substr(word.size()));
    }
  }
  if (auto st = ParseSlice(&rest); !st) return Fail(st.error());
  bool parenthesized = false;
  auto list = ReadList(rest, &parenthesized);
  if (!list) return Fail(list.error());
  std::vector<std::string> items;
  if (head.source == Source::kFrom) {
    if (parenthesized) {
      items = std::move(*list);
    } else {
      auto read = ReadItemFile(Trim(rest));
      if (!read) return Fail(read.error());
      items = std::move(*read);
    }
  } else {
    for (const auto& line : *list) {
      for (auto& item : SplitItems(line)) items.push_back(std::move(item));
    }
    if (head.source == Source::kMatching) {
      auto matched = Glob(items, files, dirs);
      if (!matched) return Fail(matched.error());
      items = std::move(*matched);
    }
  }
  Select(items);
  return std::move(spec_);
}

}  // namespace

std::vector<std::string> SplitColumns(std::string_view line, size_t n) {
  std::vector<std::string> out;
  std::string_view rest = Trim(line);
  while (out.size() + 1 < n && !rest.empty()) {
    size_t end = 0;
    while (end < rest.size() && !IsSeparator(rest[end])) ++end;
    out.emplace_back(rest.substr(0, end));
    while (end < rest.size() && IsSeparator(rest[end])) ++end;
    rest = rest.substr(end);
  }
  if (out.size() < n) out.emplace_back(Trim(rest));
  while (out.size() < n) out.emplace_back();
  return out;
}

Result<QueueSpec> ParseQueue(std::string_view args, const QueueContext& ctx,
                             const std::vector<LogicalLine>& lines, size_t* next) {
  return QueueParser(ctx, lines, next).Parse(args);
}

}  // namespace kite::submit
