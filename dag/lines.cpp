#include "dag/lines.h"

#include <charconv>

#include "common/strings.h"

namespace kite::dag {
namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// The physical lines of `text`, without their newlines.
std::vector<std::string_view> Physical(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A line that opens a block: "SUBMIT-DESCRIPTION NAME {" (or "@=TAG"), or a node with its
// submit description inline ("JOB NAME {"). The line that ends the block ("}" or "@TAG"), or ""
// when the line opens none.
std::string BlockEnd(std::string_view text) {
  Words w(text);
  std::string_view cmd = w.Next();
  bool opens = EqualsIgnoreCase(cmd, "SUBMIT-DESCRIPTION");
  for (const char* node : {"JOB", "NODE", "FINAL", "SERVICE", "PROVISIONER"})
    opens = opens || EqualsIgnoreCase(cmd, node);
  if (!opens) return "";
  w.Next();
  std::string_view open = w.Next();
  if (open == "{") return "}";
  if (StartsWith(open, "@=") && open.size() > 2) return "@" + std::string(open.substr(2));
  return "";
}

}  // namespace

Error ErrorAt(const Where& where, std::string_view what) {
  return Error(ErrorCode::kInvalidInput, where.ToString() + ": " + std::string(what));
}

std::string_view Words::Next() {
  while (pos_ < text_.size() && IsBlank(text_[pos_])) ++pos_;
  size_t start = pos_;
  while (pos_ < text_.size() && !IsBlank(text_[pos_])) ++pos_;
  return text_.substr(start, pos_ - start);
}

std::string_view Words::Peek() const {
  Words copy = *this;
  return copy.Next();
}

std::string_view Words::Rest() const {
  return Trim(text_.substr(pos_));
}

std::optional<int> ParseInt(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Result<std::vector<Line>> SplitLines(const std::string& file, std::string_view text,
                                     size_t max_line) {
  std::vector<Line> out;
  auto lines = Physical(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    Where where{file, static_cast<int>(i + 1)};
    if (lines[i].size() > max_line)
      return Fail(ErrorAt(where, "line of " + std::to_string(lines[i].size()) + " bytes; at most " +
                                     std::to_string(max_line) + " are allowed"));
    if (lines[i].find('\0') != std::string_view::npos)
      return Fail(ErrorAt(where, "a NUL byte; a DAG file is text"));
    std::string joined(Trim(lines[i]));
    // A line ending in a backslash goes on on the next one.
    while (!joined.empty() && joined.back() == '\\' && i + 1 < lines.size()) {
      joined.pop_back();
      ++i;
      if (lines[i].size() > max_line || joined.size() > max_line)
        return Fail(ErrorAt({file, static_cast<int>(i + 1)}, "continued line too long"));
      joined += " ";
      joined += Trim(lines[i]);
    }
    if (joined.empty() || joined[0] == '#') continue;
    Line line{where, joined, "", false};
    std::string end = BlockEnd(joined);
    Words w(joined);
    bool description = EqualsIgnoreCase(w.Next(), "SUBMIT-DESCRIPTION");
    std::string name(w.Next());
    if (description && end.empty() && w.AtEnd() && i + 1 < lines.size() &&
        Trim(lines[i + 1]) == "{") {
      end = "}";
      ++i;
    }
    if (description && (name.empty() || end.empty()))
      return Fail(ErrorAt(where, "SUBMIT-DESCRIPTION needs a name and then '{' or '@=TAG'"));
    if (!end.empty()) {
      line.block = true;
      bool closed = false;
      for (++i; i < lines.size(); ++i) {
        if (Trim(lines[i]) == end) {
          closed = true;
          break;
        }
        line.body += std::string(lines[i]) + "\n";
      }
      if (!closed)
        return Fail(ErrorAt(
            where, "the submit description of " + name + " has no closing " + end + " line"));
    }
    out.push_back(std::move(line));
  }
  return out;
}

namespace {

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '-';
}

}  // namespace

Status ParseVars(std::string_view text, bool prepend, std::vector<Var>* vars) {
  size_t i = 0;
  size_t before = vars->size();
  auto skip = [&] {
    while (i < text.size() && IsBlank(text[i])) ++i;
  };
  for (skip(); i < text.size(); skip()) {
    size_t start = i;
    while (i < text.size() && NameChar(text[i])) ++i;
    std::string name(text.substr(start, i - start));
    if (name.empty() || name == "+")
      return Fail(ErrorCode::kInvalidInput, "VARS: a macro name was expected at '" +
                                                std::string(text.substr(start, 20)) + "'");
    if (StartsWith(ToLower(name), "queue"))
      return Fail(ErrorCode::kInvalidInput,
                  "VARS: a macro name may not begin with \"queue\" (" + name + ")");
    skip();
    if (i >= text.size() || text[i] != '=')
      return Fail(ErrorCode::kInvalidInput, "VARS: '=' expected after " + name);
    ++i;
    skip();
    if (i >= text.size() || text[i] != '"')
      return Fail(ErrorCode::kInvalidInput,
                  "VARS: the value of " + name + " must be in \"quotes\"");
    std::string value;
    bool closed = false;
    for (++i; i < text.size(); ++i) {
      char c = text[i];
      if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
        value.push_back(text[++i]);
      } else if (c == '"') {
        closed = true;
        ++i;
        break;
      } else {
        value.push_back(c);
      }
    }
    if (!closed)
      return Fail(ErrorCode::kInvalidInput, "VARS: the value of " + name + " has no closing quote");
    vars->push_back({name, value, prepend});
  }
  if (vars->size() == before)
    return Fail(ErrorCode::kInvalidInput, "VARS: no name=\"value\" pairs");
  return {};
}

}  // namespace kite::dag
