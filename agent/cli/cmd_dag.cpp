// `kite dag submit|status`: task graphs in DAGMan's language, run by the agent (docs/dag.md).
//
//   kite dag submit FILE.dag [FILE2.dag ...] [-maxjobs N] [-maxidle N] [-maxpre N] [-maxpost N]
//                   [-force] [-usedagdir] [-AlwaysRunPost | -DontAlwaysRunPost]
//                   [-notification WHEN]
//   kite dag status FILE.dag | DAGID
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "common/clock.h"
#include "common/files.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

struct SubmitArgs {
  std::vector<std::string> files;
  int max_jobs = 0, max_idle = 0, max_pre = 0, max_post = 0;
  bool force = false;
  bool use_dag_dir = false;
  bool always_run_post = false, dont_always_run_post = false;
  std::string notification;
  std::vector<std::string> append;
  std::string insert_sub_file;
};

std::string CurrentDir() {
  std::vector<char> buf(4096);
  if (!::getcwd(buf.data(), buf.size())) Die("cannot read the current directory");
  return buf.data();
}

void Submit(const SubmitArgs& a) {
  auto client = ConnectOrDie();
  json::array files;
  for (const auto& f : a.files) files.emplace_back(f);
  json::object body{{"files", std::move(files)}, {"cwd", CurrentDir()}, {"maxjobs", a.max_jobs},
                    {"maxidle", a.max_idle},     {"maxpre", a.max_pre}, {"maxpost", a.max_post},
                    {"force", a.force}};
  if (a.use_dag_dir) body["usedagdir"] = true;
  if (a.always_run_post || a.dont_always_run_post) body["always_run_post"] = a.always_run_post;
  if (!a.notification.empty()) body["notification"] = a.notification;
  if (!a.append.empty()) {
    json::array lines;
    for (const auto& l : a.append) lines.emplace_back(l);
    body["append"] = std::move(lines);
  }
  if (!a.insert_sub_file.empty()) body["insert_sub_file"] = a.insert_sub_file;
  auto r = client->PostJson("/v1/dag/submit", body);
  if (!r) Die(r.error());
  for (const auto& w : r->at("warnings").as_array())
    std::fprintf(stderr, "kite: warning: %s\n", std::string(w.as_string()).c_str());
  std::string rescue(r->at("rescue").as_string());
  if (!rescue.empty())
    std::printf("Running the rescue DAG %s: %lld node(s) already done.\n", rescue.c_str(),
                static_cast<long long>(r->at("done_from_rescue").as_int64()));
  std::string names;
  for (const auto& f : a.files) names += (names.empty() ? "" : " ") + f;
  std::printf("Submitting the DAG %s (%lld nodes).\n1 job(s) submitted to cluster %lld.\n",
              names.c_str(), static_cast<long long>(r->at("nodes").as_int64()),
              static_cast<long long>(r->at("cluster").as_int64()));
  std::printf("The DAG's progress: kite dag status %lld; its log: %s.dagman.out\n",
              static_cast<long long>(r->at("cluster").as_int64()), a.files[0].c_str());
}

void Status(const std::string& what) {
  auto client = ConnectOrDie();
  json::object body;
  bool id = !what.empty() && what.find_first_not_of("0123456789") == std::string::npos;
  if (id) {
    body["cluster"] = std::stoll(what.substr(0, 12));
  } else {
    body["file"] = what[0] == '/' ? what : kite::JoinPath(CurrentDir(), what);
  }
  auto r = client->PostJson("/v1/dag/status", body);
  if (!r) Die(r.error());
  long long cluster = r->at("cluster").as_int64();
  std::printf("DAG %lld: %s\n", cluster, std::string(r->at("file").as_string()).c_str());
  if (const auto* ended = r->if_contains("ended")) {
    // A DAG that is over: how it ended, as its own job's ad in history says.
    const auto& e = ended->as_object();
    auto n = [&](const char* key) { return static_cast<long long>(e.at(key).as_int64()); };
    bool completed = n("status") == 4;
    std::printf(
        "It has ended: %s at %s, exit code %lld (DAG_Status %lld); %lld of %lld nodes done, "
        "%lld failed.\n",
        completed ? "completed" : "removed",
        kite::FormatUtc(static_cast<double>(n("completion"))).c_str(), n("exit_code"),
        n("dag_status"), n("nodes_done"), n("nodes_total"), n("nodes_failed"));
    std::printf("Its nodes' jobs: kite history -constraint 'DAGManJobId == %lld'\n", cluster);
    return;
  }
  std::printf("%-24s %-10s %8s %7s  %s\n", "NODE", "STATE", "JOB", "RETRIES", "NOTE");
  for (const auto& v : r->at("nodes").as_array()) {
    const auto& n = v.as_object();
    std::printf("%-24s %-10s %8s %7lld  %s\n", std::string(n.at("name").as_string()).c_str(),
                std::string(n.at("state").as_string()).c_str(),
                std::string(n.at("job").as_string()).c_str(),
                static_cast<long long>(n.at("retries").as_int64()),
                std::string(n.at("note").as_string()).c_str());
  }
}

}  // namespace

void RegisterDagCommands(CLI::App& app) {
  auto* g = app.add_subcommand("dag", "task graphs in DAGMan's language, run by the agent");
  g->require_subcommand(1);
  static SubmitArgs s;
  auto* sub = g->add_subcommand(
      "submit", "check a DAG file and queue it (condor_submit_dag); a rescue DAG is used");
  sub->add_option("files", s.files,
                  "the DAG file; several are one DAG, named by the first (its rescue DAG, logs)")
      ->required();
  // condor_submit_dag's options are read in any case (-MaxJobs, -maxjobs).
  sub->add_option("--maxjobs", s.max_jobs,
                  "at most N node jobs queued at once (0: the DAG's CONFIG, else no limit)")
      ->check(CLI::Range(0, 1000000))
      ->ignore_case();
  sub->add_option("--maxidle", s.max_idle, "stop submitting while N node jobs are idle")
      ->check(CLI::Range(0, 1000000))
      ->ignore_case();
  sub->add_option("--maxpre", s.max_pre, "at most N PRE scripts at once")
      ->check(CLI::Range(0, 1000000))
      ->ignore_case();
  sub->add_option("--maxpost", s.max_post, "at most N POST scripts at once")
      ->check(CLI::Range(0, 1000000))
      ->ignore_case();
  sub->add_flag("--force,-f", s.force,
                "start over: rename existing rescue DAGs instead of using them")
      ->ignore_case();
  sub->add_flag("--usedagdir", s.use_dag_dir,
                "read what each DAG file names relative to that file's own directory, and run "
                "its nodes there (condor_submit_dag -usedagdir)")
      ->ignore_case();
  auto* arp = sub->add_flag("--AlwaysRunPost", s.always_run_post,
                            "run a node's POST script also after its PRE script failed")
                  ->ignore_case();
  sub->add_flag("--DontAlwaysRunPost", s.dont_always_run_post,
                "no POST script after a failed PRE script (the default, unless the DAG's CONFIG "
                "sets DAGMAN_ALWAYS_RUN_POST)")
      ->ignore_case()
      ->excludes(arp);
  sub->add_option("--notification", s.notification,
                  "mail when the DAG ends: Never, Complete, Error or Always (as a job's "
                  "notification)")
      ->ignore_case();
  sub->add_option("--append", s.append,
                  "a submit command for the DAG's own job: +Attr = value, My.Attr = value, "
                  "notification or notify_user (may be given again)")
      ->ignore_case();
  sub->add_option("--insert_sub_file", s.insert_sub_file,
                  "a file of such submit commands for the DAG's own job")
      ->ignore_case();
  sub->callback([] { Submit(s); });
  static std::string what;
  auto* st = g->add_subcommand(
      "status", "each node of a running DAG: its state and its job; how a finished one ended");
  st->add_option("dag", what, "the DAG file, or the DAG's job id")->required();
  st->callback([] { Status(what); });
}

}  // namespace kite::cli
