// The DAG endpoints of the agent's API.
#include "agent/dag_api.h"

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/dags.h"
#include "agent/job.h"
#include "classad/io.h"

namespace kite::agent {

namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

Result<int> Limit(const json::object& body, std::string_view key) {
  auto* v = body.if_contains(key);
  if (!v || v->is_null()) return 0;
  if (!v->is_int64() || v->as_int64() < 0 || v->as_int64() > 1000000)
    return Fail(ErrorCode::kInvalidInput,
                std::string(key) + " must be a whole number from 0 to 1000000");
  return static_cast<int>(v->as_int64());
}

// A list of at most `max` strings (absent or null: none).
Result<std::vector<std::string>> StringList(const json::object& body, std::string_view key,
                                            size_t max) {
  std::vector<std::string> out;
  auto* v = body.if_contains(key);
  if (!v || v->is_null()) return out;
  if (!v->is_array() || v->as_array().size() > max)
    return Fail(ErrorCode::kInvalidInput, std::string(key) + " must be a list of at most " +
                                              std::to_string(max) + " strings");
  for (const auto& item : v->as_array()) {
    if (!item.is_string())
      return Fail(ErrorCode::kInvalidInput, std::string(key) + " must hold strings only");
    out.emplace_back(item.as_string());
  }
  return out;
}

// true or false (absent or null: not said).
Result<std::optional<bool>> Flag(const json::object& body, std::string_view key) {
  auto* v = body.if_contains(key);
  if (!v || v->is_null()) return std::optional<bool>();
  if (!v->is_bool())
    return Fail(ErrorCode::kInvalidInput, std::string(key) + " must be true or false");
  return std::optional<bool>(v->as_bool());
}

}  // namespace

ApiResponse HandleDagSubmit(Agent& agent, const json::object& body) {
  DagSubmitArgs args;
  auto cwd = GetString(body, "cwd");
  if (!cwd) return ErrorReply(cwd.error());
  args.cwd = *cwd;
  // "files": the DAG files (several are one DAG); "file": one, as before.
  auto files = StringList(body, "files", 1000);
  if (!files) return ErrorReply(files.error());
  args.files = std::move(*files);
  if (args.files.empty()) {
    auto file = GetString(body, "file");
    if (!file) return ErrorReply(file.error());
    if (!file->empty()) args.files.push_back(*file);
  }
  if (args.files.empty()) return ErrorReply(http::status::bad_request, "dag/submit needs a file");
  for (const auto& f : args.files) {
    if (f.empty()) return ErrorReply(http::status::bad_request, "a DAG file name is empty");
    if (f[0] != '/' && (args.cwd.empty() || args.cwd[0] != '/'))
      return ErrorReply(http::status::bad_request, "a relative DAG file needs an absolute cwd");
  }
  for (auto [key, out] : {std::pair{"maxjobs", &args.max_jobs},
                          {"maxidle", &args.max_idle},
                          {"maxpre", &args.max_pre},
                          {"maxpost", &args.max_post}}) {
    auto n = Limit(body, key);
    if (!n) return ErrorReply(n.error());
    *out = *n;
  }
  auto force = Flag(body, "force");
  if (!force) return ErrorReply(force.error());
  args.force = force->value_or(false);
  auto use_dag_dir = Flag(body, "usedagdir");
  if (!use_dag_dir) return ErrorReply(use_dag_dir.error());
  args.use_dag_dir = use_dag_dir->value_or(false);
  auto always_run_post = Flag(body, "always_run_post");
  if (!always_run_post) return ErrorReply(always_run_post.error());
  args.always_run_post = *always_run_post;
  auto append = StringList(body, "append", 1000);
  if (!append) return ErrorReply(append.error());
  args.append = std::move(*append);
  auto insert = GetString(body, "insert_sub_file");
  if (!insert) return ErrorReply(insert.error());
  args.insert_sub_file = *insert;
  if (!insert->empty() && (*insert)[0] != '/' && (args.cwd.empty() || args.cwd[0] != '/'))
    return ErrorReply(http::status::bad_request,
                      "a relative insert_sub_file needs an absolute cwd");
  auto notification = GetString(body, "notification");
  if (!notification) return ErrorReply(notification.error());
  args.notification = *notification;
  auto r = agent.dags().Submit(args);
  if (!r) return ErrorReply(r.error());
  json::array warnings;
  for (auto& w : r->warnings) warnings.emplace_back(w);
  json::object o{{"cluster", r->cluster},
                 {"nodes", r->nodes},
                 {"done_from_rescue", r->done_from_rescue},
                 {"rescue", r->rescue},
                 {"warnings", std::move(warnings)}};
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

ApiResponse HandleDagStatus(Agent& agent, const json::object& body) {
  int cluster = 0;
  if (auto* c = body.if_contains("cluster"); c && !c->is_null()) {
    if (!c->is_int64() || c->as_int64() < 1 || c->as_int64() > kMaxJobId)
      return ErrorReply(http::status::bad_request,
                        "cluster must be an integer from 1 to " + std::to_string(kMaxJobId));
    cluster = static_cast<int>(c->as_int64());
  }
  auto file = GetString(body, "file");
  if (!file) return ErrorReply(file.error());
  if (cluster == 0 && !file->empty()) cluster = agent.dags().FindByFile(*file);
  if (cluster == 0)
    return ErrorReply(http::status::not_found, file->empty()
                                                   ? "dag/status needs a cluster or a file"
                                                   : "no DAG from " + *file + " is running");
  auto nodes = agent.dags().Nodes(cluster);
  if (nodes.empty()) {
    // Not running: how it ended, from its own job in history (condor_q forgets it; its node
    // counts and DAG_Status are what DAGMan's job ad keeps).
    std::optional<classad::ClassAd> ended;
    (void)agent.store().History(cluster, 0, 1, [&](const store::HistoryRecord& h) {
      if (auto ad = classad::ParseOldAd(h.ad); ad && ad->Lookup("DAG_NodesTotal"))
        ended = std::move(*ad);
      return false;
    });
    if (!ended)
      return ErrorReply(
          http::status::not_found,
          "no DAG " + std::to_string(cluster) + " is running, and history has no DAG of that id");
    auto count = [&](const char* name) { return ended->EvaluateInt(name).value_or(0); };
    // A removed DAG has no CompletionDate: its removal's time is when it entered that status.
    int64_t completion =
        count("CompletionDate") > 0 ? count("CompletionDate") : count("EnteredCurrentStatus");
    json::object o{
        {"cluster", cluster},
        {"file", ended->EvaluateString("DAGFile").value_or("")},
        {"nodes", json::array()},
        {"ended", json::object{{"status", ended->EvaluateInt("JobStatus").value_or(0)},
                               {"completion", completion},
                               {"exit_code", ended->EvaluateInt("ExitCode").value_or(-1)},
                               {"dag_status", count("DAG_Status")},
                               {"nodes_total", count("DAG_NodesTotal")},
                               {"nodes_done", count("DAG_NodesDone")},
                               {"nodes_failed", count("DAG_NodesFailed")}}}};
    return Reply(http::status::ok, json::serialize(o) + "\n");
  }
  json::array a;
  for (const auto& n : nodes) {
    a.push_back(json::object{{"name", n.name},
                             {"state", n.state},
                             {"job", n.job},
                             {"retries", n.retries},
                             {"note", n.note}});
  }
  Job* j = agent.queue().Find({cluster, 0});
  json::object o{{"cluster", cluster},
                 {"file", j ? j->ad.EvaluateString("DAGFile").value_or("") : ""},
                 {"nodes", std::move(a)}};
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

}  // namespace kite::agent
