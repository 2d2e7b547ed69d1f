// Glide-in flooding.
#include "agent/flood.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "agent/site_ads.h"
#include "classad/classad.h"
#include "common/files.h"
#include "common/htcondor_codes.h"
#include "submit/submit_file.h"

namespace kite::agent {
namespace {

// Whether a site's ad can host the glide-ins `r` asks for.
bool Hosts(const classad::ClassAd& site, const glidein::GlideinRequest& r) {
  if (site.EvaluateInt("TotalCpus").value_or(0) < r.cpus) return false;
  if (r.memory_mib > 0 && site.EvaluateInt("Memory").value_or(0) < r.memory_mib) return false;
  if (r.lifetime > 0 && site.EvaluateReal("MaxWallTime").value_or(0) <
                            r.lifetime + static_cast<double>(glidein::kWalltimeMarginSeconds)) {
    return false;
  }
  return true;
}

}  // namespace

Flood::Flood(boost::asio::io_context& io, JobQueue& queue, const Pool& pool, Broker& broker,
             PoolAuthority& authority, std::string state_path, Hooks hooks)
    : io_(io),
      queue_(queue),
      pool_(pool),
      broker_(broker),
      authority_(authority),
      state_path_(std::move(state_path)),
      hooks_(std::move(hooks)),
      timer_(io) {}

bool Flood::IsFloodGlidein(const Job& job) {
  return Broker::IsFlood(job);
}

void Flood::Start() {
  stopped_ = false;
  if (auto text = ReadFile(state_path_)) {
    auto f = glidein::FloodFromJson(*text);
    if (!f) {
      spdlog::error("flood: {} is unreadable, not flooding: {}", state_path_, f.error().message());
    } else if (auto st = Configure(std::move(*f)); !st) {
      spdlog::error("flood: {}", st.error().message());
    }
  }
  Arm();
}

void Flood::Stop() {
  stopped_ = true;
  timer_.cancel();
  alive_ = std::make_shared<int>(0);
}

Status Flood::Configure(glidein::FloodRequest request) {
  auto expr = classad::ParseExpr(request.constraint);
  if (!expr) {
    return Fail(ErrorCode::kInvalidInput, "--for: " + expr.error().message());
  }
  if (broker_.settings().resources.empty()) {
    return Fail(ErrorCode::kInvalidInput,
                "no sites to flood: list them as [[resource]] in config.toml (docs/config.md)");
  }
  if (auto st = WriteFileAtomic(state_path_, glidein::FloodToJson(request), 0600); !st) {
    return Fail(st.error());
  }
  if (request_ && request_->setting.proxy != request.setting.proxy) {
    broker_.Unwatch(request_->setting.proxy);
  }
  constraint_ = *expr;
  broker_.Watch(request.setting.proxy);
  spdlog::info("flood: glide-ins of {} CPUs for idle jobs where {}, at most {}",
               request.request.cpus, request.constraint, request.max);
  request_ = std::move(request);
  return {};
}

Status Flood::Clear() {
  if (!request_) return {};
  std::vector<Job*> pending;
  for (auto& [key, j] : queue_.jobs()) {
    if (IsFloodGlidein(j) && j.status == kIdle) pending.push_back(&j);
  }
  if (!pending.empty() && hooks_.remove) hooks_.remove(pending, "glide-in flooding stopped");
  broker_.Unwatch(request_->setting.proxy);
  request_.reset();
  constraint_.reset();
  ::unlink(state_path_.c_str());
  last_.clear();
  spdlog::info("flood: stopped; {} pending glide-in(s) cancelled", pending.size());
  return {};
}

void Flood::Arm() {
  if (stopped_) return;
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(kInterval * 1000)));
  timer_.async_wait(
      [this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        Tick();
        Arm();
      });
}

Result<int> Flood::SubmitTo(const std::string& resource, int count) {
  glidein::GlideinRequest r = request_->request;
  r.resource = resource;
  r.count = count;
  auto cluster = queue_.NewCluster();
  if (!cluster) return Fail(cluster.error());
  auto text = glidein::GlideinSubmitText(r, request_->setting, *cluster);
  Status issued = text ? IssueGlideinCredentials(authority_, *cluster, count, r.cpus, r.lifetime,
                                                 request_->setting.output_dir)
                       : Status(Fail(text.error()));
  if (!issued) {
    (void)queue_.ReturnCluster(*cluster);
    return Fail(issued.error());
  }
  *text = "+KiteFlood = true\n" + *text;
  submit::SubmitOptions options;
  options.cluster_id = *cluster;
  options.cwd = request_->setting.output_dir;
  auto parsed = submit::ParseSubmitText(*text, "<kite glidein flood>", options);
  if (!parsed) {
    (void)queue_.ReturnCluster(*cluster);
    return Fail(parsed.error());
  }
  SubmitRequest req;
  req.cluster = *cluster;
  for (auto& a : parsed->common) req.common.push_back({a.name, a.expr});
  for (auto& p : parsed->procs) {
    std::vector<SubmitAttr> attrs;
    for (auto& a : p) attrs.push_back({a.name, a.expr});
    req.procs.push_back(std::move(attrs));
  }
  auto n = queue_.Submit(req, false);
  if (!n) return Fail(n.error());
  return *cluster;
}

void Flood::Tick() {
  if (!request_) return;
  const glidein::FloodRequest& f = *request_;
  const int cpus = std::max(1, f.request.cpus);
  // Demand: idle jobs the flood is for, less the pool's free slots.
  int idle = 0;
  for (auto& [key, j] : queue_.jobs()) {
    if (j.universe == kUniverseVanilla && j.status == kIdle &&
        classad::EvaluateExpr(*constraint_, &j.ad).IsTrue()) {
      ++idle;
    }
  }
  int free_slots = 0;
  std::set<std::string> startds;
  for (const auto& slot : pool_.Slots()) {
    if (!slot.job) ++free_slots;
    if (auto name = slot.ad->EvaluateString("StartdName")) startds.insert(*name);
  }
  int demand = std::max(0, idle - free_slots);
  // The flood's glide-ins: pending at a site, or started there without their slots yet.
  struct PerSite {
    std::vector<Job*> pending;
    int arriving = 0, running = 0;
  };
  std::map<std::string, PerSite> sites;
  int pending = 0, arriving = 0, live = 0;
  for (auto& [key, j] : queue_.jobs()) {
    if (!IsFloodGlidein(j) || (j.status != kIdle && j.status != kRunning)) continue;
    ++live;
    PerSite& s = sites[j.ad.EvaluateString("GridResource").value_or("")];
    if (j.status == kIdle) {
      s.pending.push_back(&j);
      ++pending;
    } else if (startds.count(glidein::GlideinStartdName(key.cluster, key.proc))) {
      ++s.running;
    } else {
      ++s.arriving;
      ++arriving;
    }
  }
  int coming = cpus * (pending + arriving);
  auto offers = broker_.UsableSites(f.setting.proxy);
  std::erase_if(offers, [&](const Broker::Offer& o) { return !Hosts(o.ad, f.request); });
  char line[256];
  std::snprintf(line, sizeof line,
                "%d idle job(s), %d free slot(s); glide-ins: %d pending, %d starting, %d with "
                "slots (max %d); %zu site(s) can host them",
                idle, free_slots, pending, arriving, live - pending - arriving, f.max,
                offers.size());
  last_ = line;
  if (demand > coming) {
    int want = (demand - coming + cpus - 1) / cpus;
    want = std::min(want, f.max - live);
    if (want <= 0 || offers.empty()) return;
    // Every site that can host them gets one waiting there; the rest go where a start is
    // expected soonest, each one more making that site's queue longer.
    std::map<std::string, int> add;
    for (const auto& o : offers) {
      if (want == 0) break;
      if (sites[o.resource].pending.empty()) {
        ++add[o.resource];
        --want;
      }
    }
    while (want > 0) {
      const Broker::Offer* best = nullptr;
      double best_wait = 0;
      for (const auto& o : offers) {
        SiteState s = o.state;
        s.kite_pending += add[o.resource];
        double w = EstimateWait(o.ad, s);
        if (!best || w < best_wait) {
          best = &o;
          best_wait = w;
        }
      }
      ++add[best->resource];
      --want;
    }
    for (const auto& [resource, n] : add) {
      if (n == 0) continue;
      auto cluster = SubmitTo(resource, n);
      if (!cluster) {
        spdlog::error("flood: cannot submit glide-ins to {}: {}", resource,
                      cluster.error().message());
        continue;
      }
      spdlog::info("flood: {} glide-in(s) to {} (cluster {}) for {} idle job(s)", n, resource,
                   *cluster, idle);
    }
    if (hooks_.commit) hooks_.commit();
    return;
  }
  // Enough are running or on their way: the pending ones the idle jobs do not need are cancelled,
  // those at the sites slowest to start them first.
  int surplus = std::min(pending, (coming - demand) / cpus);
  if (surplus <= 0) return;
  std::vector<std::pair<double, Job*>> order;
  for (const auto& o : offers) {
    double w = EstimateWait(o.ad, o.state);
    for (Job* j : sites[o.resource].pending) order.push_back({w, j});
  }
  for (auto& [resource, s] : sites) {  // at sites no longer usable: first of all
    bool usable = std::any_of(offers.begin(), offers.end(),
                              [&](const Broker::Offer& o) { return o.resource == resource; });
    if (!usable) {
      for (Job* j : s.pending) order.push_back({1e18, j});
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Job*> cancel;
  for (int i = 0; i < surplus && i < static_cast<int>(order.size()); ++i) {
    cancel.push_back(order[i].second);
  }
  spdlog::info(
      "flood: cancelling {} pending glide-in(s): {} idle job(s) are covered by the "
      "glide-ins started or starting",
      cancel.size(), idle);
  if (hooks_.remove) {
    hooks_.remove(cancel, "glide-in flooding: enough glide-ins have started for the idle jobs");
  }
  if (hooks_.commit) hooks_.commit();
}

std::string Flood::Describe() const {
  if (!request_) return "not flooding\n";
  return "flooding for idle jobs where " + request_->constraint + " (at most " +
         std::to_string(request_->max) + " glide-ins of " + std::to_string(request_->request.cpus) +
         " CPU(s)): " + (last_.empty() ? "starting" : last_) + "\n";
}

}  // namespace kite::agent
