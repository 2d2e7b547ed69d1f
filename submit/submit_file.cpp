// The submit-file parser: statements in order (including included files and command output),
// queue statements building procs, and the split of the cluster's attributes into common ones
// and per-proc overrides.
//
// Cheap large clusters: at a queue statement every command handler runs once, for the first
// proc, and the expander notes whether it read a proc variable ($(Process), $(Item), ...). Only
// those handlers run again for the other procs, so `queue 10000` with nothing per-proc costs
// 10000 ProcId attributes and no more.
#include "submit/submit_file.h"

#include <pwd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <compare>
#include <ctime>
#include <iterator>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "classad/parser.h"
#include "common/files.h"
#include "common/strings.h"
#include "submit/commands.h"
#include "submit/job_attrs.h"
#include "submit/lines.h"
#include "submit/macros.h"
#include "submit/queue_statement.h"

namespace kite::submit {
namespace {

constexpr int kMaxIncludeDepth = 10;

// The procs of one queue statement: attributes shared by all of them, and each proc's own.
struct StatementProcs {
  std::vector<Attr> shared;
  std::vector<std::vector<Attr>> varying;  // ProcId first
};

// The HTCondor release whose submit language Kite reads, for `if version OP X.Y.Z` (the release
// Kite's slots say they are, glidein/slot_ad.h).
constexpr int kSubmitLanguageVersion[] = {25, 0, 0};

bool IsIdentifier(std::string_view s, bool allow_dot) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [allow_dot](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allow_dot && c == '.');
  });
}

std::string CurrentDir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string("/");
}

// Fills in what the options leave to the machine: owner, platform, host name.
ParseEnv MakeEnv(const SubmitOptions& options) {
  ParseEnv env;
  env.options = &options;
  env.cwd = options.cwd.empty() ? CurrentDir() : AbsolutePath(options.cwd);
  env.owner = options.owner;
  if (env.owner.empty()) {
    const passwd* pw = ::getpwuid(::geteuid());
    env.owner = pw != nullptr ? pw->pw_name : std::to_string(::geteuid());
  }
  utsname u{};
  bool have_uname = ::uname(&u) == 0;
  std::string machine = have_uname ? u.machine : "x86_64";
  env.arch = !options.arch.empty() ? options.arch : machine == "x86_64" ? "X86_64" : machine;
  std::string sys = have_uname ? u.sysname : "Linux";
  for (auto& c : sys) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  env.opsys = !options.opsys.empty() ? options.opsys : sys;
  char host[256] = {};
  env.fs_domain = !options.filesystem_domain.empty()          ? options.filesystem_domain
                  : ::gethostname(host, sizeof host - 1) == 0 ? host
                                                              : "localhost";
  return env;
}

BuiltinMacros MakeBuiltins(const SubmitOptions& options, const ParseEnv& env,
                           const std::string& file) {
  BuiltinMacros b;
  b.cluster = std::to_string(options.cluster_id);
  b.submit_file = file;
  std::time_t t = options.submit_time != 0 ? options.submit_time : std::time(nullptr);
  b.submit_time = std::to_string(t);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y", &tm), b.year = buf;
  std::strftime(buf, sizeof buf, "%m", &tm), b.month = buf;
  std::strftime(buf, sizeof buf, "%d", &tm), b.day = buf;
  b.arch = env.arch;
  b.opsys = env.opsys;
  return b;
}

class SubmitParser {
 public:
  SubmitParser(std::string file, const SubmitOptions& options)
      : options_(options),
        env_(MakeEnv(options)),
        map_(file, DirName(JoinPath(env_.cwd, file))),
        expander_(table_, map_, MakeBuiltins(options, env_, file), options.random) {
    env_.map = &map_;
    env_.table = &table_;
    if (options.allow_commands) {
      runner_ = options.run_command
                    ? options.run_command
                    : CommandRunner([](const std::string& cmd, const std::string& dir) {
                        return RunShellCommand(cmd, dir);
                      });
    }
  }

  Result<ParsedCluster> Run(std::string_view text);

 private:
  Error Bad(int line, std::string_view msg) const { return LineError(map_, line, msg); }
  Status Line(size_t* next);
  Status Conditional(std::string_view word, std::string_view rest, int line);
  Result<bool> Condition(std::string_view text, int line);
  bool On() const { return branches_.empty() || branches_.back().on; }
  Status Include(std::string_view rest, const LogicalLine& at, size_t index);
  Status Definition(std::string_view key, std::string_view value, int line);
  Status Custom(std::string_view name, std::string_view value, int line);
  Status Queue(std::string_view args, int line, size_t* next);
  Status CheckRefused();
  Status RunProcs(const QueueSpec& spec, int line);
  Status RunHandlers(std::vector<Handler>& handlers, JobContext& ctx, StatementProcs& st,
                     std::vector<size_t>* varying, std::vector<Attr>& proc);
  Status TakeLines(const std::vector<std::string>& lines, std::string_view what);
  void LateWarnings();
  ParsedCluster Merge();

  const SubmitOptions& options_;
  ParseEnv env_;
  SourceMap map_;
  MacroTable table_;
  Expander expander_;
  CommandRunner runner_;  // empty when commands are not allowed
  std::vector<LogicalLine> lines_;
  // The if/elif/else/endif blocks open at the line being read, outermost first.
  struct Branch {
    int line;              // of its `if`
    bool outer_on;         // the block around it is read
    bool taken = false;    // one of its branches was read
    bool on = false;       // the lines here are read
    bool in_else = false;  // past its `else`
  };
  std::vector<Branch> branches_;
  std::vector<CustomAttr> customs_;
  std::vector<StatementProcs> statements_;
  std::vector<std::string> warnings_;
  size_t procs_ = 0;
  int last_queue_line_ = 0;
  size_t included_bytes_ = 0;
  std::unordered_map<std::string, int> line_sources_;  // command-line lines: name -> base
};

// `NAME = value` lines from the command line (before the file, or just before each queue
// statement), each a source of its own so messages can name it.
Status SubmitParser::TakeLines(const std::vector<std::string>& lines, std::string_view what) {
  if (lines.empty()) return {};
  auto [it, fresh] = line_sources_.try_emplace(std::string(what), 0);
  if (fresh) {
    auto base = map_.Add(std::string(what), env_.cwd);
    if (!base) return Fail(base.error());
    it->second = *base;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& text = lines[i];
    int line = it->second + static_cast<int>(i) + 1;
    std::string_view t = Trim(text);
    size_t eq = t.find('=');
    if (eq == std::string_view::npos) {
      return Fail(Bad(line, "expected 'command = value', got '" + std::string(t) + "'"));
    }
    std::string_view key = Trim(t.substr(0, eq)), value = Trim(t.substr(eq + 1));
    Status st = !key.empty() && key.front() == '+' ? Custom(Trim(key.substr(1)), value, line)
                : key.size() > 3 && EqualsIgnoreCase(key.substr(0, 3), "my.")
                    ? Custom(key.substr(3), value, line)
                    : Definition(key, value, line);
    if (!st) return st;
  }
  return {};
}

Result<ParsedCluster> SubmitParser::Run(std::string_view text) {
  auto lines = SplitLines(text, map_, 0);
  if (!lines) return Fail(lines.error());
  lines_ = std::move(*lines);
  if (auto st = TakeLines(options_.before_lines, "command line"); !st) return Fail(st.error());
  size_t next = 0;
  while (next < lines_.size()) {
    if (auto st = Line(&next); !st) return Fail(st.error());
  }
  if (!branches_.empty()) {
    return Fail(Bad(branches_.back().line, "this 'if' has no 'endif'"));
  }
  if (last_queue_line_ == 0) {
    return Fail(Bad(lines_.empty() ? 1 : lines_.back().line,
                    "no queue statement (add 'queue' after the commands)"));
  }
  LateWarnings();
  return Merge();
}

// One logical line: blank, comment, include, queue statement, custom attribute or `key = value`.
Status SubmitParser::Line(size_t* next) {
  size_t index = (*next)++;
  const LogicalLine l = lines_[index];
  std::string_view t = Trim(l.text);
  if (IsBlankOrComment(t)) return {};
  size_t w = 0;
  while (w < t.size() && (std::isalnum(static_cast<unsigned char>(t[w])) || t[w] == '_')) ++w;
  std::string_view word = t.substr(0, w);
  std::string_view rest = Trim(t.substr(w));
  bool keyword = w == t.size() || t[w] == ' ' || t[w] == '\t' || t[w] == '!';
  if (keyword && (EqualsIgnoreCase(word, "if") || EqualsIgnoreCase(word, "elif") ||
                  EqualsIgnoreCase(word, "else") || EqualsIgnoreCase(word, "endif"))) {
    return Conditional(word, rest, l.line);
  }
  if (!On()) return {};  // a branch not taken: nothing in it is read
  if (EqualsIgnoreCase(word, "queue")) {
    if (!rest.empty() && rest.front() == '=') {
      return Fail(Bad(l.line,
                      "'queue' is a statement (queue [N] [VAR in|from|matching ...]), "
                      "not a command to assign"));
    }
    if (w == t.size() || t[w] == ' ' || t[w] == '\t') return Queue(rest, l.line, next);
  }
  if (EqualsIgnoreCase(word, "include") && (rest.starts_with(':') || rest.starts_with("command"))) {
    return Include(rest, l, index);
  }
  size_t eq = t.find('=');
  if (eq == std::string_view::npos) {
    return Fail(Bad(l.line,
                    "expected 'command = value', '+Attribute = expression' or a queue "
                    "statement, got '" +
                        std::string(t) + "'"));
  }
  std::string_view key = Trim(t.substr(0, eq));
  std::string_view value = Trim(t.substr(eq + 1));
  if (!key.empty() && key.front() == '+') return Custom(Trim(key.substr(1)), value, l.line);
  if (key.size() > 3 && EqualsIgnoreCase(key.substr(0, 3), "my.")) {
    return Custom(key.substr(3), value, l.line);
  }
  return Definition(key, value, l.line);
}

// `if COND`, `elif COND`, `else` and `endif`, as condor_submit reads them: a branch is read when
// its condition holds and no branch before it in its block was read; blocks nest.
Status SubmitParser::Conditional(std::string_view word, std::string_view rest, int line) {
  if (EqualsIgnoreCase(word, "if")) {
    Branch b{.line = line, .outer_on = On()};
    if (rest.empty()) return Fail(Bad(line, "'if' needs a condition"));
    if (b.outer_on) {  // conditions in a branch not read are not evaluated
      auto holds = Condition(rest, line);
      if (!holds) return Fail(holds.error());
      b.on = b.taken = *holds;
    }
    branches_.push_back(b);
    return {};
  }
  if (branches_.empty()) {
    return Fail(Bad(line, "'" + ToLower(word) + "' without an 'if' before it"));
  }
  Branch& b = branches_.back();
  if (EqualsIgnoreCase(word, "endif")) {
    if (!rest.empty()) return Fail(Bad(line, "'endif' takes nothing after it"));
    branches_.pop_back();
    return {};
  }
  if (b.in_else) return Fail(Bad(line, "'" + ToLower(word) + "' after this block's 'else'"));
  if (EqualsIgnoreCase(word, "else")) {
    if (!rest.empty()) return Fail(Bad(line, "'else' takes nothing after it (use 'elif')"));
    b.in_else = true;
    b.on = b.outer_on && !b.taken;
    b.taken = b.taken || b.on;
    return {};
  }
  if (rest.empty()) return Fail(Bad(line, "'elif' needs a condition"));  // elif
  b.on = false;
  if (b.outer_on && !b.taken) {
    auto holds = Condition(rest, line);
    if (!holds) return Fail(holds.error());
    b.on = b.taken = *holds;
  }
  return {};
}

// One simple condition, optionally after '!': `defined NAME` (a macro with a value), `version OP
// X.Y[.Z]` (OP one of == != >= <= > <; Kite reads submit files as HTCondor kSubmitLanguageVersion
// does), true/yes/1 or false/no/0, or $(...) references expanding to one of those (or to nothing,
// which is false).
Result<bool> SubmitParser::Condition(std::string_view text, int line) {
  std::string_view t = Trim(text);
  bool negate = false;
  if (t.starts_with('!')) {
    negate = true;
    t = Trim(t.substr(1));
  }
  size_t w = 0;
  while (w < t.size() && std::isalpha(static_cast<unsigned char>(t[w]))) ++w;
  std::string_view word = t.substr(0, w), rest = Trim(t.substr(w));
  bool holds = false;
  if (EqualsIgnoreCase(word, "defined") && !rest.empty()) {
    if (!IsIdentifier(rest, true)) {
      return Fail(Bad(line, "'defined' needs a macro name, not '" + std::string(rest) + "'"));
    }
    auto value = expander_.ExpandName(ToLower(rest), line);
    if (!value) return Fail(value.error());
    holds = value->has_value() && !Trim((*value)->text).empty();
  } else if (EqualsIgnoreCase(word, "version") && !rest.empty()) {
    size_t op_len = rest.find_first_not_of("=!<>");
    std::string_view op = rest.substr(0, op_len == std::string_view::npos ? 0 : op_len);
    static constexpr std::string_view kOps[] = {"==", "!=", ">=", "<=", ">", "<"};
    if (std::find(std::begin(kOps), std::end(kOps), op) == std::end(kOps)) {
      return Fail(Bad(line, "'version' takes ==, !=, >=, <=, > or <, not '" +
                                std::string(rest.substr(0, rest.find(' '))) + "'"));
    }
    std::vector<int> want;
    for (const auto& part : Split(std::string(Trim(rest.substr(op.size()))), '.')) {
      if (part.empty() || part.size() > 6 ||
          part.find_first_not_of("0123456789") != std::string::npos) {
        want.clear();
        break;
      }
      want.push_back(std::stoi(part));
    }
    if (want.size() < 2 || want.size() > 3) {
      return Fail(Bad(line, "'version' needs OP X.Y or OP X.Y.Z, not '" + std::string(rest) + "'"));
    }
    // Only the parts given count: 25.0.3 == 25.0, and 25.0.3 <= 25.0.
    std::vector<int> have(kSubmitLanguageVersion,
                          kSubmitLanguageVersion + std::size(kSubmitLanguageVersion));
    have.resize(want.size());
    auto cmp = have <=> want;
    if (op == "==") {
      holds = cmp == 0;
    } else if (op == "!=") {
      holds = cmp != 0;
    } else if (op == ">=") {
      holds = cmp >= 0;
    } else if (op == "<=") {
      holds = cmp <= 0;
    } else if (op == ">") {
      holds = cmp > 0;
    } else {  // "<"
      holds = cmp < 0;
    }
  } else {
    auto value = expander_.Expand(t, line);
    if (!value) return Fail(value.error());
    std::string v = ToLower(Trim(*value));
    if (v == "true" || v == "yes" || v == "1") {
      holds = true;
    } else if (v.empty() || v == "false" || v == "no" || v == "0") {
      holds = false;
    } else {
      return Fail(Bad(line, "'" + std::string(t) +
                                "' is not a condition condor_submit reads: defined NAME, version "
                                "OP X.Y.Z, true, false, yes, no, 1, 0 or $(NAME) giving one"));
    }
  }
  return negate ? !holds : holds;
}

Status SubmitParser::Definition(std::string_view key, std::string_view value, int line) {
  if (!IsIdentifier(key, true)) {
    return Fail(Bad(line, "'" + std::string(key) + "' is not a valid command or macro name"));
  }
  std::string lower = ToLower(key);
  table_.Define(lower, key, value, line, IsCommand(lower));
  return {};
}

// `include : FILE`, `include : CMD |` and `include command : CMD`: the file's text, or what the
// command writes on standard output, is read as if it stood here.
Status SubmitParser::Include(std::string_view rest, const LogicalLine& at, size_t index) {
  bool command = rest.starts_with("command");
  if (command) rest = Trim(rest.substr(7));
  if (!rest.starts_with(':')) {
    return Fail(Bad(at.line, "expected 'include : FILE' or 'include command : COMMAND'"));
  }
  if (at.depth >= kMaxIncludeDepth) {
    return Fail(
        Bad(at.line, "includes nested more than " + std::to_string(kMaxIncludeDepth) + " deep"));
  }
  expander_.SetProc(nullptr);
  auto target = expander_.Expand(Trim(rest.substr(1)), at.line);
  if (!target) return Fail(target.error());
  std::string what = std::string(Trim(*target));
  if (!command && !what.empty() && what.back() == '|') {
    command = true;
    what = std::string(Trim(std::string_view(what).substr(0, what.size() - 1)));
  }
  if (what.empty()) return Fail(Bad(at.line, "include: missing file name or command"));
  const std::string& dir = map_.DirOf(at.line);
  Result<std::string> text;
  std::string name;
  if (command) {
    if (!runner_)
      return Fail(Bad(at.line, "include command: running commands is not allowed here"));
    text = runner_(what, dir);
    if (!text) return Fail(Bad(at.line, "include command: " + text.error().message()));
    name = "output of '" + what + "'";
  } else {
    name = JoinPath(dir, what);
    text = ReadFile(name);
    if (!text)
      return Fail(Bad(at.line, "include: cannot read " + name + ": " + text.error().message()));
  }
  included_bytes_ += text->size();
  if (included_bytes_ > (64 << 20)) return Fail(Bad(at.line, "includes add more than 64 MiB"));
  auto base = map_.Add(name, command ? dir : DirName(name));
  if (!base) return Fail(Bad(at.line, base.error().message()));
  auto lines = SplitLines(*text, map_, *base, at.depth + 1);
  if (!lines) return Fail(lines.error());
  lines_.insert(lines_.begin() + static_cast<long>(index) + 1, lines->begin(), lines->end());
  return {};
}

Status SubmitParser::Custom(std::string_view name, std::string_view value, int line) {
  if (!IsIdentifier(name, false)) {
    return Fail(Bad(line, "'" + std::string(name) + "' is not a valid attribute name"));
  }
  // Reserved words and over-long names, which a job ad could not hold.
  if (auto st = classad::CheckAttributeName(name); !st)
    return Fail(Bad(line, st.error().message()));
  if (IsReservedAttr(name)) {
    return Fail(Bad(line, "attribute " + std::string(name) +
                              " is set by Kite and cannot be set in a submit file"));
  }
  for (auto& c : customs_) {
    if (EqualsIgnoreCase(c.name, name)) {
      c = CustomAttr{std::string(name), std::string(value), line};
      return {};
    }
  }
  customs_.push_back(CustomAttr{std::string(name), std::string(value), line});
  return {};
}

// A command Kite refuses stops the file at the first queue statement it applies to. A universe
// Kite does not run is named first: it is the reason its own commands (docker_image, vm_type)
// are there.
Status SubmitParser::CheckRefused() {
  if (const submit::Definition* u = table_.Find("universe")) {
    expander_.SetProc(nullptr);
    auto v = expander_.Expand(u->value, u->line);
    static const char* kRefused[] = {"docker", "container", "vm",    "parallel", "java",
                                     "mpi",    "pipe",      "linda", "pvm"};
    std::string lower = v ? ToLower(Trim(*v)) : "";
    if (std::find(std::begin(kRefused), std::end(kRefused), lower) != std::end(kRefused)) {
      return Fail(Bad(u->line, "universe = " + std::string(Trim(*v)) +
                                   " is not supported by Kite (Kite runs vanilla, standard, local "
                                   "and grid jobs)"));
    }
  }
  const submit::Definition* first = nullptr;
  const CommandInfo* info = nullptr;
  for (const auto& [key, def] : table_.all()) {
    if (Trim(def.value).empty()) continue;  // an empty value is an unset command
    const CommandInfo* c = FindCommand(key);
    if (c == nullptr || c->use != KiteUse::kRefused) continue;
    if (first == nullptr || def.line < first->line) first = &def, info = c;
  }
  if (first == nullptr) return {};
  return Fail(Bad(first->line, first->name + " is not supported by Kite (" + info->note + ")"));
}

Status SubmitParser::Queue(std::string_view args, int line, size_t* next) {
  last_queue_line_ = line;
  if (auto st = TakeLines(options_.append_lines, "-append"); !st) return st;
  if (auto st = CheckRefused(); !st) return st;
  expander_.SetProc(nullptr);
  auto expanded = expander_.Expand(args, line);
  if (!expanded) return Fail(expanded.error());
  QueueContext qc{&map_, line, map_.DirOf(line), env_.cwd, runner_ ? &runner_ : nullptr};
  auto spec = ParseQueue(*expanded, qc, lines_, next);
  if (!spec) return Fail(spec.error());
  return RunProcs(*spec, line);
}

// Runs every handler for a statement's first proc, sorting its attributes into `st.shared` or
// `proc` by whether it read a proc variable, and recording the latter in `varying`.
Status SubmitParser::RunHandlers(std::vector<Handler>& handlers, JobContext& ctx,
                                 StatementProcs& st, std::vector<size_t>* varying,
                                 std::vector<Attr>& proc) {
  std::vector<Attr> out;
  ctx.set_output(&out, &proc, &st.shared);
  for (size_t i = 0; i < handlers.size(); ++i) {
    out.clear();
    expander_.ResetTouched();
    if (auto s = handlers[i](ctx); !s) return s;
    bool per_proc = expander_.touched_proc_vars();
    if (per_proc) varying->push_back(i);
    auto& dest = per_proc ? proc : st.shared;
    std::move(out.begin(), out.end(), std::back_inserter(dest));
  }
  return {};
}

Status SubmitParser::RunProcs(const QueueSpec& spec, int line) {
  size_t rows = spec.foreach ? spec.rows.size() : 1;
  size_t count = static_cast<size_t>(spec.count);
  if (count > options_.max_procs || (rows > 0 && count > (options_.max_procs - procs_) / rows)) {
    return Fail(Bad(line, "this queue statement would make the cluster larger than " +
                              std::to_string(options_.max_procs) + " jobs"));
  }
  if (rows * count == 0) {
    warnings_.push_back(map_.Where(line) + ": warning: queue statement queues no jobs");
    return {};
  }
  std::set<std::string> overridden;
  for (const auto& c : customs_) overridden.insert(ToLower(c.name));
  std::vector<Handler> handlers = MakeHandlers(customs_);
  JobContext ctx(expander_, env_, line, &warnings_);
  ctx.set_overridden(&overridden);
  ProcVars vars;
  vars.loop_names = spec.foreach ? &spec.vars : nullptr;
  expander_.SetProc(&vars);
  expander_.SetFullPathBase(env_.cwd, false);
  StatementProcs st;
  st.varying.reserve(rows * count);
  std::vector<size_t> varying;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t step = 0; step < count; ++step) {
      vars.proc_id = static_cast<long>(procs_);
      vars.step = static_cast<long>(step);
      vars.item_index = spec.foreach ? spec.item_index[r] : 0;
      vars.loop_values = spec.foreach ? &spec.rows[r] : nullptr;
      std::vector<Attr> proc;
      proc.reserve(st.varying.empty() ? 8 : st.varying.front().size());
      proc.push_back(Attr{"ProcId", std::to_string(procs_)});
      Status s = st.varying.empty() ? RunHandlers(handlers, ctx, st, &varying, proc) : Status{};
      if (s && !st.varying.empty()) {
        ctx.set_output(&proc, &proc, &st.shared);
        for (size_t i = 0; i < varying.size() && s; ++i) s = handlers[varying[i]](ctx);
      }
      if (!s) {
        expander_.SetProc(nullptr);
        return s;
      }
      st.varying.push_back(std::move(proc));
      ++procs_;
    }
  }
  expander_.SetProc(nullptr);
  statements_.push_back(std::move(st));
  return {};
}

// Warnings condor_submit would give once the whole file is read: definitions after the last
// queue statement, and macros nobody used (often a misspelt command).
void SubmitParser::LateWarnings() {
  std::vector<std::pair<int, std::string>> late;
  for (const auto& [key, def] : table_.all()) {
    if (def.line > last_queue_line_ && def.line < SourceMap::kLinesPerSource) {
      late.emplace_back(def.line, def.name +
                                      " is set after the last queue statement and has "
                                      "no effect");
    } else if (!def.is_command && !def.used) {
      late.emplace_back(def.line,
                        "macro " + def.name + " is defined but never used (a misspelt command?)");
    }
  }
  for (const auto& c : customs_) {
    if (c.line > last_queue_line_ && c.line < SourceMap::kLinesPerSource) {
      late.emplace_back(c.line, "+" + c.name +
                                    " is set after the last queue statement and has "
                                    "no effect");
    } else if (EqualsIgnoreCase(c.name, "SingularityImage") ||
               EqualsIgnoreCase(c.name, "DockerImage") ||
               EqualsIgnoreCase(c.name, "ContainerImage")) {
      // HTCondor's pools run these in a container; Kite runs no container yet.
      late.emplace_back(c.line, "+" + c.name +
                                    " is recorded but Kite runs no containers: the job runs on "
                                    "the slot's own system");
    }
  }
  for (const auto& [line, name] : expander_.undefined())
    late.emplace_back(line, "$(" + name + ") is not defined; it expands to nothing");
  std::sort(late.begin(), late.end());
  for (auto& [line, msg] : late) warnings_.push_back(map_.Where(line) + ": warning: " + msg);
}

// An attribute is common when every proc has it with the same value; ProcId never is.
ParsedCluster SubmitParser::Merge() {
  struct Seen {
    std::string name, expr;
    size_t count = 0;
    bool same = true;
    bool common = false;
  };
  std::vector<Seen> seen;                            // in order of first appearance
  std::unordered_map<std::string, size_t> by_lower;  // ClassAd names are case-insensitive
  std::unordered_map<std::string, size_t> by_name;   // as emitted: spares case folding per proc
  auto index_of = [&](const std::string& name) {
    if (auto it = by_name.find(name); it != by_name.end()) return it->second;
    auto [it, fresh] = by_lower.try_emplace(ToLower(name), seen.size());
    if (fresh) seen.push_back(Seen{name});
    by_name.emplace(name, it->second);
    return it->second;
  };
  auto note = [&](const Attr& a, size_t n) {
    Seen& s = seen[index_of(a.name)];
    if (s.count == 0) {
      s.expr = a.expr;
    } else if (s.same && s.expr != a.expr) {
      s.same = false;
    }
    s.count += n;
  };
  for (const auto& st : statements_) {
    for (const auto& a : st.shared) note(a, st.varying.size());
    for (const auto& proc : st.varying) {
      for (size_t i = 1; i < proc.size(); ++i) note(proc[i], 1);
    }
  }
  ParsedCluster out;
  for (auto& s : seen) {
    s.common = s.count == procs_ && s.same;
    if (s.common) out.common.push_back(Attr{s.name, s.expr});
  }
  auto is_common = [&](const Attr& a) { return seen[by_name.at(a.name)].common; };
  out.procs.reserve(procs_);
  for (auto& st : statements_) {
    std::vector<Attr> shared_overrides;
    for (const auto& a : st.shared) {
      if (!is_common(a)) shared_overrides.push_back(a);
    }
    for (auto& proc : st.varying) {
      // In place: ProcId, then the statement's shared overrides, then the proc's own.
      auto own = std::remove_if(proc.begin() + 1, proc.end(), is_common);
      proc.erase(own, proc.end());
      proc.insert(proc.begin() + 1, shared_overrides.begin(), shared_overrides.end());
      out.procs.push_back(std::move(proc));
    }
  }
  out.warnings = std::move(warnings_);
  return out;
}

}  // namespace

Result<ParsedCluster> ParseSubmitText(std::string_view text, const std::string& filename,
                                      const SubmitOptions& options) {
  return SubmitParser(filename, options).Run(text);
}

Result<ParsedCluster> ParseSubmitFile(const std::string& path, const SubmitOptions& options) {
  auto text = ReadFile(path, {.allow_pipe = true});
  if (!text) return Fail(text.error().Wrap("cannot read submit file"));
  return ParseSubmitText(*text, path, options);
}

std::vector<Attr> ProcAttrs(const ParsedCluster& cluster, size_t index) {
  std::vector<Attr> out = cluster.common;
  const auto& own = cluster.procs.at(index);
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

const std::string* FindAttr(const std::vector<Attr>& attrs, std::string_view name) {
  for (const auto& a : attrs) {
    if (EqualsIgnoreCase(a.name, name)) return &a.expr;
  }
  return nullptr;
}

}  // namespace kite::submit
