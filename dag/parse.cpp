// ParseDag: the DAG files' commands, in two passes over their lines (dag.h).
#include <algorithm>
#include <set>

#include "common/strings.h"
#include "dag/dag.h"
#include "dag/lines.h"

namespace kite::dag {
namespace {

bool Is(std::string_view word, std::string_view keyword) {
  return EqualsIgnoreCase(word, keyword);
}

// One DAG file with what it includes, or a splice: its own nodes and what it says of them.
class Builder {
 public:
  // What all the builders of one parse share.
  struct Shared {
    int next_scope = 0;
    int files_read = 0;
  };
  Builder(const ParseOptions& o, Dag* dag, std::vector<std::string> outer, std::string dir,
          std::string prefix, Shared* shared)
      : o_(o),
        dag_(dag),
        outer_(std::move(outer)),
        dir_(std::move(dir)),
        prefix_(std::move(prefix)),
        scope_(shared->next_scope++),
        shared_(shared) {}

  Status AddFile(const std::string& path, const Where* from, std::vector<std::string>* stack);
  Status Define();
  Status Apply();

  // A splice of this file: its nodes, and those with no parent or no child inside it.
  struct Splice {
    std::string name;
    std::vector<size_t> nodes;
    std::map<int, std::vector<size_t>> pin_in, pin_out;
  };
  std::map<int, std::vector<size_t>> pin_in_, pin_out_;  // PIN_IN / PIN_OUT of this file

 private:
  Status DefineNode(const Line& l, Words& w, NodeKind kind);
  Status DefineSplice(const Line& l, Words& w);
  Status ApplyLine(const Line& l);
  Status ApplyParent(const Line& l, Words& w, bool weak);
  Status ApplyScript(const Line& l, Words& w);
  Status ApplyToNodes(const Line& l, Words& w, const std::function<Status(Node&, Words&)>& f);
  Status ApplyConnect(const Line& l, Words& w);
  Status ApplyPin(const Line& l, Words& w, bool in);
  Status ApplyGlobal(const Line& l, std::string_view cmd, Words& w);
  // The nodes a PARENT or CHILD word stands for: a node, or a splice's last (first) nodes.
  Result<std::vector<size_t>> Ends(const Line& l, std::string_view name, bool as_parent);
  Result<size_t> OwnNode(const Line& l, std::string_view name);
  Status CheckName(const Line& l, std::string_view name, const char* what);
  void Warn(const Line& l, const std::string& what) {
    dag_->warnings.push_back(l.where.ToString() + ": " + what);
  }

  const ParseOptions& o_;
  Dag* dag_;
  std::vector<std::string> outer_;  // the files being read around this one (splices' parents)
  std::string root_;                // this builder's own file
  std::string dir_;                 // the splice's directory ("" at the top)
  std::string prefix_;              // "S+" in splice S
  int scope_;
  Shared* shared_;
  std::vector<Line> lines_;
  std::vector<size_t> own_;  // nodes this file defines (not its splices')
  std::map<std::string, Splice, std::less<>> splices_;
};

Status Builder::AddFile(const std::string& path, const Where* from,
                        std::vector<std::string>* stack) {
  auto where = [&](std::string_view what) {
    return from ? ErrorAt(*from, what) : Error(ErrorCode::kInvalidInput, std::string(what));
  };
  if (static_cast<int>(stack->size()) >= o_.max_depth)
    return Fail(where("INCLUDE and SPLICE nest more than " + std::to_string(o_.max_depth) +
                      " levels deep"));
  if (std::find(stack->begin(), stack->end(), path) != stack->end())
    return Fail(where(path + " is read inside itself (by INCLUDE or SPLICE)"));
  // Each INCLUDE or SPLICE may read a file again: a file splicing another twice, nested, reads
  // 2^depth files.
  if (++shared_->files_read > o_.max_files)
    return Fail(where("more than " + std::to_string(o_.max_files) +
                      " DAG files read (INCLUDE and SPLICE)"));
  if (root_.empty()) root_ = path;
  auto text = o_.read(path);
  if (!text) return Fail(from ? ErrorAt(*from, text.error().message()) : text.error());
  auto lines = SplitLines(path, *text, o_.max_line);
  if (!lines) return Fail(lines.error());
  stack->push_back(path);
  for (auto& l : *lines) {
    Words w(l.text);
    if (!Is(w.Next(), "INCLUDE")) {
      lines_.push_back(std::move(l));
      continue;
    }
    std::string file(w.Next());
    if (file.empty() || !w.AtEnd()) return Fail(ErrorAt(l.where, "INCLUDE takes one file name"));
    if (auto st = AddFile(JoinPath(dir_, file), &l.where, stack); !st) return st;
  }
  stack->pop_back();
  return {};
}

Status Builder::CheckName(const Line& l, std::string_view name, const char* what) {
  if (name.empty()) return Fail(ErrorAt(l.where, std::string(what) + " name missing"));
  if (name.find('+') != std::string_view::npos)
    return Fail(ErrorAt(l.where, std::string(what) + " name " + std::string(name) +
                                     ": '+' is not allowed (it joins splice and node names)"));
  for (const char* reserved : {"ALL_NODES", "PARENT", "CHILD"})
    if (Is(name, reserved))
      return Fail(ErrorAt(
          l.where, std::string(what) + " name " + std::string(name) + " is a reserved word"));
  return {};
}

Status Builder::Define() {
  for (const auto& l : lines_) {
    Words w(l.text);
    std::string_view cmd = w.Next();
    Status st;
    if (Is(cmd, "JOB") || Is(cmd, "NODE")) {
      st = DefineNode(l, w, NodeKind::kJob);
    } else if (Is(cmd, "FINAL")) {
      st = DefineNode(l, w, NodeKind::kFinal);
    } else if (Is(cmd, "SERVICE")) {
      st = DefineNode(l, w, NodeKind::kService);
    } else if (Is(cmd, "PROVISIONER")) {
      st = DefineNode(l, w, NodeKind::kProvisioner);
    } else if (Is(cmd, "SUBDAG")) {
      if (!Is(w.Next(), "EXTERNAL"))
        return Fail(ErrorAt(l.where, "SUBDAG must be followed by EXTERNAL"));
      st = DefineNode(l, w, NodeKind::kSubdag);
    } else if (Is(cmd, "SPLICE")) {
      st = DefineSplice(l, w);
    } else if (Is(cmd, "SUBMIT-DESCRIPTION")) {
      std::string name(w.Next());
      if (!dag_->descriptions.emplace(name, l.body).second)
        return Fail(ErrorAt(l.where, "SUBMIT-DESCRIPTION " + name + " is defined twice"));
    }
    if (!st) return st;
  }
  return {};
}

Status Builder::DefineNode(const Line& l, Words& w, NodeKind kind) {
  Node n;
  n.kind = kind;
  n.where = l.where;
  n.scope = scope_;
  std::string_view name = w.Next();
  if (auto st = CheckName(l, name, "node"); !st) return st;
  n.name = prefix_ + std::string(name);
  n.submit = std::string(w.Next());
  if (l.block) {
    if (kind == NodeKind::kSubdag)
      return Fail(ErrorAt(l.where, "a sub-DAG has a DAG file, not a submit description"));
    n.inline_submit = l.body;
    n.submit.clear();
  } else if (n.submit.empty())
    return Fail(ErrorAt(l.where, "node " + n.name + ": its submit file (or DAG file) is missing"));
  std::string dir;
  for (std::string_view word = w.Next(); !word.empty(); word = w.Next()) {
    if (Is(word, "DIR")) {
      dir = std::string(w.Next());
      if (dir.empty()) return Fail(ErrorAt(l.where, "DIR needs a directory"));
    } else if (Is(word, "NOOP")) {
      n.noop = true;
    } else if (Is(word, "DONE") && kind != NodeKind::kFinal) {
      n.done = true;
    } else {
      return Fail(ErrorAt(l.where, "unexpected '" + std::string(word) + "' after node " + n.name +
                                       " (DIR d, NOOP or DONE may follow)"));
    }
  }
  n.dir = JoinPath(dir_, dir);
  if (kind == NodeKind::kFinal) {
    if (!prefix_.empty()) return Fail(ErrorAt(l.where, "a FINAL node cannot be in a splice"));
    if (dag_->final_node)
      return Fail(ErrorAt(l.where, "a second FINAL node (" + n.name + "); " +
                                       dag_->nodes[*dag_->final_node].name + " is one already"));
  }
  if (dag_->by_name.contains(n.name) || splices_.contains(name))
    return Fail(ErrorAt(l.where, "node " + n.name + " is defined twice"));
  if (dag_->nodes.size() >= o_.max_nodes)
    return Fail(ErrorAt(l.where, "more than " + std::to_string(o_.max_nodes) + " nodes"));
  size_t index = dag_->nodes.size();
  if (kind == NodeKind::kFinal) dag_->final_node = index;
  dag_->by_name.emplace(n.name, index);
  dag_->nodes.push_back(std::move(n));
  own_.push_back(index);
  return {};
}

Status Builder::DefineSplice(const Line& l, Words& w) {
  std::string_view name = w.Next();
  if (auto st = CheckName(l, name, "splice"); !st) return st;
  std::string file(w.Next());
  if (file.empty()) return Fail(ErrorAt(l.where, "SPLICE " + std::string(name) + ": no DAG file"));
  std::string dir;
  if (Is(w.Peek(), "DIR")) {
    w.Next();
    dir = std::string(w.Next());
    if (dir.empty()) return Fail(ErrorAt(l.where, "DIR needs a directory"));
  }
  if (!w.AtEnd()) return Fail(ErrorAt(l.where, "unexpected '" + std::string(w.Rest()) + "'"));
  std::string full = prefix_ + std::string(name);
  if (splices_.contains(name) || dag_->by_name.contains(full))
    return Fail(ErrorAt(l.where, "splice " + std::string(name) + " is defined twice"));
  std::string splice_dir = JoinPath(dir_, dir);
  size_t first = dag_->nodes.size();
  std::vector<std::string> stack = outer_;
  stack.push_back(root_);
  Builder sub(o_, dag_, stack, splice_dir, full + "+", shared_);
  if (auto st = sub.AddFile(JoinPath(splice_dir, file), &l.where, &stack); !st) return st;
  if (auto st = sub.Define(); !st) return st;
  if (auto st = sub.Apply(); !st) return st;
  Splice s{std::string(name), {}, sub.pin_in_, sub.pin_out_};
  for (size_t i = first; i < dag_->nodes.size(); ++i) {
    s.nodes.push_back(i);
    std::string& cat = dag_->nodes[i].category;
    if (!cat.empty() && cat[0] != '+') cat = full + "+" + cat;  // "+Cat" is the DAG-wide one
  }
  splices_.emplace(std::string(name), std::move(s));
  return {};
}

Status Builder::Apply() {
  for (const auto& l : lines_)
    if (auto st = ApplyLine(l); !st) return st;
  return {};
}

Result<size_t> Builder::OwnNode(const Line& l, std::string_view name) {
  auto it = dag_->by_name.find(prefix_ + std::string(name));
  if (it == dag_->by_name.end())
    return Fail(ErrorAt(l.where, "unknown node " + std::string(name) +
                                     " (no JOB, FINAL, SUBDAG, SERVICE or PROVISIONER line defines "
                                     "it)"));
  return it->second;
}

Result<std::vector<size_t>> Builder::Ends(const Line& l, std::string_view name, bool as_parent) {
  auto s = splices_.find(name);
  if (s == splices_.end()) {
    auto n = OwnNode(l, name);
    if (!n) return Fail(n.error());
    if (dag_->nodes[*n].kind != NodeKind::kJob && dag_->nodes[*n].kind != NodeKind::kSubdag)
      return Fail(ErrorAt(l.where, "node " + std::string(name) +
                                       " is a FINAL, SERVICE or PROVISIONER node: it cannot be a "
                                       "parent or a child"));
    return std::vector<size_t>{*n};
  }
  std::set<size_t> inside(s->second.nodes.begin(), s->second.nodes.end());
  std::vector<size_t> ends;
  for (size_t i : s->second.nodes) {
    const auto& links = as_parent ? dag_->nodes[i].children : dag_->nodes[i].parents;
    if (std::none_of(links.begin(), links.end(), [&](size_t j) { return inside.contains(j); }))
      ends.push_back(i);
  }
  return ends;
}

Status Builder::ApplyParent(const Line& l, Words& w, bool weak) {
  std::vector<size_t> parents, children;
  bool child = false;
  for (std::string_view word = w.Next(); !word.empty(); word = w.Next()) {
    if (Is(word, "CHILD")) {
      if (child) return Fail(ErrorAt(l.where, "CHILD twice on one line"));
      child = true;
      continue;
    }
    auto ends = Ends(l, word, !child);
    if (!ends) return Fail(ends.error());
    auto& to = child ? children : parents;
    to.insert(to.end(), ends->begin(), ends->end());
  }
  if (parents.empty() || !child || children.empty())
    return Fail(
        ErrorAt(l.where, "PARENT needs one or more parents, CHILD, and one or more children"));
  for (size_t p : parents)
    for (size_t c : children) {
      dag_->nodes[p].children.push_back(c);
      dag_->nodes[c].parents.push_back(p);
      if (weak) dag_->nodes[c].weak_parents.push_back(p);
    }
  return {};
}

// The node words of a command ("NAME" or ALL_NODES, which stands for every node of this file).
Status Builder::ApplyToNodes(const Line& l, Words& w,
                             const std::function<Status(Node&, Words&)>& f) {
  std::string_view name = w.Next();
  if (name.empty()) return Fail(ErrorAt(l.where, "a node name is missing"));
  std::vector<size_t> targets = own_;
  if (!Is(name, "ALL_NODES")) {
    auto n = OwnNode(l, name);
    if (!n) return Fail(n.error());
    targets = {*n};
  }
  for (size_t i : targets) {
    Words copy = w;
    if (auto st = f(dag_->nodes[i], copy); !st) return Fail(ErrorAt(l.where, st.error().message()));
  }
  return {};
}

Status Builder::ApplyScript(const Line& l, Words& w) {
  Script s;
  s.where = l.where;
  std::string_view word = w.Next();
  for (;; word = w.Next()) {
    if (Is(word, "DEFER")) {
      auto status = ParseInt(w.Next());
      auto time = ParseInt(w.Next());
      if (!status || !time || *time < 0)
        return Fail(ErrorAt(l.where, "DEFER needs an exit status and a number of seconds"));
      s.defer_status = *status;
      s.defer_seconds = *time;
    } else if (Is(word, "DEBUG")) {
      s.debug_file = std::string(w.Next());
      s.debug_type = ToLower(w.Next());
      if (s.debug_file.empty() ||
          (s.debug_type != "stdout" && s.debug_type != "stderr" && s.debug_type != "all"))
        return Fail(ErrorAt(l.where, "DEBUG needs a file and STDOUT, STDERR or ALL"));
    } else {
      break;
    }
  }
  std::optional<Script> Node::*slot = Is(word, "PRE")    ? &Node::pre
                                      : Is(word, "POST") ? &Node::post
                                      : Is(word, "HOLD") ? &Node::hold
                                                         : nullptr;
  if (!slot)
    return Fail(
        ErrorAt(l.where, "SCRIPT: PRE, POST or HOLD expected, not '" + std::string(word) + "'"));
  return ApplyToNodes(l, w, [&](Node& n, Words& rest) -> Status {
    s.command = std::string(rest.Rest());
    if (s.command.empty()) return Fail(ErrorCode::kInvalidInput, "SCRIPT: no executable");
    if (n.*slot)
      Warn(l, "node " + n.name + ": its earlier " + ToLower(word) + " script is replaced");
    n.*slot = s;
    return {};
  });
}

Status Builder::ApplyPin(const Line& l, Words& w, bool in) {
  auto n = OwnNode(l, w.Next());
  if (!n) return Fail(n.error());
  auto pin = ParseInt(w.Next());
  if (!pin || *pin < 1 || !w.AtEnd())
    return Fail(ErrorAt(l.where, "PIN_IN/PIN_OUT: a node and a pin number (1 or more)"));
  (in ? pin_in_ : pin_out_)[*pin].push_back(*n);
  return {};
}

Status Builder::ApplyConnect(const Line& l, Words& w) {
  auto a = splices_.find(w.Next());
  auto b = splices_.find(w.Next());
  if (a == splices_.end() || b == splices_.end() || !w.AtEnd())
    return Fail(ErrorAt(l.where, "CONNECT needs two splices of this DAG file"));
  const auto& out = a->second.pin_out;
  const auto& in = b->second.pin_in;
  auto numbered = [](const std::map<int, std::vector<size_t>>& pins) {
    return !pins.empty() && pins.rbegin()->first == static_cast<int>(pins.size());
  };
  if (!numbered(out) || !numbered(in) || out.size() != in.size())
    return Fail(ErrorAt(l.where, "CONNECT " + a->first + " " + b->first + ": " + a->first +
                                     " has " + std::to_string(out.size()) + " output pin(s) and " +
                                     b->first + " " + std::to_string(in.size()) +
                                     " input pin(s); they must match, numbered from 1"));
  for (const auto& [pin, from] : out)
    for (size_t p : from)
      for (size_t c : in.at(pin)) {
        dag_->nodes[p].children.push_back(c);
        dag_->nodes[c].parents.push_back(p);
      }
  return {};
}

Status Builder::ApplyLine(const Line& l) {
  Words w(l.text);
  std::string_view cmd = w.Next();
  for (const char* defined :
       {"JOB", "NODE", "FINAL", "SERVICE", "PROVISIONER", "SUBDAG", "SPLICE", "SUBMIT-DESCRIPTION"})
    if (Is(cmd, defined)) return {};
  if (Is(cmd, "PARENT")) return ApplyParent(l, w, false);
  if (Is(cmd, "WEAK")) {
    if (!Is(w.Next(), "PARENT")) return Fail(ErrorAt(l.where, "WEAK must be followed by PARENT"));
    return ApplyParent(l, w, true);
  }
  if (Is(cmd, "SCRIPT")) return ApplyScript(l, w);
  if (Is(cmd, "CONNECT")) return ApplyConnect(l, w);
  if (Is(cmd, "PIN_IN") || Is(cmd, "PIN_OUT")) return ApplyPin(l, w, Is(cmd, "PIN_IN"));
  if (Is(cmd, "RETRY"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      auto count = ParseInt(rest.Next());
      if (!count || *count < 0)
        return Fail(ErrorCode::kInvalidInput, "RETRY needs a number of retries (0 or more)");
      n.retries = *count;
      if (Is(rest.Peek(), "UNLESS-EXIT")) {
        rest.Next();
        auto code = ParseInt(rest.Next());
        if (!code) return Fail(ErrorCode::kInvalidInput, "UNLESS-EXIT needs an exit value");
        n.retry_unless_exit = *code;
      }
      if (!rest.AtEnd())
        return Fail(ErrorCode::kInvalidInput, "unexpected '" + std::string(rest.Rest()) + "'");
      return {};
    });
  if (Is(cmd, "ABORT-DAG-ON"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      auto value = ParseInt(rest.Next());
      if (!value) return Fail(ErrorCode::kInvalidInput, "ABORT-DAG-ON needs an exit value");
      n.abort_on = *value;
      if (Is(rest.Peek(), "RETURN")) {
        rest.Next();
        auto code = ParseInt(rest.Next());
        if (!code || *code < 0 || *code > 255)
          return Fail(ErrorCode::kInvalidInput, "RETURN needs a DAG exit code from 0 to 255");
        n.abort_return = *code;
      }
      if (!rest.AtEnd())
        return Fail(ErrorCode::kInvalidInput, "unexpected '" + std::string(rest.Rest()) + "'");
      return {};
    });
  if (Is(cmd, "VARS"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      bool prepend = false;
      if (Is(rest.Peek(), "PREPEND") || Is(rest.Peek(), "APPEND"))
        prepend = Is(rest.Next(), "PREPEND");
      return ParseVars(rest.Rest(), prepend, &n.vars);
    });
  if (Is(cmd, "PRIORITY"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      auto value = ParseInt(rest.Next());
      if (!value || !rest.AtEnd())
        return Fail(ErrorCode::kInvalidInput, "PRIORITY needs one whole number");
      n.priority = *value;
      return {};
    });
  if (Is(cmd, "CATEGORY"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      n.category = std::string(rest.Next());
      if (n.category.empty() || !rest.AtEnd())
        return Fail(ErrorCode::kInvalidInput, "CATEGORY needs one category name");
      return {};
    });
  if (Is(cmd, "PRE_SKIP"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      auto code = ParseInt(rest.Next());
      if (!code || *code < 1 || *code > 255 || !rest.AtEnd())
        return Fail(ErrorCode::kInvalidInput, "PRE_SKIP needs an exit code from 1 to 255");
      n.pre_skip = *code;
      return {};
    });
  if (Is(cmd, "DONE"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      if (!rest.AtEnd())
        return Fail(ErrorCode::kInvalidInput, "unexpected '" + std::string(rest.Rest()) + "'");
      if (n.kind == NodeKind::kFinal)
        return Fail(ErrorCode::kInvalidInput, "the FINAL node cannot be marked DONE");
      n.done = true;
      return {};
    });
  if (Is(cmd, "SAVE_POINT_FILE"))
    return ApplyToNodes(l, w, [](Node& n, Words& rest) -> Status {
      std::string file(rest.Next());
      n.save_point_file = file.empty() ? n.name + ".save" : file;
      return rest.AtEnd() ? Status{}
                          : Fail(ErrorCode::kInvalidInput, "SAVE_POINT_FILE: NODE [FILE]");
    });
  return ApplyGlobal(l, cmd, w);
}

Status Builder::ApplyGlobal(const Line& l, std::string_view cmd, Words& w) {
  bool top = prefix_.empty();
  auto one_file = [&](std::string* to) -> Status {
    std::string file(w.Next());
    if (file.empty()) return Fail(ErrorAt(l.where, std::string(cmd) + " needs a file name"));
    if (!top) {
      Warn(l, std::string(cmd) + " in a splice is ignored");
      return {};
    }
    *to = JoinPath(dir_, file);
    return {};
  };
  if (Is(cmd, "REJECT"))
    return Fail(ErrorAt(l.where, "REJECT: this DAG file says it must not be run"));
  if (Is(cmd, "MAXJOBS")) {
    std::string cat(w.Next());
    auto limit = ParseInt(w.Next());
    if (cat.empty() || !limit || *limit < 0 || !w.AtEnd())
      return Fail(ErrorAt(l.where, "MAXJOBS needs a category and a limit (0 or more)"));
    if (!top && cat[0] != '+') cat = prefix_ + cat;
    dag_->max_jobs[cat] = *limit;
    return {};
  }
  if (Is(cmd, "CONFIG")) {
    std::string file;
    if (auto st = one_file(&file); !st || file.empty()) return st;
    dag_->config_files.push_back(file);
    return {};
  }
  if (Is(cmd, "JOBSTATE_LOG")) return one_file(&dag_->jobstate_log);
  if (Is(cmd, "NODE_STATUS_FILE")) {
    if (auto st = one_file(&dag_->node_status_file); !st) return st;
    for (std::string_view word = w.Next(); !word.empty(); word = w.Next()) {
      if (Is(word, "ALWAYS-UPDATE")) {
        dag_->node_status_always = true;
      } else if (auto n = ParseInt(word); n && *n >= 0) {
        dag_->node_status_interval = *n;
      } else {
        return Fail(ErrorAt(l.where, "NODE_STATUS_FILE FILE [SECONDS] [ALWAYS-UPDATE]"));
      }
    }
    return {};
  }
  if (Is(cmd, "DOT")) {
    DotOptions d;
    if (auto st = one_file(&d.file); !st || d.file.empty()) return st;
    for (std::string_view word = w.Next(); !word.empty(); word = w.Next()) {
      if (Is(word, "UPDATE") || Is(word, "DONT-UPDATE")) {
        d.update = Is(word, "UPDATE");
      } else if (Is(word, "OVERWRITE") || Is(word, "DONT-OVERWRITE")) {
        d.overwrite = Is(word, "OVERWRITE");
      } else if (Is(word, "INCLUDE") && !w.AtEnd()) {
        d.include = std::string(w.Next());
      } else {
        return Fail(ErrorAt(l.where,
                            "DOT FILE [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] "
                            "[INCLUDE FILE]"));
      }
    }
    dag_->dot = d;
    return {};
  }
  if (Is(cmd, "SET_JOB_ATTR")) {
    std::string_view rest = w.Rest();
    size_t eq = rest.find('=');
    std::string name(Trim(rest.substr(0, eq == std::string_view::npos ? 0 : eq)));
    if (eq == std::string_view::npos || name.empty() || Trim(rest.substr(eq + 1)).empty() ||
        name.find_first_of(" \t") != std::string::npos)
      return Fail(ErrorAt(l.where, "SET_JOB_ATTR needs NAME = VALUE"));
    if (top)
      dag_->job_attrs.emplace_back(name, std::string(Trim(rest.substr(eq + 1))));
    else
      Warn(l, "SET_JOB_ATTR in a splice is ignored");
    return {};
  }
  if (Is(cmd, "ENV")) {
    std::string_view how = w.Next();
    if (Is(how, "GET") && !w.AtEnd()) {
      for (std::string_view v = w.Next(); !v.empty(); v = w.Next()) dag_->env_get.emplace_back(v);
      return {};
    }
    if (Is(how, "SET") && !w.AtEnd()) {
      for (const auto& kv : Split(w.Rest(), ';')) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
          return Fail(ErrorAt(l.where, "ENV SET needs KEY=VALUE;KEY=VALUE..."));
        dag_->env_set.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
      return {};
    }
    return Fail(ErrorAt(l.where, "ENV GET VAR... or ENV SET KEY=VALUE;..."));
  }
  for (const char* unsupported : {"TOLERANCE"})
    if (Is(cmd, unsupported))
      return Fail(ErrorAt(l.where, std::string(cmd) + " is not supported by Kite"));
  return Fail(ErrorAt(l.where, "unknown command '" + std::string(cmd) + "'"));
}

void Normalise(Dag& dag) {
  for (auto& n : dag.nodes) {
    for (auto* links : {&n.parents, &n.children, &n.weak_parents}) {
      std::sort(links->begin(), links->end());
      links->erase(std::unique(links->begin(), links->end()), links->end());
    }
    if (!n.category.empty() && n.category[0] == '+') n.category.erase(0, 1);
  }
  std::map<std::string, int, std::less<>> limits;
  for (auto& [cat, limit] : dag.max_jobs) limits[cat[0] == '+' ? cat.substr(1) : cat] = limit;
  dag.max_jobs = std::move(limits);
}

Status CheckSubmitFiles(const Dag& dag, const ParseOptions& o) {
  if (!o.exists) return {};
  for (const auto& n : dag.nodes) {
    if (n.noop || n.kind == NodeKind::kSubdag || n.submit.empty()) continue;
    if (dag.descriptions.contains(n.submit)) continue;
    if (!o.exists(JoinPath(n.dir, n.submit)))
      return Fail(ErrorAt(n.where, "node " + n.name + ": submit file " + JoinPath(n.dir, n.submit) +
                                       " does not exist"));
  }
  return {};
}

}  // namespace

const Node* Dag::Find(std::string_view name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &nodes[it->second];
}

std::string JoinPath(std::string_view dir, std::string_view file) {
  if (dir.empty() || file.empty() || file[0] == '/') return std::string(file.empty() ? dir : file);
  std::string out(dir);
  if (out.back() != '/') out.push_back('/');
  return out + std::string(file);
}

Result<Dag> ParseDag(const std::vector<std::string>& files, const ParseOptions& options) {
  if (files.empty()) return Fail(ErrorCode::kInvalidInput, "no DAG file");
  Dag dag;
  Builder::Shared shared;
  // Several files are one DAG: each file's nodes are defined before any file's other commands,
  // so a later file may name an earlier file's nodes, as with condor_submit_dag.
  std::vector<Builder> builders;
  for (const auto& f : files) {
    size_t slash = f.rfind('/');
    std::string dir = !options.use_dag_dir || slash == std::string::npos ? ""
                      : slash == 0                                       ? "/"
                                                                         : f.substr(0, slash);
    builders.emplace_back(options, &dag, std::vector<std::string>{}, dir, "", &shared);
    std::vector<std::string> stack;
    if (auto st = builders.back().AddFile(f, nullptr, &stack); !st) return Fail(st.error());
  }
  for (auto& b : builders)
    if (auto st = b.Define(); !st) return Fail(st.error());
  for (auto& b : builders)
    if (auto st = b.Apply(); !st) return Fail(st.error());
  Normalise(dag);
  if (auto cycle = FindCycle(dag); !cycle.empty()) {
    std::string path;
    for (const auto& name : cycle) path += (path.empty() ? "" : " -> ") + name;
    const Node& first = *dag.Find(cycle.front());
    return Fail(ErrorAt(first.where, "the dependencies make a cycle: " + path));
  }
  if (auto st = CheckSubmitFiles(dag, options); !st) return Fail(st.error());
  return dag;
}

}  // namespace kite::dag
