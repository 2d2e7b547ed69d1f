// Built-in regular-expression functions (regexp, regexpMember, regexps, replace, replaceAll,
// stringList_regexpMember) on PCRE2, the engine and dialect HTCondor uses.
//
// Every match runs under a budget (kRegexMatchLimit steps of the matcher, kRegexDepthLimit of
// backtracking depth, kRegexHeapLimitKiB of memory), so one evaluation costs at most a few
// milliseconds whatever the pattern and the text: a pattern that needs more, such as the
// back-reference "(a*)\1*b" against a long run of a's, makes the function ERROR instead of
// running for minutes. Compiled patterns are cached per thread.
#include <array>
#include <memory>
#include <string>

#include "classad/functions_util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace kite::classad {
namespace {

// Per-match budget. Ordinary patterns (Requirements, REST constraints) use a few hundred steps;
// the limits are far above that and far below what makes a match take noticeable time.
constexpr uint32_t kRegexMatchLimit = 200'000;
constexpr uint32_t kRegexDepthLimit = 10'000;
constexpr uint32_t kRegexHeapLimitKiB = 8 * 1024;
constexpr size_t kRegexMaxPattern = 64 * 1024;

struct Compiled {
  std::string pattern;
  uint32_t options = 0;
  pcre2_code* code = nullptr;  // nullptr: the pattern does not compile
  pcre2_match_data* match = nullptr;
  Compiled() = default;
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;
  ~Compiled() {
    pcre2_match_data_free(match);
    pcre2_code_free(code);
  }
};

// A few compiled patterns per thread: Requirements reuse the same handful of patterns, and
// compiling on every evaluation would dominate the cost of regexp().
constexpr size_t kCacheSize = 16;

const Compiled& Compile(std::string_view pattern, uint32_t options) {
  thread_local std::array<std::unique_ptr<Compiled>, kCacheSize> cache;
  thread_local size_t next = 0;
  for (const auto& e : cache) {
    if (e && e->options == options && e->pattern == pattern) return *e;
  }
  auto entry = std::make_unique<Compiled>();
  entry->pattern.assign(pattern);
  entry->options = options;
  if (pattern.size() <= kRegexMaxPattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    entry->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                options, &error, &offset, nullptr);
    if (entry->code != nullptr) {
      entry->match = pcre2_match_data_create_from_pattern(entry->code, nullptr);
    }
  }
  auto& slot = cache[next];
  next = (next + 1) % kCacheSize;
  slot = std::move(entry);
  return *slot;
}

pcre2_match_context* Budget() {
  thread_local std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)> ctx = [] {
    pcre2_match_context* c = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(c, kRegexMatchLimit);
    pcre2_set_depth_limit(c, kRegexDepthLimit);
    pcre2_set_heap_limit(c, kRegexHeapLimitKiB);
    return std::unique_ptr<pcre2_match_context, void (*)(pcre2_match_context*)>(
        c, pcre2_match_context_free);
  }();
  return ctx.get();
}

// HTCondor's option letters. regexp() and its kin know i, m, s, x (lower case only, as its
// code reads them); stringList_regexpMember also takes them in upper case.
uint32_t Options(std::string_view letters, bool upper_too) {
  uint32_t out = 0;
  for (char c : letters) {
    if (upper_too && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == 'i') out |= PCRE2_CASELESS;
    if (c == 'm') out |= PCRE2_MULTILINE;
    if (c == 's') out |= PCRE2_DOTALL;
    if (c == 'x') out |= PCRE2_EXTENDED;
  }
  return out;
}

// Runs one match from `start`; the result is pcre2_match's (>= 0 match, PCRE2_ERROR_NOMATCH,
// or another error: a budget exceeded, an offset past the end).
int Match(const Compiled& re, std::string_view subject, size_t start, uint32_t flags) {
  return pcre2_match(re.code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start,
                     flags, re.match, Budget());
}

Value MatchValue(const Compiled& re, std::string_view subject) {
  if (re.code == nullptr) return Value::Error();
  int rc = Match(re, subject, 0, 0);
  if (rc >= 0) return Value::Bool(true);
  return rc == PCRE2_ERROR_NOMATCH ? Value::Bool(false) : Value::Error();
}

// Up to four evaluated arguments, without a heap allocation (regexp() is on hot paths).
struct Args {
  Value v[4];
  size_t n = 0;
  Value& operator[](size_t i) { return v[i]; }
  size_t size() const { return n; }
};

// The (pattern, target, ... [, options]) arguments of the regexp family: `fixed` of them and an
// optional options string. ERROR beats UNDEFINED, then the options must be a string. False with
// *out set otherwise.
bool PatternArgs(Evaluator& ev, const CallExpr& c, const Frame& f, size_t fixed, Args* a,
                 Value* out) {
  if (c.args.size() != fixed && c.args.size() != fixed + 1) {
    *out = Value::Error();
    return false;
  }
  for (a->n = 0; a->n < c.args.size(); ++a->n) a->v[a->n] = Arg(ev, c, f, a->n);
  for (size_t i = 0; i < a->n; ++i) {
    if (a->v[i].IsError()) {
      *out = a->v[i];
      return false;
    }
  }
  for (size_t i = 0; i < a->n; ++i) {
    if (a->v[i].IsUndefined()) {
      *out = a->v[i];
      return false;
    }
  }
  if (a->n == fixed + 1 && !a->v[fixed].IsString()) {
    *out = Value::Error();
    return false;
  }
  return true;
}

// regexp(pattern, target [, options]).
Value RegExp(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Args a;
  Value out;
  if (!PatternArgs(ev, c, f, 2, &a, &out)) return out;
  if (!a[0].IsString() || !a[1].IsString()) return Value::Error();
  std::string_view opts = a.size() == 3 ? a[2].AsString() : std::string_view();
  return MatchValue(Compile(a[0].AsString(), Options(opts, false)), a[1].AsString());
}

// regexpMember(pattern, list [, options]): whether some string of the list matches. A
// non-string item is ERROR, except UNDEFINED items, which make a "no match" UNDEFINED.
Value RegExpMember(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Args a;
  Value out;
  if (!PatternArgs(ev, c, f, 2, &a, &out)) return out;
  if (!a[0].IsString() || !a[1].IsList()) return Value::Error();
  std::string_view opts = a.size() == 3 ? a[2].AsString() : std::string_view();
  const Compiled& re = Compile(a[0].AsString(), Options(opts, false));
  bool saw_undefined = false;
  for (const Value& item : a[1].AsList()) {
    if (item.IsUndefined()) {
      saw_undefined = true;
      continue;
    }
    if (!item.IsString()) return Value::Error();
    Value m = MatchValue(re, item.AsString());
    if (!m.IsBool() || m.AsBool()) return m;
  }
  return saw_undefined ? Value() : Value::Bool(false);
}

// Appends `replacement` with \0 .. \9 standing for the groups of the last match (ERROR for a
// group the pattern did not reach); a backslash before anything else stays a backslash.
bool AppendReplacement(std::string& out, const Compiled& re, int groups, std::string_view subject,
                       std::string_view replacement) {
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(re.match);
  for (size_t i = 0; i < replacement.size(); ++i) {
    char ch = replacement[i];
    if (ch != '\\' || i + 1 >= replacement.size() || replacement[i + 1] < '0' ||
        replacement[i + 1] > '9') {
      out.push_back(ch);
      continue;
    }
    int g = replacement[++i] - '0';
    if (g >= groups) return false;
    if (ov[2 * g] != PCRE2_UNSET) out.append(subject.substr(ov[2 * g], ov[2 * g + 1] - ov[2 * g]));
  }
  return true;
}

// The substitution loop of regexps/replace/replaceAll: `whole` keeps the unmatched text around
// the replacements (option f), `all` replaces every match (option g) rather than the first.
Value Substitute(const Compiled& re, std::string_view subject, std::string_view replacement,
                 bool whole, bool all) {
  if (re.code == nullptr) return Value::Error();
  std::string out;
  size_t at = 0;
  bool after_empty = false;  // the last match was empty: the next may not be empty at `at`
  int rc = 0;
  do {
    rc = Match(re, subject, at, after_empty ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0);
    if (after_empty && rc == PCRE2_ERROR_NOMATCH) {
      if (at >= subject.size()) break;
      out.push_back(subject[at++]);  // step over one character and look again
      after_empty = false;
      rc = 0;
      continue;
    }
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(re.match);
    if (whole) out.append(subject.substr(at, ov[0] - at));
    if (!AppendReplacement(out, re, rc, subject, replacement)) return Value::Error();
    at = ov[1];
    after_empty = ov[0] == ov[1];
  } while (all);
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) return Value::Error();
  if (whole) out.append(subject.substr(at));
  return Value::String(out);
}

enum class SubstMode { kRegexps, kReplace, kReplaceAll };

// regexps(pattern, target, substitute [, options]): substitute with \N expanded, for the first
// match (options f: the whole target with the match replaced; g: every match).
// replace(...) is regexps with f, replaceAll(...) with f and g.
template <SubstMode kMode>
Value Subst(Evaluator& ev, const CallExpr& c, const Frame& f) {
  Args a;
  Value out;
  if (!PatternArgs(ev, c, f, 3, &a, &out)) return out;
  std::string opts(a.size() == 4 ? a[3].AsString() : std::string_view());
  if (kMode != SubstMode::kRegexps) opts += kMode == SubstMode::kReplace ? "f" : "fg";
  if (!a[0].IsString() || !a[1].IsString() || !a[2].IsString()) return Value::Error();
  const Compiled& re = Compile(a[0].AsString(), Options(opts, false));
  bool whole = opts.find('f') != std::string::npos, all = opts.find('g') != std::string::npos;
  return Substitute(re, a[1].AsString(), a[2].AsString(), whole, all);
}

// stringList_regexpMember(pattern, list [, separators [, options]]): whether some item of the
// string list (default separators: comma and space) matches; UNDEFINED for an empty list.
Value StringListRegexpMember(Evaluator& ev, const CallExpr& c, const Frame& f) {
  if (c.args.size() < 2 || c.args.size() > 4) return Value::Error();
  std::vector<Value> a;
  for (size_t i = 0; i < c.args.size(); ++i) {
    a.push_back(Arg(ev, c, f, i));
    if (!a.back().IsString()) return Value::Error();
  }
  std::string_view seps = a.size() >= 3 ? a[2].AsString() : std::string_view(", ");
  std::string_view opts = a.size() == 4 ? a[3].AsString() : std::string_view();
  const Compiled& re = Compile(a[0].AsString(), Options(opts, true));
  if (re.code == nullptr) return Value::Error();
  auto items = SplitStringList(a[1].AsString(), seps);
  if (items.empty()) return Value();
  for (auto item : items) {
    Value m = MatchValue(re, item);
    if (!m.IsBool() || m.AsBool()) return m;
  }
  return Value::Bool(false);
}

constexpr BuiltinEntry kRegexFunctions[] = {
    {"regexp", RegExp},
    {"regexpmember", RegExpMember},
    {"regexps", Subst<SubstMode::kRegexps>},
    {"replace", Subst<SubstMode::kReplace>},
    {"replaceall", Subst<SubstMode::kReplaceAll>},
    {"stringlist_regexpmember", StringListRegexpMember},
};

}  // namespace

Value RegexMatches(std::string_view pattern, std::string_view subject, std::string_view options) {
  return MatchValue(Compile(pattern, Options(options, false)), subject);
}

std::span<const BuiltinEntry> RegexFunctions() {
  return kRegexFunctions;
}

}  // namespace kite::classad
