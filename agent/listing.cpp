// Job listings.
#include "agent/listing.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "classad/io.h"
#include "grid/brokered.h"
#include "grid/grid_type.h"
#include "grid/resource.h"

namespace kite::agent {
namespace {

// One member as condor_q -json writes it: "Name": value.
void AppendMember(std::string& out, std::string_view name, const classad::Expr& expr) {
  classad::AppendJsonString(out, name);
  out += ": ";
  classad::AppendJsonValue(out, expr);
}

std::string ShortDate(double t) {
  time_t tt = static_cast<time_t>(t);
  struct tm tm;
  localtime_r(&tt, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%2d/%02d %02d:%02d", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min);
  return buf;
}

std::string Duration(double secs) {
  long s = secs > 0 ? std::lround(secs) : 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld+%02ld:%02ld:%02ld", s / 86400, (s / 3600) % 24, (s / 60) % 60,
                s % 60);
  return buf;
}

int StatusOf(const classad::ClassAd& ad) {
  return static_cast<int>(ad.EvaluateInt("JobStatus").value_or(0));
}

double RunTime(const classad::ClassAd& ad, double now) {
  double t = ad.EvaluateReal("RemoteWallClockTime").value_or(0);
  if (RunUnderWay(StatusOf(ad))) {
    if (auto start = ad.EvaluateInt("JobCurrentStartDate")) t += now - static_cast<double>(*start);
  }
  return t;
}

std::string Command(const classad::ClassAd& ad) {
  std::string cmd = ad.EvaluateString("Cmd").value_or("");
  auto slash = cmd.find_last_of('/');
  if (slash != std::string::npos) cmd = cmd.substr(slash + 1);
  auto args = ad.EvaluateString("Arguments");
  if (!args) args = ad.EvaluateString("Args");
  if (args && !args->empty()) cmd += " " + *args;
  if (cmd.size() > 60) cmd = cmd.substr(0, 57) + "...";
  return cmd;
}

// condor_q -dag: a node's job shows its node's name under its DAG.
std::string NodeOrCommand(const classad::ClassAd& ad, bool dag) {
  if (dag && ad.EvaluateInt("DAGManJobId")) {
    if (auto node = ad.EvaluateString("DAGNodeName")) return " |-" + *node;
  }
  return Command(ad);
}

}  // namespace

std::string FormatJson(const std::vector<ListedJob>& jobs) {
  std::string out;
  out.reserve(jobs.size() * 1024 + 8);
  out += "[\n";
  // Rendered members of each cluster ad seen, by cluster id (history rows have no cluster), with
  // their interned name keys: a job's own attribute of the same name is found without hashing
  // the name again (that lookup was most of the time of a 100,000-job listing).
  std::map<const Cluster*, std::vector<std::pair<uint32_t, std::string>>> cache;
  bool first = true;
  for (auto& j : jobs) {
    out += first ? "{" : ",\n{";
    first = false;
    bool first_member = true;
    auto member = [&](std::string_view text) {
      out += first_member ? "\n  " : ",\n  ";
      first_member = false;
      out += text;
    };
    std::string m;
    for (auto& a : *j.ad) {
      m.clear();
      AppendMember(m, a.name(), a.expr());
      member(m);
    }
    if (j.cluster) {
      auto& rendered = cache[j.cluster];
      if (rendered.empty()) {
        for (auto& a : j.cluster->ad) {
          std::string r;
          AppendMember(r, a.name(), a.expr());
          rendered.emplace_back(a.name_id().key, std::move(r));
        }
      }
      for (auto& [key, text] : rendered) {
        if (!j.ad->FindOwnKey(key)) member(text);
      }
    }
    out += "\n}";
  }
  out += jobs.empty() ? "]\n" : "\n]\n";
  return out;
}

namespace {

std::string JobTable(const std::vector<ListedJob>& jobs, double now, bool history, bool dag) {
  std::string out;
  out.reserve(jobs.size() * 100 + 128);
  char line[256];
  std::snprintf(line, sizeof line, " %-10s %-14s %11s %12s %-2s %s\n", "ID", "OWNER", "SUBMITTED",
                "RUN_TIME", "ST", history ? "COMPLETED   CMD" : "CMD");
  out += line;
  for (auto& j : jobs) {
    const auto& ad = *j.ad;
    std::string owner = ad.EvaluateString("Owner").value_or("?");
    double qdate = static_cast<double>(ad.EvaluateInt("QDate").value_or(0));
    std::string extra;
    if (history) {
      double done = static_cast<double>(ad.EvaluateInt("CompletionDate").value_or(0));
      extra = (done > 0 ? ShortDate(done) : std::string("          ")) + " ";
    }
    std::snprintf(line, sizeof line, "%*d.%-*d %-14.14s %11s %12s %-2s %s%s\n", 6, j.key.cluster, 3,
                  j.key.proc, owner.c_str(), ShortDate(qdate).c_str(),
                  Duration(RunTime(ad, now)).c_str(), StatusLetter(StatusOf(ad)), extra.c_str(),
                  NodeOrCommand(ad, dag).c_str());
    out += line;
  }
  return out;
}

}  // namespace

std::string FormatJobTable(const std::vector<ListedJob>& jobs, double now, bool history) {
  return JobTable(jobs, now, history, false);
}

std::string FormatDagTable(const std::vector<ListedJob>& jobs, double now) {
  std::map<int, std::vector<const ListedJob*>> nodes;  // by DAG cluster
  std::set<int> dags;
  for (const auto& j : jobs) {
    if (j.ad->EvaluateInt("JobUniverse").value_or(0) == kUniverseScheduler)
      dags.insert(j.key.cluster);
  }
  for (const auto& j : jobs) {
    auto dag = j.ad->EvaluateInt("DAGManJobId");
    if (dag && dags.count(static_cast<int>(*dag))) nodes[static_cast<int>(*dag)].push_back(&j);
  }
  std::vector<ListedJob> ordered;
  ordered.reserve(jobs.size());
  // A job, then (a DAG's) its nodes' jobs, a sub-DAG's in turn under it.
  auto add = [&](const ListedJob& j, auto& self) -> void {
    ordered.push_back(j);
    if (auto it = nodes.find(j.key.cluster); it != nodes.end() && j.key.proc == 0) {
      for (const ListedJob* n : it->second) self(*n, self);
    }
  };
  for (const auto& j : jobs) {
    auto dag = j.ad->EvaluateInt("DAGManJobId");
    if (dag && dags.count(static_cast<int>(*dag))) continue;  // listed under its DAG
    add(j, add);
  }
  return JobTable(ordered, now, false, true);
}

std::string FormatGridTable(const std::vector<ListedJob>& jobs) {
  std::string out;
  out.reserve(jobs.size() * 120 + 128);
  char line[512];
  std::snprintf(line, sizeof line, " %-10s %-14s %-14s %-16s %-21s %s\n", "ID", "OWNER", "STATUS",
                "GRID->MANAGER", "HOST", "GRID_JOB_ID");
  out += line;
  for (auto& j : jobs) {
    const auto& ad = *j.ad;
    auto resource = ad.EvaluateString("GridResource");
    if (!resource) continue;
    std::string owner = ad.EvaluateString("Owner").value_or("?");
    // The site's own word for the job's state where it has one (ARC's RUNNING), else Kite's.
    std::string remote = ad.EvaluateString("GridJobSiteStatus").value_or("");
    if (remote.empty()) remote = ad.EvaluateString("GridJobStatus").value_or("");
    std::string state = remote.empty() ? StatusName(StatusOf(ad)) : remote;
    for (auto& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // Its type's label ("kite->slurm") and the site ("HOST:PORT"); a resource no grid type reads,
    // by its first word and where it points; a brokered job's, once the broker chose its site.
    std::string label = "broker", rest = "(no site yet)";
    if (auto chosen = grid::JobGridResource(ad)) {
      label = chosen->substr(0, chosen->find(' '));
      rest = grid::SiteOf(*chosen);
      if (auto r = grid::ParseGridResource(*chosen)) label = grid::FindGridType(r->type)->label(*r);
    }
    std::string contact = ad.EvaluateString("GridJobId").value_or("");
    if (auto slash = contact.rfind('/'); slash != std::string::npos) contact.erase(0, slash + 1);
    std::snprintf(line, sizeof line, "%*d.%-*d %-14.14s %-14.14s %-16s %-21s %s\n", 6,
                  j.key.cluster, 3, j.key.proc, owner.c_str(), state.c_str(), label.c_str(),
                  rest.c_str(), contact.c_str());
    out += line;
  }
  return out;
}

std::string FormatBatchTable(const std::vector<ListedJob>& jobs, double /*now*/) {
  // One row per batch: the jobs of one owner sharing a JobBatchName (batch_name), whatever their
  // clusters, as condor_q groups them; a cluster without a batch name is its own batch, "ID: C".
  // A DAG's row (its job and its nodes' jobs share "file.dag+C") counts nodes as condor_q does:
  // DONE and TOTAL are the DAG's nodes, RUN, IDLE and HOLD its node jobs, JOB_IDS theirs.
  struct Row {
    std::string owner, name;
    double qdate = 0;
    int done = 0, run = 0, idle = 0, hold = 0, total = 0;
    int dag_done = 0, dag_total = 0;  // of the top DAG in the row
    JobKey first{-1, -1}, last{-1, -1};
    std::set<const Cluster*> clusters;
  };
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string>, size_t> index;  // (owner, batch) -> row
  for (auto& j : jobs) {
    std::string owner = j.ad->EvaluateString("Owner").value_or("?");
    auto named = j.ad->EvaluateString("JobBatchName");
    std::string name = named && !named->empty() ? *named : "ID: " + std::to_string(j.key.cluster);
    auto [it, fresh] = index.emplace(std::make_pair(owner, name), rows.size());
    if (fresh) {
      rows.push_back({owner, name});
      rows.back().qdate = static_cast<double>(j.ad->EvaluateInt("QDate").value_or(0));
      rows.back().first = j.key;
    }
    Row& r = rows[it->second];
    if (j.ad->EvaluateInt("JobUniverse").value_or(0) == kUniverseScheduler) {
      if (!j.ad->EvaluateInt("DAGManJobId")) {  // the top DAG (a sub-DAG's nodes are its own)
        r.dag_done = static_cast<int>(j.ad->EvaluateInt("DAG_NodesDone").value_or(0));
        r.dag_total = static_cast<int>(j.ad->EvaluateInt("DAG_NodesTotal").value_or(0));
        r.qdate = static_cast<double>(j.ad->EvaluateInt("QDate").value_or(0));
      }
      if (r.first == j.key) r.first = {-1, -1};
      continue;  // a DAG's job is not one of the batch's jobs
    }
    if (r.first.cluster < 0) r.first = j.key;
    if (j.cluster && r.clusters.insert(j.cluster).second) {
      r.total += j.cluster->total;
      r.done += j.cluster->total - j.cluster->present;
    }
    r.last = j.key;
    switch (StatusOf(*j.ad)) {
      case kSuspended:
      case kRunning:
        ++r.run;
        break;
      case kIdle:
        ++r.idle;
        break;
      case kHeld:
        ++r.hold;
        break;
      default:
        ++r.done;
        break;
    }
  }
  auto num = [](int n) { return n ? std::to_string(n) : std::string("_"); };
  auto id = [](JobKey k) { return std::to_string(k.cluster) + "." + std::to_string(k.proc); };
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-14s %-12s %11s %6s %6s %6s %6s %6s %s\n", "OWNER",
                "BATCH_NAME", "SUBMITTED", "DONE", "RUN", "IDLE", "HOLD", "TOTAL", "JOB_IDS");
  out += line;
  for (auto& r : rows) {
    if (r.dag_total > 0) {
      r.done = r.dag_done;
      r.total = r.dag_total;
    }
    std::string ids = r.first.cluster < 0 ? "" : id(r.first);
    if (r.first.cluster >= 0 && r.last != r.first)
      ids += (r.last.cluster == r.first.cluster ? "-" + std::to_string(r.last.proc)
                                                : " ... " + id(r.last));
    std::snprintf(line, sizeof line, "%-14.14s %-12.40s %11s %6s %6s %6s %6s %6d %s\n",
                  r.owner.c_str(), r.name.c_str(), ShortDate(r.qdate).c_str(), num(r.done).c_str(),
                  num(r.run).c_str(), num(r.idle).c_str(), num(r.hold).c_str(),
                  r.dag_total > 0 ? r.dag_total : std::max(r.total, r.run + r.idle + r.hold),
                  ids.c_str());
    out += line;
  }
  return out;
}

std::string FormatHoldTable(const std::vector<ListedJob>& jobs) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, " %-10s %-14s %11s %s\n", "ID", "OWNER", "HELD_SINCE",
                "HOLD_REASON");
  out += line;
  for (auto& j : jobs) {
    const auto& ad = *j.ad;
    if (StatusOf(ad) != kHeld) continue;
    std::string owner = ad.EvaluateString("Owner").value_or("?");
    double since = static_cast<double>(ad.EvaluateInt("EnteredCurrentStatus").value_or(0));
    std::string reason = ad.EvaluateString("HoldReason").value_or("");
    for (auto& c : reason) c = c == '\n' ? ' ' : c;
    std::snprintf(line, sizeof line, "%*d.%-*d %-14.14s %11s %.300s\n", 6, j.key.cluster, 3,
                  j.key.proc, owner.c_str(), ShortDate(since).c_str(), reason.c_str());
    out += line;
  }
  return out;
}

namespace {

// Where a running job runs, as HOST(S) shows it: the site of a grid job ("HOST:PORT/BATCH", its
// contact; a brokered job's chosen site), the slot of a pool job (RemoteHost, "slot2@glidein-21.0"
// for a glide-in's), this machine for a local one.
std::string RunsWhere(const classad::ClassAd& ad) {
  if (ad.Lookup("GridResource")) {
    auto resource = grid::JobGridResource(ad);
    if (!resource) return "(no site yet)";
    auto r = grid::ParseGridResource(*resource);
    return r ? r->Contact() : *resource;
  }
  if (auto host = ad.EvaluateString("RemoteHost"); host && !host->empty()) return *host;
  return "local";
}

}  // namespace

std::string FormatRunTable(const std::vector<ListedJob>& jobs, double now) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, " %-10s %-14s %11s %12s %11s %s\n", "ID", "OWNER", "SUBMITTED",
                "RUN_TIME", "STARTED", "HOST(S)");
  out += line;
  for (auto& j : jobs) {
    const auto& ad = *j.ad;
    if (!RunUnderWay(StatusOf(ad))) continue;
    std::string owner = ad.EvaluateString("Owner").value_or("?");
    double qdate = static_cast<double>(ad.EvaluateInt("QDate").value_or(0));
    double start = static_cast<double>(ad.EvaluateInt("JobCurrentStartDate").value_or(0));
    std::string where = RunsWhere(ad);
    std::snprintf(line, sizeof line, "%*d.%-*d %-14.14s %11s %12s %11s %.200s\n", 6, j.key.cluster,
                  3, j.key.proc, owner.c_str(), ShortDate(qdate).c_str(),
                  Duration(RunTime(ad, now)).c_str(), start > 0 ? ShortDate(start).c_str() : "",
                  where.c_str());
    out += line;
  }
  return out;
}

std::string FormatTotals(const std::vector<ListedJob>& jobs, bool grid_only) {
  int n[8] = {0};
  size_t total = 0;
  for (auto& j : jobs) {
    if (grid_only && !j.ad->Lookup("GridResource")) continue;
    ++total;
    int s = StatusOf(*j.ad);
    if (s >= 0 && s < 8) ++n[s];
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "Total for query: %zu jobs; %d completed, %d removed, %d idle, %d running, %d "
                "held, %d suspended\n",
                total, n[kCompleted], n[kRemoved], n[kIdle], n[kRunning], n[kHeld], n[kSuspended]);
  return line;
}

}  // namespace kite::agent
