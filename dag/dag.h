// DAG files in DAGMan's language (docs/dag.md): the nodes of a task graph, their dependencies and
// everything the DAG file says about running them. Pure: files are read through the caller's
// function, so a parse has no side effect and the tests and the fuzz target need no disk.
//
//   ParseDag(files) -- lines (continuations joined, INCLUDE expanded, SUBMIT-DESCRIPTION blocks
//     taken out) -- pass 1: node definitions (JOB, FINAL, SUBDAG, SERVICE, PROVISIONER, SPLICE)
//     -- pass 2: everything else, so a command may name a node defined further down (as DAGMan
//     allows) -- the cycle check.
//
// A node of a splice S is named "S+NAME" (nested: "S+T+NAME"), as in DAGMan.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace kite::dag {

// Where a command was written: "file:line".
struct Where {
  std::string file;
  int line = 0;
  std::string ToString() const { return file + ":" + std::to_string(line); }
};

// JOB, SUBDAG EXTERNAL (a DAG run as one node), FINAL (runs last, whatever happened), SERVICE
// (runs beside the DAG while it runs), PROVISIONER (runs first; the DAG waits for it).
enum class NodeKind { kJob, kSubdag, kFinal, kService, kProvisioner };

struct Script {
  std::string command;                 // the executable and its arguments, as written
  std::optional<int> defer_status;     // DEFER: this exit status means "run me again later"
  int defer_seconds = 0;               // ... after this many seconds
  std::string debug_file, debug_type;  // DEBUG file STDOUT|STDERR|ALL
  Where where;
};

struct Var {
  std::string name;  // "+Attr" or "My.Attr": a job attribute; otherwise a submit-file macro
  std::string value;
  bool prepend = false;  // PREPEND: set before the submit file is read (it may override it)
};

struct Node {
  std::string name;
  NodeKind kind = NodeKind::kJob;
  // The submit file (or a SUBMIT-DESCRIPTION name) of a job node; the DAG file of a sub-DAG.
  std::string submit;
  std::string inline_submit;  // JOB NAME { ... }: the submit description itself (submit is "")
  std::string dir;  // DIR, joined with the splice's DIR: where the node runs ("" = the DAG's)
  bool noop = false, done = false;
  std::optional<Script> pre, post, hold;
  int retries = 0;
  std::optional<int> retry_unless_exit;
  std::optional<int> abort_on;      // ABORT-DAG-ON this exit value (of the node's job or POST)
  std::optional<int> abort_return;  // ... with this DAG exit code (default: the node's value)
  std::optional<int> pre_skip;      // PRE_SKIP: this PRE exit code skips the job and POST
  std::vector<Var> vars;
  int priority = 0;
  std::string category;
  std::string save_point_file;
  std::vector<size_t> parents, children;  // indexes into Dag::nodes, sorted, no duplicates
  std::vector<size_t> weak_parents;       // WEAK PARENT: those of `parents` whose failure
                                          // does not stop this node
  Where where;                            // its JOB/FINAL/SUBDAG/... line
  int scope = 0;                          // which DAG file defined it (ALL_NODES applies per file)
};

struct DotOptions {
  std::string file;
  bool update = false, overwrite = true;
  std::string include;  // a header file copied into the dot file
};

struct Dag {
  std::vector<Node> nodes;  // in the order they were defined
  std::map<std::string, size_t, std::less<>> by_name;
  std::optional<size_t> final_node;
  std::map<std::string, int, std::less<>> max_jobs;              // MAXJOBS per CATEGORY
  std::map<std::string, std::string, std::less<>> descriptions;  // SUBMIT-DESCRIPTION bodies
  std::vector<std::pair<std::string, std::string>> job_attrs;    // SET_JOB_ATTR, in order
  std::vector<std::string> config_files;                         // CONFIG
  std::vector<std::string> env_get;                              // ENV GET
  std::vector<std::pair<std::string, std::string>> env_set;      // ENV SET
  std::optional<DotOptions> dot;
  std::string node_status_file;
  int node_status_interval = 60;  // NODE_STATUS_FILE's minimum seconds between updates
  bool node_status_always = false;
  std::string jobstate_log;
  std::vector<std::string> warnings;  // "file:line: ..." for what was accepted but ignored

  const Node* Find(std::string_view name) const;
};

struct ParseOptions {
  // Reads a file named in a DAG file (relative names are relative to where the DAG runs).
  std::function<Result<std::string>(const std::string& path)> read;
  // Whether a node's submit file exists (relative to where the DAG runs); unset: not checked.
  std::function<bool(const std::string& path)> exists;
  size_t max_line = 64 * 1024;  // longer lines are refused
  int max_depth = 32;           // INCLUDE and SPLICE nesting
  int max_files = 10000;        // DAG files read in all (INCLUDE and SPLICE)
  size_t max_nodes = 1000000;
  // condor_submit_dag -usedagdir: what each DAG file names (node submit files and DIRs, INCLUDE,
  // SPLICE, CONFIG ...) is relative to that file's own directory, and its nodes run there.
  bool use_dag_dir = false;
};

// Parses the DAG files (several are one DAG, as with condor_submit_dag a.dag b.dag). Errors are
// kInvalidInput (or the reader's) with "file:line: what is wrong" in the message; a cycle is
// refused naming it ("A -> B -> A").
Result<Dag> ParseDag(const std::vector<std::string>& files, const ParseOptions& options);

// A cycle among the nodes (its names, the first repeated at the end), or empty.
std::vector<std::string> FindCycle(const Dag& dag);

// "a/b" joined the way DAGMan joins a DIR with a file name: an absolute or empty second part wins.
std::string JoinPath(std::string_view dir, std::string_view file);

}  // namespace kite::dag
