// HTCondor's own DAGMan regression tests (../shared/conformance/dagman), run under `kite dag
// submit` with real agents, real node jobs and real scripts: does each DAG end as HTCondor's test
// expects (success: the DAG exits 0; failure: it is refused or exits non-zero)?
//
// HTCondor's test programs are not in the data; SCRIPTS.md describes each. The equivalents below
// are this test's own POSIX sh, written from those descriptions. A test whose programs have no
// equivalent here yet is listed as not run, with the reason; it is never counted as agreeing.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;

// The leading integer of $1 reduced modulo 256, as the originals' exit statuses are.
constexpr char kExitWithArg[] =
    "status() { n=$(printf '%s' \"$1\" | sed -n 's/^\\(-\\{0,1\\}[0-9][0-9]*\\).*/\\1/p'); "
    "[ -n \"$n\" ] || n=0; exit $(( (n % 256 + 256) % 256 )); }\n";

// Programs shared by several tests (SCRIPTS.md, "Scripts shared by several tests").
const std::map<std::string, std::string>& SharedScripts() {
  static const std::map<std::string, std::string> m = {
      {"x_dagman_node-ret.pl", "echo 'Returning error from test job'\nexit 3\n"},
      {"x_dagman_retry-monitor.pl",
       std::string(kExitWithArg) + "echo \"Node status passed in is $1\"\nstatus \"$1\"\n"},
      {"x_dagman_premonitor.pl", "echo \"Node status passed in is $1\"\nexit 0\n"},
      {"job_dagman_monitor.pl", "echo \"Node status passed in is $1\"\nexit 0\n"},
      {"x_echostring.pl", "for a in \"$@\"; do printf '%s ' \"$a\"; done\necho\nexit 0\n"},
      {"x_sleep.pl",
       "if [ \"$1\" = 0 ]; then while :; do sleep 1; done; fi\n"
       "n=$(printf '%s' \"$1\" | sed -n 's/^\\([0-9][0-9]*\\).*/\\1/p')\n"
       "[ -n \"$n\" ] && sleep \"$n\"\nexit 0\n"},
  };
  return m;
}

std::string ArgLine() {
  return "line=\nfor a in \"$@\"; do line=\"$line<$a> \"; done\necho \"$line\"\n";
}

std::string FinalNode(const std::string& out) {
  return std::string(kExitWithArg) + "{ echo \"  DAG_STATUS=$3\"; echo \"  FAILED_COUNT=$4\"; " +
         "echo \"$1\"; } >> " + out + "\nstatus \"$2\"\n";
}

std::string FinalScript(const std::string& out) {
  return std::string(kExitWithArg) + "{ echo \"  DAG_STATUS=$3\"; echo \"  FAILED_COUNT=$4\"; " +
         "echo \"Node $1 $2\"; } >> " + out + "\nstatus \"$5\"\n";
}

std::string FailTwice(const std::string& stem, int code) {
  return "if [ -f " + stem + ".fail1 ]; then rm -f " + stem + ".fail1; exit " +
         std::to_string(code) + "; fi\nif [ -f " + stem + ".fail2 ]; then rm -f " + stem +
         ".fail2; exit " + std::to_string(code) + "; fi\nexit 0\n";
}

// A marker file: there, it is removed and the program succeeds; missing, it is made and the
// program fails.
std::string Marker(const std::string& file, const std::string& who) {
  return "if [ -f " + file + " ]; then rm -f " + file + " || exit 1; echo '" + who +
         " succeeded'; exit 0; fi\n: > " + file + "\necho '" + who + " failed'\nexit 1\n";
}

// A shell condition: $1, compared as text, sorts after `than` (as the originals' Perl `gt`).
std::string ArgSortsAfter(const std::string& than) {
  return "awk -v a=\"$1\" 'BEGIN { exit !(a > \"" + than + "\") }'";
}

// job_dagman_retry-B's scripts: succeed when $1 sorts after `than`, saying `what` succeeds or
// fails; `retry_file`, when given, gets $1 on success.
std::string RetryB(const std::string& than, const std::string& what,
                   const std::string& retry_file = "") {
  return "if " + ArgSortsAfter(than) + "; then echo '" + what + " succeeds'; " +
         (retry_file.empty() ? "" : "echo \"$1\" > " + retry_file + " || exit 1; ") +
         "exit 0; fi\necho '" + what + " fails'\nexit 1\n";
}

// job_dagman_retry-B's node jobs A and B: succeed when the retry number their PRE script wrote
// sorts after 1.
std::string RetryBJob(const std::string& retry_file) {
  return "[ -r " + retry_file + " ] || { echo \"Can't open " + retry_file +
         "\" >&2; exit 2; }\nset -- \"$(tail -n 1 " + retry_file + ")\"\nif " + ArgSortsAfter("1") +
         "; then echo 'Node job succeeds'; exit 0; fi\necho 'Node job fails'\nexit 1\n";
}

// job_dagman_node_dir's scripts: "NODE pre script" into job_dagman_node_dir-NODE-pre.out in the
// folder they run in, then `end`.
std::string NodeDirScript(const std::string& what, const std::string& end) {
  return std::string(kExitWithArg) + "echo \"$1 " + what + " script\" > job_dagman_node_dir-$1-" +
         what + ".out || exit 1\n" + end + "\n";
}

// A job that fails once: while `file` exists it is removed and the job fails.
std::string FailOnceWhile(const std::string& file) {
  return "if [ -f " + file + " ]; then rm -f " + file +
         "; echo 'Node job fails'; exit 1; fi\necho 'Node job succeeds'\nexit 0\n";
}

// Per test: the programs it runs that are not shared (SCRIPTS.md, one section per test).
const std::map<std::string, std::map<std::string, std::string>>& TestScripts() {
  static const std::map<std::string, std::map<std::string, std::string>> m = {
      {"job_dagman_abort-B", {{"job_dagman_abort-B-script.pl", "exit 5\n"}}},
      {"job_dagman_abort-final-B",
       {{"job_dagman_abort-final-B-script.pl", "exit 5\n"},
        {"job_dagman_abort-final-B-nodeE.pl",
         std::string(kExitWithArg) + "echo \"  DAG_STATUS=$3\"\necho \"  FAILED_COUNT=$4\"\necho "
                                     "\"$1\"\nstatus \"$2\"\n"}}},
      {"job_dagman_final-A",
       {{"job_dagman_final-A-node.pl", FinalNode("job_dagman_final-A.nodes.out")},
        {"job_dagman_final-A-script.pl", FinalScript("job_dagman_final-A.scripts.out")}}},
      {"job_dagman_final-B",
       {{"job_dagman_final-B-node.pl", FinalNode("job_dagman_final-B.nodes.out")},
        {"job_dagman_final-B-script.pl", FinalScript("job_dagman_final-B.scripts.out")}}},
      {"job_dagman_pre_skip-A",
       {{"job_dagman_pre_skip-A_A.sh", "exit 0\n"}, {"job_dagman_pre_skip-A_B.sh", "exit 1\n"}}},
      {"job_dagman_pre_skip-B",
       {{"job_dagman_pre_skip-B_A.sh", "exit 1\n"},
        {"job_dagman_pre_skip-B_A-post.sh", "exit 1\n"}}},
      {"job_dagman_script_args",
       {{"job_dagman_script_args-node.pl", "echo \"$*\"\nexit 0\n"},
        {"job_dagman_script_args-script.pl",
         "f=job_dagman_script_args-$1-$2.out\nshift 2\n" + ArgLine() + "exit 0\n"}}},
      {"job_dagman_submit_fails_post",
       {{"job_dagman_submit_fails_post-nodeA-post.pl",
         "echo \"Node A post script ($1)\" >> job_dagman_submit_fails_post-nodeA-post.out\n"
         "exit 0\n"}}},
      {"job_dagman_vars",
       {{"job_dagman_vars-node.pl", ArgLine() + "exit 0\n"},
        {"job_dagman_vars-retry.pl",
         ArgLine() +
             "if [ \"$2\" != \"$3\" ]; then echo 'Mismatch between VARS value and classad "
             "value'; exit 2; fi\n"
             "n=$(printf '%s' \"$2\" | sed -n 's/^\\([0-9][0-9]*\\).*/\\1/p')\n"
             "if [ \"${n:-0}\" -lt 3 ]; then echo \"Node $1 fails to force retry\"; exit 1; fi\n"
             "echo \"Node $1 succeeds\"\nexit 0\n"}}},
      {"job_dagman_vars-B", {{"job_dagman_vars-B-node.pl", ArgLine() + "exit 0\n"}}},
      // Keys with a folder: the program lives there (SCRIPTS.md's heading names the path).
      {"job_dagman_node_dir",
       {{"job_dagman_node_dir-node.pl", "echo \"$1\"\nexit 0\n"},
        {"job_dagman_node_dir-pre.pl", NodeDirScript("pre", "exit 0")},
        {"job_dagman_node_dir-post.pl", NodeDirScript("post", "status \"$2\"")},
        {"job_dagman_node_dir-subdir/job_dagman_node_dir-nodeB.pl", "echo \"$1\"\nexit 0\n"},
        {"job_dagman_node_dir-subdir/job_dagman_node_dir-preB.pl", NodeDirScript("pre", "exit 0")},
        {"job_dagman_node_dir-subdir/job_dagman_node_dir-postB.pl",
         NodeDirScript("post", "status \"$2\"")}}},
      {"job_dagman_noop_node",
       {{"job_dagman_noop_node-node_conditional.pl",
         "f=job_dagman_noop_node-$1.works\nif [ -f \"$f\" ]; then rm -f \"$f\" || exit 1; echo "
         "\"$1 "
         "succeeded\"; exit 0; fi\n: > \"$f\"\necho \"$1 failed\"\nexit 1\n"},
        // Holds and releases its own DAG's job, which makes the runner stop and go on again.
        {"job_dagman_noop_node-node_hold-release.pl",
         "@KITE@ hold \"$2\" 2>&1 || { s=$?; echo \"Kite hold failed: $s\" >&2; exit $s; }\nsleep "
         "10\n@KITE@ release \"$2\" 2>&1 || { s=$?; echo \"Kite release failed: $s\" >&2; exit "
         "$s; }\necho \"$1 succeeded\"\nexit 0\n"},
        {"job_dagman_noop_node-node_normal.pl", "echo \"$1 succeeded\"\nexit 0\n"},
        {"job_dagman_noop_node-node_setup.pl",
         "rm -f job_dagman_noop_node-node*.works "
         "job_dagman_noop_node-subdir/job_dagman_noop_node-node*.works\necho \"$1 succeeded\"\n"
         "exit 0\n"},
        {"job_dagman_noop_node-script.pl",
         std::string(kExitWithArg) +
             "echo \"$1 result: <$3> \" > job_dagman_noop_node-$1-$2.out || exit 1\nstatus "
             "\"$3\"\n"}}},
      {"job_dagman_retry-B",
       {{"job_dagman_retry-B-nodeA-post.pl", RetryB("2", "POST script")},
        {"job_dagman_retry-B-nodeA-pre.pl",
         RetryB("0", "PRE script", "job_dagman_retry-B-nodeA.retry")},
        {"job_dagman_retry-B-nodeA.pl", RetryBJob("job_dagman_retry-B-nodeA.retry")},
        {"job_dagman_retry-B-nodeB-pre.pl",
         RetryB("0", "PRE script", "job_dagman_retry-B-nodeB.retry")},
        {"job_dagman_retry-B-nodeB.pl", RetryBJob("job_dagman_retry-B-nodeB.retry")},
        {"job_dagman_retry-B-nodeC-post.pl",
         "if [ \"$1\" = 0 ]; then echo 'POST script succeeds'; exit 0; fi\n"
         "echo 'POST script fails'\nexit 1\n"},
        {"job_dagman_retry-B-nodeC.pl", FailOnceWhile("job_dagman_retry-B-nodeC.fail")},
        {"job_dagman_retry-B-nodeD.pl", FailOnceWhile("job_dagman_retry-B-nodeD.fail")},
        {"job_dagman_retry-B-nodeE-post.pl", RetryB("0", "POST script")},
        {"job_dagman_retry-B-nodeF-pre.pl", RetryB("0", "PRE script")}}},
      {"job_dagman_set_attr",
       {{"job_dagman_set_attr-node.pl",
         "@KITE@ q -l \"$1\" 2>&1 || { s=$?; echo \"Kite q failed: $s\" >&2; exit $s; }\n"}}},
      {"job_dagman_depth_first",
       {{"job_dagman_depth_first-nodeA.pl", "rm -f job_dagman_depth_first.order\nexit 0\n"},
        {"job_dagman_depth_first-nodeB.pl",
         "printf '%s ' \"$1\" >> job_dagman_depth_first.order\n"}}},
      {"job_dagman_node_prio",
       {{"job_dagman_node_prio-nodeA.pl",
         "rm -f job_dagman_node_prio.order\nprintf '%s ' \"$1\" >> job_dagman_node_prio.order\n"},
        {"job_dagman_node_prio.pl", "printf '%s ' \"$1\" >> job_dagman_node_prio.order\n"}}},
      {"job_dagman_splice_connect-A",
       {{"job_dagman_splice_connect-A-node.pl",
         "[ \"$1\" = 0 ] || sleep \"$1\"\nf=$2\n[ -n \"$f\" ] || exit 1\nshift 2\n"
         "for a in \"$@\"; do { [ -z \"$a\" ] || [ \"$a\" = 0 ]; } && break; echo \"$a\" >> "
         "\"$f\"; done\nexit 0\n"}}},
      {"job_dagman_event_log",
       {{"job_dagman_event_log-node.pl", "echo 'Node ? succeeded'\n"},
        {"job_dagman_event_log-node-pre.pl", "echo 'Node ? pre script succeeded'\n"},
        {"job_dagman_event_log-node-post.pl", "echo 'Node ? post script succeeded'\n"}}},
      {"job_dagman_subdag-A",
       {{"job_dagman_subdag-A-lower-nodeA-pre.pl", "echo 'Node A pre script succeeded'\n"},
        {"job_dagman_subdag-A-lower-nodeA-post.pl",
         "if [ \"$1\" = 0 ]; then echo 'Node A post script succeeded'; exit 0; fi\n"
         "echo 'Node A post script failed'\nexit 1\n"}}},
      {"job_dagman_rescue-A",
       {{"job_dagman_rescue-A-node.pl", "echo 'Node succeeded'\n"},
        {"job_dagman_rescue-A-nodeD.pl", Marker("job_dagman_rescue-A-nodeD.works", "nodeD")},
        {"job_dagman_rescue-A-nodeLA.pl", Marker("job_dagman_rescue-A-nodeLA.works", "nodeLA")},
        {"job_dagman_rescue-A-nodeUA.pl",
         "[ -f job_dagman_rescue-A-nodeLA.works ] || : > job_dagman_rescue-A-nodeLA.works\n"
         "if [ -f job_dagman_rescue-A-nodeD.works ]; then rm -f job_dagman_rescue-A-nodeD.works; "
         "echo 'Node UA succeeded'; fi\nexit 0\n"}}},
      {"job_dagman_node_status",
       {{"job_dagman_node_status.pl",
         "echo \"Node $1\"\nif [ -n \"$2\" ] && [ \"$2\" != 0 ]; then\n"
         "  rm -f job_dagman_node_status.status\n"
         "  while [ ! -f job_dagman_node_status.status ]; do sleep 1; done\n"
         "  echo \"  Saving job_dagman_node_status.status to job_dagman_node_status.status-$1\"\n"
         "  mv job_dagman_node_status.status job_dagman_node_status.status-$1 || exit 1\n"
         "else\n  echo '  Just sleeping...'\n  sleep 1\nfi\nexit 0\n"}}},
      {"job_dagman_script_defer",
       {{"job_dagman_script_defer_Apre.pl",
         "touch job_dagman_script_defer_Bpre.fail1 job_dagman_script_defer_Bpre.fail2 "
         "job_dagman_script_defer_Cpost.fail1 job_dagman_script_defer_Cpost.fail2\n"},
        {"job_dagman_script_defer_Bpre.pl", FailTwice("job_dagman_script_defer_Bpre", 4)},
        {"job_dagman_script_defer_Cpost.pl", FailTwice("job_dagman_script_defer_Cpost", 5)}}},
  };
  return m;
}

// The program names a test's files mention (submit executables, SCRIPT commands).
std::set<std::string> ProgramsNamed(const fs::path& dir) {
  std::set<std::string> out;
  std::regex exe(R"((?:^|\n)\s*executable\s*=\s*(\S+))", std::regex::icase);
  std::regex script(R"((?:^|\n)\s*script\s+(?:defer\s+\S+\s+\S+\s+)?(?:pre|post)\s+\S+\s+(\S+))",
                    std::regex::icase);
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string text = ReadFileOr(e.path().string());
    for (const auto* re : {&exe, &script}) {
      for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) {
        std::string name = fs::path((*it)[1].str()).filename().string();
        if (name.ends_with(".pl") || name.ends_with(".sh")) out.insert(name);
      }
    }
  }
  return out;
}

// The README's table of exact output lines for a test ("| `FILE` | `LINE` |", a tab written as
// U+21E5), checked against the files the run wrote; `got` unchanged when all are there.
std::string CheckExpectedLines(const fs::path& root, const std::string& test,
                               const std::string& dir, const std::string& got) {
  std::string readme = ReadFileOr((root / "README.md").string());
  size_t at = readme.find("**" + test + "**");
  if (at == std::string::npos) return got;
  size_t end = readme.find("\n**job_dagman", at + 1);
  std::string section = readme.substr(at, end == std::string::npos ? end : end - at);
  std::regex row("\\| `(" + test + "[^`]*\\.out)` \\| `([^`]*)` \\|");
  for (std::sregex_iterator it(section.begin(), section.end(), row), e; it != e; ++it) {
    std::string want = std::regex_replace((*it)[2].str(), std::regex("\xE2\x87\xA5"), "\t");
    std::string text = ReadFileOr(dir + "/" + (*it)[1].str(), "(missing)");
    if (text.find(want + "\n") == std::string::npos)
      return got + ", but " + (*it)[1].str() + " lacks the line \"" + want + "\": " + text;
  }
  return got;
}

struct Outcome {
  std::string test, expect, got, why_not_run;
  std::string changed;  // how its files were changed to run here, or ""
};

// Submit commands Kite refuses on purpose: a test using one runs with those lines taken out, and
// the summary says so.
const std::pair<const char*, const char*> kDroppedCommands[] = {
    {"log_xml", "Kite writes the user log in HTCondor's text format only"}};

Outcome RunOne(const boost::json::object& t, const fs::path& root) {
  Outcome o;
  o.test = std::string(t.at("test").as_string());
  o.expect = std::string(t.at("expect").as_string());
  const auto& dags = t.at("dags").as_array();
  fs::path src = root / o.test;
  std::map<std::string, std::string> scripts;
  auto per_test = TestScripts().find(o.test);
  for (const auto& name : ProgramsNamed(src)) {
    bool found = false;
    if (per_test != TestScripts().end()) {
      for (const auto& [path, body] : per_test->second) {
        if (fs::path(path).filename() != name) continue;
        scripts[path] = body;
        found = true;
      }
    }
    if (found) continue;
    if (auto s = SharedScripts().find(name); s != SharedScripts().end()) {
      scripts[name] = s->second;
    } else {
      o.why_not_run = "no equivalent of " + name + " written yet";
      return o;
    }
  }
  KiteEnv env("dagman-" + o.test);
  fs::copy(src, env.dir(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const auto& e : fs::recursive_directory_iterator(env.dir())) {
    if (!e.is_regular_file()) continue;
    std::string text = ReadFileOr(e.path().string());
    for (const auto& [command, why] : kDroppedCommands) {
      std::regex line("(^|\n)[ \t]*" + std::string(command) + "[ \t]*=[^\n]*", std::regex::icase);
      if (!std::regex_search(text, line)) continue;
      text = std::regex_replace(text, line, "$1");
      WriteFile(e.path().string(), text);
      o.changed +=
          e.path().filename().string() + ": its " + command + " line dropped (" + why + "); ";
    }
  }
  for (const auto& [name, body] : scripts) {
    // Where the files name the program: in the folder and in any subfolder holding its files.
    std::string text = std::regex_replace(
        body, std::regex("@KITE@"),
        "KITE_HOME='" + env.home() + "' '" + std::string(KITE_BIN_DIR) + "/kite'");
    env.Write(name, "#!/bin/sh\n" + text, 0755);
  }
  if (auto* setup = t.if_contains("setup"); setup && setup->is_object()) {
    if (auto* touch = setup->as_object().if_contains("touch")) {
      for (const auto& f : touch->as_array()) env.Write(std::string(f.as_string()), "");
    }
  }
  env.StartAgent();
  std::vector<std::string> args = {"dag", "submit"};
  const auto& sargs = t.at("submit_dag_args").as_array();
  for (size_t i = 0; i < sargs.size(); ++i) {
    std::string a(sargs[i].as_string());
    if ((a == "-maxjobs" || a == "-maxidle" || a == "-maxpre" || a == "-maxpost" ||
         a == "-append" || a == "-insert_sub_file") &&
        i + 1 < sargs.size()) {
      args.push_back(a);
      args.push_back(std::string(sargs[++i].as_string()));
    }
  }
  for (const auto& d : dags) args.push_back(std::string(d.as_string()));
  auto r = env.Kite(args);
  if (r.exit_code != 0) {
    o.got = "failure";  // refused, nothing queued
    return o;
  }
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("submitted to cluster ([0-9]+)"))) {
    o.got = "no DAG job: " + r.out;
    return o;
  }
  std::string id = m[1].str() + ".0";
  auto w = env.Kite({"wait", id, "--timeout", "300"});
  auto h = env.Kite({"history", id, "-af", "ExitCode"});
  std::string code = h.out.substr(0, h.out.find('\n'));
  o.got = w.exit_code != 0 ? "did not end in 300 s" : code == "0" ? "success" : "failure";
  if (o.got == o.expect) o.got = CheckExpectedLines(root, o.test, env.dir(), o.got);
  if (o.got == o.expect && o.test == "job_dagman_node_status") {
    // README: the copies A and C saved while they ran, and the file at the end.
    const std::pair<const char*, std::vector<const char*>> files[] = {
        {"job_dagman_node_status.status-A",
         {"DagStatus = 3;", "NodesTotal = 12;", "NodesDone = 0;", "NodesQueued = 1;",
          "NodesUnready = 11;", "Node = \"A\";\n  NodeStatus = 3;",
          "Node = \"C\";\n  NodeStatus = 0;"}},
        {"job_dagman_node_status.status-C",
         {"DagStatus = 3;", "NodesDone = 11;", "NodesQueued = 1;", "NodesUnready = 0;",
          "Node = \"B7\";\n  NodeStatus = 5;", "Node = \"C\";\n  NodeStatus = 3;"}},
        {"job_dagman_node_status.status",
         {"DagStatus = 5;", "NodesTotal = 12;", "NodesDone = 12;", "NodesFailed = 0;"}}};
    for (const auto& [file, wants] : files) {
      std::string text = ReadFileOr(env.dir() + "/" + file, "(missing)");
      for (const char* want : wants) {
        if (text.find(want) == std::string::npos) {
          o.got += std::string(", but ") + file + " lacks " + want + ": " + text;
          return o;
        }
      }
    }
  }
  if (o.got == o.expect && o.test == "job_dagman_node_dir") {
    // README: the files each node's job and scripts wrote, in the folder each ran in.
    std::string top = env.dir() + "/job_dagman_node_dir-",
                sub = top + "subdir/job_dagman_node_dir-";
    const std::pair<std::string, std::string> files[] = {
        {top + "NodeA-pre.out", "NodeA pre script\n"},
        {top + "NodeA.out", "NodeA\n"},
        {top + "NodeA-post.out", "NodeA post script\n"},
        {top + "NodeC-pre.out", "NodeC pre script\n"},
        {top + "NodeC-post.out", "NodeC post script\n"},
        {top + "NodeD-pre.out", "NodeD pre script\n"},
        {top + "NodeD.out", "NodeD\n"},
        {top + "NodeD-post.out", "NodeD post script\n"},
        {sub + "NodeB-pre.out", "NodeB pre script\n"},
        {sub + "NodeB-post.out", "NodeB post script\n"},
        {sub + "NodeB.out", "NodeB\n"},
        {sub + "NodeC.out", "NodeC\n"}};
    for (const auto& [file, want] : files) {
      std::string text = ReadFileOr(file, "(missing)");
      if (text != want) {
        o.got += ", but " + file + " holds " + text + " not " + want;
        return o;
      }
    }
  }
  if (o.got == o.expect && o.test == "job_dagman_noop_node") {
    // README: the lower DAG rescued twice, and the files its nodes' jobs and scripts wrote (NOOP
    // nodes' scripts run, their jobs never). Not checked: job_dagman_noop_node-lower.dag.lib.out,
    // condor_dagman's own output file for a sub-DAG; Kite runs DAGs in the agent and writes
    // .dagman.out only.
    std::string d = env.dir() + "/job_dagman_noop_node-";
    for (const std::string file : {"lower.dag.rescue001",
                                   "lower.dag.rescue002",
                                   "nodeA.out",
                                   "nodeB1-pre.out",
                                   "nodeB1-post.out",
                                   "nodeB2.out",
                                   "nodeB2-pre.out",
                                   "nodeB2-post.out",
                                   "nodeD1.out",
                                   "nodeD2-pre.out",
                                   "nodeD2-post.out",
                                   "subdir/job_dagman_noop_node-nodeD3-pre.out",
                                   "subdir/job_dagman_noop_node-nodeD3-post.out",
                                   "nodeF.out",
                                   "nodeUA.out",
                                   "nodeUC-pre.out",
                                   "nodeUC-post.out",
                                   "nodeUD-pre.out",
                                   "nodeUD-post.out",
                                   "nodeUE-post.out",
                                   "nodeUF-post.out"}) {
      if (!fs::exists(d + file)) {
        o.got += ", but job_dagman_noop_node-" + file + " is missing";
        return o;
      }
    }
    // NOOP nodes ran no job.
    for (const std::string file : {"nodeB1.out", "nodeC.out", "nodeE.out", "nodeG.out"}) {
      if (fs::exists(d + file)) {
        o.got += ", but the NOOP node's job ran: job_dagman_noop_node-" + file;
        return o;
      }
    }
  }
  if (o.got == o.expect && o.test == "job_dagman_retry-B") {
    // README: the retries DAGMan logs.
    std::string out = ReadFileOr(env.dir() + "/job_dagman_retry-B.dag.dagman.out");
    for (const char* want : {"Node NodeA failed; retry 1 of 3", "Node NodeA failed; retry 2 of 3",
                             "Node NodeA failed; retry 3 of 3", "Node NodeB failed; retry 1 of 2",
                             "Node NodeB failed; retry 2 of 2", "Node NodeC failed; retry 1 of 1",
                             "Node NodeD failed; retry 1 of 1", "Node NodeE failed; retry 1 of 1",
                             "Node NodeF failed; retry 1 of 1"}) {
      if (out.find(want) == std::string::npos) {
        o.got += std::string(", but dagman.out lacks \"") + want + "\": " + out;
        return o;
      }
    }
  }
  if (o.got == o.expect && o.test == "job_dagman_set_attr") {
    // README: both nodes printed the DAG job's ad with these values (the command line's -append
    // beating SET_JOB_ATTR, the later file and the later line winning).
    for (const char* file : {"job_dagman_set_attr-nodeA.out", "job_dagman_set_attr-nodeB.out"}) {
      std::string text = ReadFileOr(env.dir() + "/" + file, "(missing)");
      for (const char* want :
           {"test_attr0 = Dalyan\n", "test_attr1 = 234\n", "test_attr2 = \"0.987 6.402\"\n",
            "test_attr3 = Vrsic\n", "test_attr4 = 3.14159\n", "test_attr6 = 987\n"}) {
        if (text.find(want) == std::string::npos) {
          o.got += std::string(", but ") + file + " lacks " + want + ": " + text;
          return o;
        }
      }
    }
  }
  if (o.got != o.expect) {
    o.got += " (ExitCode " + code + "; dagman.out: " +
             ReadFileOr(env.dir() + "/" + std::string(dags[0].as_string()) + ".dagman.out") + ")";
  }
  return o;
}

TEST(DagmanRun, HtcondorsRegressionTestsEndAsHtcondorExpects) {
  fs::path root = fs::path(KITE_SOURCE_DIR) / ".." / "shared" / "conformance" / "dagman";
  if (!fs::exists(root / "tests.json")) GTEST_SKIP() << "no conformance data in " << root;
  auto tests = boost::json::parse(ReadFileOr((root / "tests.json").string())).as_array();
  std::vector<Outcome> outcomes(tests.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < tests.size();) outcomes[i] = RunOne(tests[i].as_object(), root);
    });
  }
  for (auto& w : workers) w.join();
  int run = 0, agree = 0;
  std::string not_run, disagree, changed;
  for (const auto& o : outcomes) {
    if (!o.changed.empty()) changed += "  " + o.test + ": " + o.changed + "\n";
    if (!o.why_not_run.empty()) {
      not_run += "  " + o.test + ": " + o.why_not_run + "\n";
      continue;
    }
    ++run;
    if (o.got == o.expect) {
      ++agree;
    } else {
      disagree += "  " + o.test + ": expected " + o.expect + ", got " + o.got + "\n";
    }
  }
  std::string summary =
      "DAGMan run: " + std::to_string(agree) + " of " + std::to_string(run) +
      " run agree with HTCondor's expected outcome; " + std::to_string(outcomes.size() - run) +
      " of " + std::to_string(outcomes.size()) + " not run" +
      (changed.empty() ? "" : "; some run with a line Kite refuses taken out") + "\n";
  std::printf("%s%s%s%s", summary.c_str(),
              disagree.empty() ? "" : ("disagree:\n" + disagree).c_str(),
              not_run.empty() ? "" : ("not run:\n" + not_run).c_str(),
              changed.empty() ? "" : ("run with changes:\n" + changed).c_str());
  std::ofstream(fs::path(KITE_BIN_DIR) / ".." / "dagman_run.txt") << summary;
  EXPECT_TRUE(disagree.empty()) << disagree;
  EXPECT_GE(run, 35) << "fewer of HTCondor's tests ran than before:\n" << not_run;
}

}  // namespace
}  // namespace kite::testing
