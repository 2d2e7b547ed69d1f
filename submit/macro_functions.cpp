// HTCondor's macro functions: $ENV(), the $F family, $BASENAME(), $DIRNAME(), $INT(), $REAL(),
// $STRING(), $EVAL(), $CHOICE(), $SUBSTR(), $RANDOM_CHOICE(), $RANDOM_INTEGER().
//
// A function argument that names a macro stands for that macro's expanded value; any other
// argument is taken as text (and expanded), as in condor_submit.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/macros.h"

namespace kite::submit {
namespace {

// Splits on ',' keeping empty items, each trimmed.
std::vector<std::string_view> Args(std::string_view inner) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t comma = inner.find(',', start);
    out.push_back(Trim(inner.substr(start, comma - start)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

std::string_view Unquote(std::string_view s) {
  if (s.size() > 1 && s.front() == s.back() && (s.front() == '"' || s.front() == '\'')) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

// A printf format with one conversion of the allowed `types` (and %%), or "" when it is not one.
// The conversion gets `length` ("ll") inserted so it can print a long long.
std::string CheckedFormat(std::string_view fmt, std::string_view types, std::string_view length) {
  std::string out;
  int conversions = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    out += fmt[i];
    if (fmt[i] != '%') continue;
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out += fmt[++i];
      continue;
    }
    size_t j = i + 1;
    while (j < fmt.size() && std::string_view("-+ 0#").find(fmt[j]) != std::string_view::npos) ++j;
    while (j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j]))) ++j;
    if (j < fmt.size() && fmt[j] == '.') ++j;
    while (j < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[j]))) ++j;
    if (j >= fmt.size() || types.find(fmt[j]) == std::string_view::npos || j - i > 12) return "";
    out.append(fmt.substr(i + 1, j - i - 1));
    out.append(length);
    out += fmt[j];
    i = j;
    ++conversions;
  }
  return conversions == 1 ? out : "";
}

// Index of the start of the base name (after the last '/' or '\'), 0 when there is no directory.
size_t BaseStart(std::string_view p) {
  size_t pos = p.find_last_of("/\\");
  return pos == std::string_view::npos ? 0 : pos + 1;
}

// Start of "the last `dirs` directories and the base name" of `p`.
size_t StartWithDirs(std::string_view p, int dirs) {
  std::vector<size_t> seps;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '/' || p[i] == '\\') seps.push_back(i + 1);
  }
  while (dirs-- > 0 && !seps.empty()) seps.pop_back();
  return seps.empty() ? 0 : seps.back();
}

struct FileParts {
  int parts = 0;  // 1 extension, 2 name, 4 directory path, 8 parent directories
  int dirs = 0;   // number of 'd's
  bool bare = false, full = false, quote = false, arg_quote = false;
  char path_char = 0;  // 'u' -> '/', 'w' -> '\'
};

FileParts ParseFlags(std::string_view flags) {
  FileParts f;
  for (char c : flags) {
    switch (std::tolower(static_cast<unsigned char>(c))) {
      case 'x':
        f.parts |= 1;
        break;
      case 'n':
        f.parts |= 2;
        break;
      case 'p':
        f.parts |= 4;
        break;
      case 'd':
        f.parts |= 8, ++f.dirs;
        break;
      case 'a':
        f.arg_quote = true;
        break;
      case 'b':
        f.bare = true;
        break;
      case 'f':
        f.full = true;
        break;
      case 'w':
        f.path_char = '\\';
        break;
      case 'u':
        f.path_char = '/';
        break;
      case 'q':
        f.quote = true;
        break;
      default:
        break;
    }
  }
  return f;
}

// The part of `p` the flags select (HTCondor's table of x, n, p, d and their combinations).
std::string SelectParts(const std::string& p, FileParts f) {
  size_t end = p.size(), n = BaseStart(p);
  size_t dot = p.find_last_of('.');
  size_t x = dot == std::string::npos || dot < n ? end : dot;
  int parts = f.parts;
  if (n == 0 && (parts & 3) != 0) parts &= ~(4 | 8);  // a bare name: ignore p and d
  switch (parts & 0xF) {
    case 1:
      return p.substr(f.bare && x < end ? x + 1 : x);
    case 3:
      return p.substr(n);
    case 2:
      return p.substr(n, x - n);
    case 0:
    case 5:
    case 7:
      return p;
    case 4:
      return p.substr(0, f.bare && n > 0 ? n - 1 : n);
    case 6:
      return p.substr(0, x);
    default:
      break;
  }
  if (n == 0) return "";
  size_t start = StartWithDirs(p, f.dirs);
  if ((parts & 3) == 2) return p.substr(start, x - start);
  if ((parts & 3) == 0) return p.substr(start, (f.bare && n > 0 ? n - 1 : n) - start);
  return p.substr(start);
}

}  // namespace

Result<std::string> Expander::ArgValue(std::string_view arg, int line) {
  std::string out;
  std::string_view name = Trim(arg);
  if (IsMacroName(name)) {
    Lookup found = Find(ToLower(name));
    if (found.literal || found.def != nullptr) {
      if (auto st = AppendFound(out, found, line); !st) return Fail(st.error());
      return out;
    }
  }
  if (auto st = ExpandInto(out, name, line); !st) return Fail(st.error());
  return out;
}

Result<long long> Expander::IntArg(std::string_view arg, std::string_view fn, int line) {
  auto v = ArgValue(arg, line);
  if (!v) return Fail(v.error());
  auto n = EvalInteger(*v);
  if (!n) {
    return Fail(Bad(line, "$" + std::string(fn) + "(): '" + *v + "' is not an integer"));
  }
  return *n;
}

Status Expander::ExpandFunction(std::string& out, std::string_view word, std::string_view inner,
                                int line) {
  std::string w = ToLower(word);
  if (w == "env") return FnEnv(out, inner, line);
  if (w == "basename") return FnFilename(out, "nx", inner, line);
  if (w == "dirname") return FnFilename(out, "p", inner, line);
  if (w == "int" || w == "real") return FnNumber(out, w == "real", inner, line);
  if (w == "string" || w == "eval") return FnString(out, w == "eval", inner, line);
  if (w == "choice") return FnChoice(out, inner, line);
  if (w == "random_choice") return FnRandomChoice(out, inner, line);
  if (w == "random_integer") return FnRandomInteger(out, inner, line);
  if (w == "substr") return FnSubstr(out, inner, line);
  if (w[0] == 'f' && w.find_first_not_of("fpnxdqabwu", 1) == std::string::npos) {
    return FnFilename(out, std::string_view(w).substr(1), inner, line);
  }
  return Fail(Bad(line, "unknown macro function $" + std::string(word) +
                            "() (HTCondor's are $ENV, $F[fpdnxbqauw], $BASENAME, $DIRNAME, $INT, "
                            "$REAL, $STRING, $EVAL, $CHOICE, $SUBSTR, $RANDOM_CHOICE, "
                            "$RANDOM_INTEGER)"));
}

// $ENV(NAME) or $ENV(NAME:default); an unset variable without a default is "UNDEFINED".
Status Expander::FnEnv(std::string& out, std::string_view inner, int line) {
  auto colon = inner.find(':');
  std::string name(Trim(inner.substr(0, colon)));
  if (!IsMacroName(name)) return Fail(Bad(line, "bad reference $ENV(" + std::string(inner) + ")"));
  if (const char* value = std::getenv(name.c_str())) {
    out.append(value);
    return {};
  }
  if (colon == std::string_view::npos) {
    out.append("UNDEFINED");
    return {};
  }
  return ExpandInto(out, inner.substr(colon + 1), line);
}

Status Expander::FnFilename(std::string& out, std::string_view flags, std::string_view inner,
                            int line) {
  auto value = ArgValue(inner, line);
  if (!value) return Fail(value.error());
  FileParts f = ParseFlags(flags);
  std::string p(Unquote(Trim(*value)));
  if (f.full && !p.empty() && p[0] != '/' && !full_path_base_.empty()) {
    if (base_per_proc_) touched_ = true;
    path_base_read_ = true;
    if (p.starts_with("./")) p.erase(0, 2);
    p = full_path_base_ + (full_path_base_.back() == '/' ? "" : "/") + p;
  }
  if (f.path_char != 0) {
    char from = f.path_char == '/' ? '\\' : '/';
    std::replace(p.begin(), p.end(), from, f.path_char);
  }
  std::string result = SelectParts(p, f);
  if (f.quote) {
    char q = f.arg_quote ? '\'' : '"';
    result = q + result + q;
  }
  out.append(result);
  return {};
}

// $INT(NAME[,format]) / $REAL(NAME[,format]): the value evaluated as a number, printed.
Status Expander::FnNumber(std::string& out, bool real, std::string_view inner, int line) {
  auto comma = inner.find(',');
  const char* fn = real ? "REAL" : "INT";
  std::string fmt;
  if (comma != std::string_view::npos) {
    std::string_view given = Trim(inner.substr(comma + 1));
    fmt = real ? CheckedFormat(given, "eEfFgG", "") : CheckedFormat(given, "dioxXu", "ll");
    if (fmt.empty()) {
      return Fail(Bad(line, std::string("$") + fn + "(): '" + std::string(given) +
                                "' is not a printf format for one " + (real ? "real" : "integer")));
    }
  }
  auto value = ArgValue(inner.substr(0, comma), line);
  if (!value) return Fail(value.error());
  char buf[128];
  if (!real) {
    auto n = EvalInteger(*value);
    if (!n) return Fail(Bad(line, "$INT(): '" + *value + "' does not evaluate to an integer"));
    std::snprintf(buf, sizeof buf, fmt.empty() ? "%lld" : fmt.c_str(), *n);
  } else {
    auto r = EvalReal(*value);
    if (!r) return Fail(Bad(line, "$REAL(): '" + *value + "' does not evaluate to a number"));
    std::snprintf(buf, sizeof buf, fmt.empty() ? "%.16G" : fmt.c_str(), *r);
    if (!fmt.empty() && std::string_view(buf).find('.') == std::string_view::npos) {
      std::snprintf(buf + std::string_view(buf).size(), 3, ".0");
    }
  }
  out.append(buf);
  return {};
}

// $STRING(NAME[,format]): the value, as a string when it evaluates to one, else as written.
// $EVAL(EXPR): the expression evaluated; a string without quotes, anything else as ClassAd text.
Status Expander::FnString(std::string& out, bool eval, std::string_view inner, int line) {
  auto comma = eval ? std::string_view::npos : inner.find(',');
  std::string fmt;
  if (comma != std::string_view::npos) {
    fmt = CheckedFormat(Trim(inner.substr(comma + 1)), "s", "");
    if (fmt.empty()) return Fail(Bad(line, "$STRING(): the format must have one %s"));
  }
  auto value = ArgValue(inner.substr(0, comma), line);
  if (!value) return Fail(value.error());
  std::string text = *value;
  if (auto v = EvalText(text); v && v->IsString()) {
    text = std::string(v->AsString());
  } else if (eval && v && !v->IsExceptional()) {
    text = v->ToString();
  }
  if (fmt.empty()) {
    out.append(text);
    return {};
  }
  std::vector<char> buf(text.size() + fmt.size() + 64);
  std::snprintf(buf.data(), buf.size(), fmt.c_str(), text.c_str());
  out.append(buf.data());
  return {};
}

// $CHOICE(INDEX, a, b, c) or $CHOICE(INDEX, LIST_MACRO).
Status Expander::FnChoice(std::string& out, std::string_view inner, int line) {
  auto args = Args(inner);
  if (args.size() < 2) return Fail(Bad(line, "$CHOICE() needs an index and a list"));
  auto index = IntArg(args[0], "CHOICE", line);
  if (!index) return Fail(index.error());
  std::vector<std::string> items(args.begin() + 1, args.end());
  if (args.size() == 2) {
    std::string list_name(args[1]);
    Lookup found = IsMacroName(list_name) ? Find(ToLower(list_name)) : Lookup{};
    if (!found.literal && found.def == nullptr) {
      return Fail(Bad(line, "$CHOICE(): no list named " + list_name));
    }
    auto list = ArgValue(list_name, line);
    if (!list) return Fail(list.error());
    items.clear();
    for (auto item : Args(*list)) items.emplace_back(item);
  }
  if (*index < 0 || *index >= static_cast<long long>(items.size())) {
    return Fail(Bad(line, "$CHOICE(): index " + std::to_string(*index) + " is out of range (the " +
                              "list has " + std::to_string(items.size()) + " items)"));
  }
  return ExpandInto(out, items[static_cast<size_t>(*index)], line);
}

// $RANDOM_CHOICE(a, b, c) or $RANDOM_CHOICE(LIST_MACRO).
Status Expander::FnRandomChoice(std::string& out, std::string_view inner, int line) {
  std::string list(inner);
  if (inner.find(',') == std::string_view::npos) {
    if (Trim(inner).empty()) return Fail(Bad(line, "$RANDOM_CHOICE() needs a list"));
    auto v = ArgValue(inner, line);
    if (!v) return Fail(v.error());
    list = *v;
  }
  auto items = Args(list);
  std::string chosen(items[Random() % items.size()]);
  return ExpandInto(out, chosen, line);
}

// $RANDOM_INTEGER(min, max[, step]).
Status Expander::FnRandomInteger(std::string& out, std::string_view inner, int line) {
  auto args = Args(inner);
  long long v[3] = {0, 0, 1};
  for (size_t i = 0; i < 3 && i < args.size(); ++i) {
    auto n = IntArg(args[i], "RANDOM_INTEGER", line);
    if (!n) return Fail(n.error());
    v[i] = *n;
  }
  if (args.size() < 2 || args.size() > 3) {
    return Fail(Bad(line, "$RANDOM_INTEGER() needs min, max and an optional step"));
  }
  if (v[2] < 1 || v[0] > v[1]) {
    return Fail(Bad(line, "$RANDOM_INTEGER(): needs min <= max and a step of at least 1"));
  }
  unsigned long long choices =
      static_cast<unsigned long long>(v[1] - v[0]) / static_cast<unsigned long long>(v[2]) + 1;
  out.append(std::to_string(v[0] + static_cast<long long>(Random() % choices) * v[2]));
  return {};
}

// $SUBSTR(NAME, start[, length]); negative start and length count from the end.
Status Expander::FnSubstr(std::string& out, std::string_view inner, int line) {
  auto args = Args(inner);
  if (args.size() < 2 || args.size() > 3) {
    return Fail(Bad(line, "$SUBSTR() needs a name, a start and an optional length"));
  }
  auto value = ArgValue(args[0], line);
  if (!value) return Fail(value.error());
  auto start = IntArg(args[1], "SUBSTR", line);
  if (!start) return Fail(start.error());
  long long len = static_cast<long long>(value->size());
  if (args.size() == 3) {
    auto l = IntArg(args[2], "SUBSTR", line);
    if (!l) return Fail(l.error());
    len = *l;
  }
  long long size = static_cast<long long>(value->size());
  long long s = *start < 0 ? std::max(0LL, size + *start) : std::min(*start, size);
  long long rest = size - s;
  long long n = len < 0 ? std::max(0LL, rest + len) : std::min(len, rest);
  out.append(value->substr(static_cast<size_t>(s), static_cast<size_t>(n)));
  return {};
}

}  // namespace kite::submit
