// The submit-file parser: statements in order, queue statements building procs, and the split of
// the cluster's attributes into common ones and per-proc overrides.
//
// Cheap large clusters: at a queue statement every command handler runs once, for the first
// proc, and the expander notes whether it read a proc variable ($(Process), $(Item), ...). Only
// those handlers run again for the other procs, so `queue 10000` with nothing per-proc costs
// 10000 ProcId attributes and no more.
#include "submit/submit_file.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <set>
#include <unordered_map>
#include <utility>

#include "classad/parser.h"
#include "common/files.h"
#include "common/strings.h"
#include "submit/job_attrs.h"
#include "submit/lines.h"
#include "submit/macros.h"
#include "submit/queue_statement.h"

namespace kite::submit {
namespace {

// The procs of one queue statement: attributes shared by all of them, and each proc's own.
struct StatementProcs {
  std::vector<Attr> shared;
  std::vector<std::vector<Attr>> varying;  // ProcId first
};

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

class SubmitParser {
 public:
  SubmitParser(std::string file, const SubmitOptions& options)
      : file_(std::move(file)),
        options_(options),
        cwd_(options.cwd.empty() ? CurrentDir() : AbsolutePath(options.cwd)),
        list_dir_(DirName(JoinPath(cwd_, file_))),
        expander_(table_, file_, options.cluster_id) {}

  Result<ParsedCluster> Run(std::string_view text);

 private:
  Error Bad(int line, std::string_view msg) const { return LineError(file_, line, msg); }
  Status Line(const std::vector<LogicalLine>& lines, size_t* next);
  Status Custom(std::string_view name, std::string_view value, int line);
  Status Queue(std::string_view args, int line, const std::vector<LogicalLine>& lines,
               size_t* next);
  Status RunProcs(const QueueSpec& spec, int line);
  Status RunHandlers(std::vector<Handler>& handlers, JobContext& ctx, StatementProcs& st,
                     std::vector<size_t>* varying, std::vector<Attr>& proc);
  void LateWarnings();
  ParsedCluster Merge();

  std::string file_;
  const SubmitOptions& options_;
  std::string cwd_;
  std::string list_dir_;
  MacroTable table_;
  Expander expander_;
  std::vector<CustomAttr> customs_;
  std::vector<StatementProcs> statements_;
  std::vector<std::string> warnings_;
  size_t procs_ = 0;
  int last_queue_line_ = 0;
};

Result<ParsedCluster> SubmitParser::Run(std::string_view text) {
  auto lines = SplitLines(text, file_);
  if (!lines) return Fail(lines.error());
  size_t next = 0;
  while (next < lines->size()) {
    if (auto st = Line(*lines, &next); !st) return Fail(st.error());
  }
  if (last_queue_line_ == 0) {
    return Fail(Bad(lines->empty() ? 1 : lines->back().line,
                    "no queue statement (add 'queue' after the commands)"));
  }
  LateWarnings();
  return Merge();
}

// One logical line: blank, comment, queue statement, custom attribute or `key = value`.
Status SubmitParser::Line(const std::vector<LogicalLine>& lines, size_t* next) {
  const LogicalLine& l = lines[(*next)++];
  std::string_view t = Trim(l.text);
  if (IsBlankOrComment(t)) return {};
  size_t w = 0;
  while (w < t.size() && (std::isalnum(static_cast<unsigned char>(t[w])) || t[w] == '_')) ++w;
  if (EqualsIgnoreCase(t.substr(0, w), "queue")) {
    std::string_view rest = Trim(t.substr(w));
    if (!rest.empty() && rest.front() == '=') {
      return Fail(Bad(l.line,
                      "'queue' is a statement (queue [N] [VAR in|from|matching ...]), "
                      "not a command to assign"));
    }
    if (w == t.size() || t[w] == ' ' || t[w] == '\t') return Queue(rest, l.line, lines, next);
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
  if (!IsIdentifier(key, true)) {
    return Fail(Bad(l.line, "'" + std::string(key) + "' is not a valid command or macro name"));
  }
  table_.Define(key, value, l.line, IsCommand(ToLower(key)));
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
                              " is set by Kite and cannot be set "
                              "in a submit file"));
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

Status SubmitParser::Queue(std::string_view args, int line, const std::vector<LogicalLine>& lines,
                           size_t* next) {
  last_queue_line_ = line;
  expander_.SetProc(nullptr);
  auto expanded = expander_.Expand(args, line);
  if (!expanded) return Fail(expanded.error());
  QueueContext qc{file_, line, list_dir_, cwd_};
  auto spec = ParseQueue(*expanded, qc, lines, next);
  if (!spec) return Fail(spec.error());
  return RunProcs(*spec, line);
}

// Runs every handler for a statement's first proc, sorting its attributes into `st.shared` or
// `proc` by whether it read a proc variable, and recording the latter in `varying`.
Status SubmitParser::RunHandlers(std::vector<Handler>& handlers, JobContext& ctx,
                                 StatementProcs& st, std::vector<size_t>* varying,
                                 std::vector<Attr>& proc) {
  std::vector<Attr> out;
  ctx.set_output(&out);
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
    warnings_.push_back(file_ + ":" + std::to_string(line) +
                        ": warning: queue statement queues "
                        "no jobs");
    return {};
  }
  std::set<std::string> overridden;
  for (const auto& c : customs_) overridden.insert(ToLower(c.name));
  std::vector<Handler> handlers = MakeHandlers(customs_);
  JobContext ctx(expander_, options_, file_, cwd_, line, &warnings_);
  ctx.set_overridden(&overridden);
  ProcVars vars;
  vars.loop_names = spec.foreach ? &spec.vars : nullptr;
  expander_.SetProc(&vars);
  StatementProcs st;
  st.varying.reserve(rows * count);
  std::vector<size_t> varying;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t step = 0; step < count; ++step) {
      vars.proc_id = static_cast<long>(procs_);
      vars.step = static_cast<long>(step);
      vars.item_index = spec.foreach ? spec.item_index[r] : 0;
      vars.loop_values = spec.foreach ? &spec.rows[r] : nullptr;
      std::vector<Attr> proc{Attr{"ProcId", std::to_string(procs_)}};
      Status s = st.varying.empty() ? RunHandlers(handlers, ctx, st, &varying, proc) : Status{};
      if (s && !st.varying.empty()) {
        ctx.set_output(&proc);
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
    if (def.line > last_queue_line_) {
      late.emplace_back(def.line, def.name +
                                      " is set after the last queue statement and has no "
                                      "effect");
    } else if (!def.is_command && !def.used) {
      late.emplace_back(def.line, "macro " + def.name +
                                      " is defined but never used (a misspelt "
                                      "command?)");
    }
  }
  for (const auto& c : customs_) {
    if (c.line > last_queue_line_) {
      late.emplace_back(c.line, "+" + c.name +
                                    " is set after the last queue statement and has no "
                                    "effect");
    }
  }
  std::sort(late.begin(), late.end());
  for (auto& [line, msg] : late) {
    warnings_.push_back(file_ + ":" + std::to_string(line) + ": warning: " + msg);
  }
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
      std::vector<Attr> o;
      o.reserve(proc.size() + shared_overrides.size());
      o.push_back(std::move(proc[0]));
      o.insert(o.end(), shared_overrides.begin(), shared_overrides.end());
      for (size_t i = 1; i < proc.size(); ++i) {
        if (!is_common(proc[i])) o.push_back(std::move(proc[i]));
      }
      out.procs.push_back(std::move(o));
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
