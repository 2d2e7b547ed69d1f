// The REST endpoint's views that are not the CLI's: grid resources, credentials, and /metrics.
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "agent/agent.h"
#include "agent/cred_monitor.h"
#include "agent/dags.h"
#include "agent/rest.h"
#include "common/clock.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "grid/brokered.h"
#include "grid/resource.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

// The row of brokered jobs the broker has not sent anywhere yet.
constexpr std::string_view kNoSiteYet = "(brokered: no site yet)";
constexpr size_t kJobIdsListed = 100;  // job ids named per credential; job_count has them all

HttpResponse Answer(std::string body, const char* type) {
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

HttpResponse Refused(http::status status, const std::string& message) {
  auto res = Answer(json::serialize(json::object{{"error", message}}) + "\n", "application/json");
  res.result(status);
  return res;
}

const char* StatusKey(int status) {
  switch (status) {
    case kIdle:
      return "idle";
    case kRunning:
      return "running";
    case kRemoved:
      return "removed";
    case kCompleted:
      return "completed";
    case kHeld:
      return "held";
    case kSuspended:
      return "suspended";
    default:
      return "other";
  }
}

// What one proxy file holds, as the credentials library reads it.
struct ProxyView {
  std::string path;
  std::vector<std::string> jobs;  // at most kJobIdsListed
  size_t job_count = 0;
  std::string error;  // unreadable: why
  credentials::ProxyInfo info;
};

std::vector<ProxyView> Proxies(Agent& agent) {
  std::map<std::string, ProxyView> by_path;
  for (auto& [key, j] : agent.queue().jobs()) {
    auto path = j.ad.EvaluateString("x509userproxy");
    if (!path || path->empty()) continue;
    ProxyView& v = by_path[*path];
    if (v.jobs.size() < kJobIdsListed) v.jobs.push_back(JobIdString(key));
    ++v.job_count;
  }
  std::vector<ProxyView> out;
  for (auto& [path, v] : by_path) {
    v.path = path;
    auto cred = credentials::LoadProxyFile(path);
    if (cred) {
      v.info = credentials::DescribeCredential(cred->chain);
    } else {
      v.error = cred.error().message();
    }
    out.push_back(std::move(v));
  }
  return out;
}

double UnixTime(credentials::Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// A Prometheus label value: backslash, double quote and newline escaped.
std::string Label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Metric(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void Sample(std::string& out, std::string_view name, std::string_view labels, double value) {
  char num[64];
  std::snprintf(num, sizeof num, "%.17g", value);
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += num;
  out += '\n';
}

}  // namespace

HttpResponse RestService::Resources() {
  struct Row {
    std::map<std::string, int> by_status;
    int total = 0;
  };
  std::map<std::string, Row> rows;
  for (auto& [key, j] : agent_.queue().jobs()) {
    if (j.universe != kUniverseGrid) continue;
    if (!j.ad.Lookup("GridResource")) continue;
    // A brokered job under the site the broker chose for it, or with the others still waiting.
    auto resource = grid::JobGridResource(j.ad);
    Row& r = rows[resource ? *resource : std::string(kNoSiteYet)];
    ++r.by_status[StatusKey(j.status)];
    ++r.total;
  }
  json::array out;
  for (auto& [resource, r] : rows) {
    json::object o;
    o["resource"] = resource;
    std::string contact = resource == kNoSiteYet ? "" : grid::SiteOf(resource);
    o["contact"] = contact;
    json::object jobs;
    for (const char* s : {"idle", "running", "held", "removed", "completed"}) jobs[s] = 0;
    for (auto& [s, n] : r.by_status) jobs[s] = n;
    o["jobs"] = std::move(jobs);
    o["total"] = r.total;
    auto it = agent_.grid_resources().find(contact);
    if (it == agent_.grid_resources().end()) {
      // No gridmanager has talked to it yet.
      o["reachable"] = nullptr;
      o["last_contact"] = nullptr;
      o["last_error"] = "";
      o["reported"] = nullptr;
    } else {
      const auto& g = it->second;
      o["reachable"] = g.reachable;
      o["last_contact"] = g.last_contact > 0 ? json::value(g.last_contact) : json::value(nullptr);
      o["last_error"] = g.last_error;
      o["reported"] = g.reported;
    }
    out.push_back(std::move(o));
  }
  return Answer(json::serialize(out) + "\n", "application/json");
}

HttpResponse RestService::Dags(const std::string& cluster) {
  auto one = [&](int id, bool with_nodes) {
    json::object o{{"cluster", id}};
    if (const Job* j = agent_.queue().Find({id, 0})) {
      o["file"] = j->ad.EvaluateString("DAGFile").value_or("");
      o["status"] = StatusKey(j->status);
      for (const char* name :
           {"DAG_NodesTotal", "DAG_NodesDone", "DAG_NodesFailed", "DAG_NodesQueued",
            "DAG_NodesReady", "DAG_NodesUnready", "DAG_NodesPre", "DAG_NodesPost", "DAG_Status"})
        o[name] = j->ad.EvaluateInt(name).value_or(0);
      if (auto parent = j->ad.EvaluateInt("DAGManJobId")) o["parent"] = *parent;
    }
    if (with_nodes) {
      json::array nodes;
      for (const auto& n : agent_.dags().Nodes(id)) {
        json::object v{{"name", n.name}, {"state", n.state}, {"retries", n.retries}};
        v["job"] = n.job.empty() ? json::value(nullptr) : json::value(n.job + ".0");
        if (!n.note.empty()) v["note"] = n.note;
        nodes.push_back(std::move(v));
      }
      o["nodes"] = std::move(nodes);
    }
    return o;
  };
  if (cluster.empty()) {
    json::array out;
    for (int id : agent_.dags().Running()) out.push_back(one(id, false));
    return Answer(json::serialize(out) + "\n", "application/json");
  }
  auto sel = ParseJobSelector(cluster);
  if (!sel || sel->proc >= 0)
    return Refused(http::status::bad_request, "a DAG is named by its job's cluster, e.g. 12");
  auto running = agent_.dags().Running();
  if (std::find(running.begin(), running.end(), sel->cluster) == running.end())
    return Refused(http::status::not_found,
                   "no DAG " + std::to_string(sel->cluster) + " is running (/api/v1/jobs/" +
                       std::to_string(sel->cluster) + ".0 shows how one ended)");
  return Answer(json::serialize(one(sel->cluster, true)) + "\n", "application/json");
}

HttpResponse RestService::Credentials() {
  double now = WallNow();
  json::array out;
  for (auto& v : Proxies(agent_)) {
    json::object o;
    o["path"] = v.path;
    json::array ids;
    for (auto& id : v.jobs) ids.push_back(json::string(id));
    o["jobs"] = std::move(ids);
    o["job_count"] = v.job_count;
    if (!v.error.empty()) {
      o["readable"] = false;
      o["error"] = v.error;
    } else {
      double not_after = UnixTime(v.info.not_after);
      o["readable"] = true;
      o["subject"] = v.info.subject;
      o["identity"] = v.info.identity;
      o["type"] = std::string(credentials::ProxyTypeName(v.info.type));
      o["not_after"] = static_cast<int64_t>(not_after);
      o["seconds_left"] = static_cast<int64_t>(std::max(0.0, not_after - now));
      o["expired"] = not_after <= now;
    }
    // What the credential monitor does about it: reminders, and the hold threshold.
    if (const CredentialMonitor* m = agent_.credential_monitor_or_null()) {
      o["min_lifetime"] = static_cast<int64_t>(m->options().min_lifetime);
      o["myproxy_renewal"] = agent_.renews_from_myproxy();
      json::array alarms, sent;
      if (auto it = m->proxies().find(v.path); it != m->proxies().end()) {
        for (int64_t a : it->second.alarms) alarms.push_back(a);
        for (int64_t a : it->second.alarms_sent) sent.push_back(a);
      }
      o["alarms"] = std::move(alarms);
      o["alarms_sent"] = std::move(sent);
    }
    out.push_back(std::move(o));
  }
  return Answer(json::serialize(out) + "\n", "application/json");
}

HttpResponse RestService::Metrics() {
  std::string m;
  std::map<int, int> counts;
  for (auto& [key, j] : agent_.queue().jobs()) ++counts[j.status];
  Metric(m, "kite_jobs", "gauge", "Jobs in the queue, by status.");
  for (int s : {kIdle, kRunning, kSuspended, kHeld, kRemoved, kCompleted})
    Sample(m, "kite_jobs", std::string("status=\"") + StatusKey(s) + "\"", counts[s]);
  const auto& st = agent_.queue().stats();
  Metric(m, "kite_jobs_submitted_total", "counter", "Jobs submitted since the agent started.");
  Sample(m, "kite_jobs_submitted_total", "", static_cast<double>(st.submitted));
  Metric(m, "kite_jobs_completed_total", "counter", "Jobs completed since the agent started.");
  Sample(m, "kite_jobs_completed_total", "", static_cast<double>(st.completed));
  Metric(m, "kite_jobs_removed_total", "counter", "Jobs removed since the agent started.");
  Sample(m, "kite_jobs_removed_total", "", static_cast<double>(st.removed));
  Metric(m, "kite_queue_commits_total", "counter", "Queue transactions committed.");
  Sample(m, "kite_queue_commits_total", "", static_cast<double>(st.commits));
  Metric(m, "kite_queue_commit_seconds_total", "counter",
         "Seconds spent writing and committing queue transactions.");
  Sample(m, "kite_queue_commit_seconds_total", "", st.commit_seconds);

  // Resources queued grid jobs name; a report on one no job uses any more is not shown, so an
  // alert on it ends when its jobs do.
  std::set<std::string> used;
  for (auto& [key, j] : agent_.queue().jobs()) {
    if (j.universe != kUniverseGrid) continue;
    if (auto r = grid::JobGridResource(j.ad)) used.insert(grid::SiteOf(*r));
  }
  Metric(m, "kite_grid_resource_up", "gauge",
         "1 when a gridmanager last reached the grid resource, 0 when it could not.");
  for (auto& [name, g] : agent_.grid_resources()) {
    if (used.count(name))
      Sample(m, "kite_grid_resource_up", "resource=\"" + Label(name) + "\"", g.reachable ? 1 : 0);
  }
  Metric(m, "kite_grid_resource_last_contact_seconds", "gauge",
         "Unix time of the grid resource's last answer to a gridmanager.");
  for (auto& [name, g] : agent_.grid_resources()) {
    if (g.last_contact > 0 && used.count(name))
      Sample(m, "kite_grid_resource_last_contact_seconds", "resource=\"" + Label(name) + "\"",
             g.last_contact);
  }

  auto proxies = Proxies(agent_);
  double now = WallNow();
  Metric(m, "kite_proxy_seconds_left", "gauge",
         "Seconds until a proxy named by queued jobs expires (0: expired).");
  for (auto& v : proxies) {
    if (v.error.empty())
      Sample(m, "kite_proxy_seconds_left", "path=\"" + Label(v.path) + "\"",
             std::max(0.0, std::floor(UnixTime(v.info.not_after) - now)));
  }
  Metric(m, "kite_proxy_readable", "gauge", "1 when the agent can read the proxy file, else 0.");
  for (auto& v : proxies)
    Sample(m, "kite_proxy_readable", "path=\"" + Label(v.path) + "\"", v.error.empty() ? 1 : 0);

  Metric(m, "kite_rest_requests_total", "counter",
         "REST requests answered since the agent started, by HTTP status.");
  for (auto& [code, n] : answered_)
    Sample(m, "kite_rest_requests_total", "code=\"" + std::to_string(code) + "\"",
           static_cast<double>(n));
  Metric(m, "process_start_time_seconds", "gauge", "Unix time the agent started.");
  Sample(m, "process_start_time_seconds", "", std::floor(started_));
  return Answer(std::move(m), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace kite::agent
