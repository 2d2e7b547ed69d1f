// The engine: events in, Apply, tasks out.
#include "gridmanager/engine.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <set>

#include "classad/io.h"
#include "grid/codes.h"
#include "grid/grid_type.h"
#include "gridmanager/reports.h"

namespace kite::gridmanager {

using Op = SiteRequest::Op;

Engine::Engine(boost::asio::io_context& io, EngineOptions options, SiteConnector connect,
               AgentTransport& agent, JobEndpoints& endpoints)
    : io_(io),
      options_(std::move(options)),
      connect_(std::move(connect)),
      endpoints_(endpoints),
      agent_(agent, options_.proxy,
             {.take_reports = [this] { return TakeReports(); },
              .lost =
                  [this](const Error& e) {
                    Shutdown(3, "the agent refused or lost an update: " + e.message());
                  }}),
      probe_timer_(io) {}

Engine::~Engine() = default;

void Engine::Start(std::function<void(int, const std::string&)> exit) {
  exit_ = std::move(exit);
  started_ = options_.clock.steady();
  Poll();
  ProbeNow();
}

void Engine::Stop() {
  stopping_ = true;
  agent_.Stop();
  probe_timer_.cancel();
}

void Engine::Shutdown(int code, const std::string& why) {
  if (stopping_) return;
  Stop();
  spdlog::info("gridmanager: exiting: {}", why);
  if (exit_) exit_(code, why);
}

const GridState* Engine::Find(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second.state;
}

Engine::Job* Engine::FindJob(const std::string& id, uint64_t serial) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.serial != serial) return nullptr;
  return &it->second;
}

// --- the agent link ----------------------------------------------------------------------------

void Engine::Poll() {
  agent_.Poll(jobs_.empty() ? options_.linger : 20.0,
              [this](Result<grid::PollResponse> r) { OnPoll(std::move(r)); });
}

void Engine::OnPoll(Result<grid::PollResponse> reply) {
  if (stopping_) return;
  if (!reply && reply.error().code() == ErrorCode::kProtocol) {
    return Shutdown(4, "the agent sent a malformed job list: " + reply.error().message());
  }
  if (!reply) return Shutdown(3, "the agent went away: " + reply.error().message());
  for (const auto& pj : reply->jobs) OnPollJob(pj);
  if (jobs_.empty() && reply->jobs.empty() && agent_.Idle()) {
    double now = options_.clock.steady();
    if (empty_since_ == 0) empty_since_ = now;
    if (now - empty_since_ >= options_.linger) return Shutdown(0, "no grid jobs left");
  } else {
    empty_since_ = 0;
  }
  Poll();
}

void Engine::OnPollJob(const grid::PollJob& pj) {
  auto it = jobs_.find(pj.id);
  if (pj.status == grid::kStatusLeftQueue) {
    // Left the queue without our word (removed before it reached a site, rm --forcex): whatever
    // is still under way for it stops. Nothing of it runs: it was never committed, or the user
    // chose not to wait for the site.
    if (it == jobs_.end()) return;
    spdlog::info("gridmanager: job {} left the queue", pj.id);
    return Feed(it->second, GridInput{.event = GridEvent::kLeft});
  }
  if (it != jobs_.end()) {
    return Feed(it->second,
                GridInput{.event = GridEvent::kStatus, .status = pj.status, .moving = pj.moving});
  }
  Learn(pj);
}

// A job this engine does not hold yet: rebuilt from what the queue holds, through Apply.
void Engine::Learn(const grid::PollJob& pj) {
  auto admitted = Admit(pj);
  if (!admitted) {
    if (!admitted.error().message().empty()) {
      spdlog::error("gridmanager: job {}: {}", pj.id, admitted.error().message());
    }
    return;
  }
  Job& j = **admitted;
  for (const GridInput& in : RestoreInputs(grid::ReadGridAttrs(j.ad))) Feed(j, in, false);
  if (!j.state.contact.empty()) unheard_.insert(j.id);
  Drive(j);
}

// Reads and plans the job; jobs that cannot go to a site are settled here, never admitted.
Result<Engine::Job*> Engine::Admit(const grid::PollJob& pj) {
  auto ad = classad::ParseOldAd(pj.ad);
  if (!ad) {
    return Fail(ErrorCode::kInvalidInput, "unreadable ad from the agent: " + ad.error().message());
  }
  auto plan = PlanGridJob(*ad);
  if (!plan && plan.error().code() == ErrorCode::kNotFound) {
    // A brokered job the agent has not matched to a site (or unmatched to move it): not ours yet.
    return Fail(ErrorCode::kNotFound, "");
  }
  // Nothing of a job that cannot be planned, or whose site or files cannot be had, can have
  // reached a site: settle it here.
  auto refuse = [&](const std::string& reason) -> Result<Job*> {
    if (pj.status == kite::kRemoved) {
      agent_.Queue(RetireUpdate(pj.id));
    } else if ((WishOf(pj.status, pj.moving) & (kWishRun | kWishMove)) != 0) {
      spdlog::warn("gridmanager: holding job {}: {}", pj.id, reason);
      agent_.Queue(HoldUpdate(pj.id, reason, kite::kHoldGridError));
    }
    return Fail(ErrorCode::kInvalidInput, "");
  };
  if (!plan) return refuse("Cannot run this grid job: " + plan.error().message());
  std::string err;
  Site* site = SiteFor(plan->resource, &err);
  if (!site) return refuse("Cannot reach grid resource " + plan->resource.HostPort() + ": " + err);
  if (auto st = endpoints_.AddJob(pj.id, *plan); !st) {
    return refuse("Cannot serve the job's files: " + st.error().message());
  }
  Job& j = jobs_[pj.id];
  j.id = pj.id;
  j.serial = next_serial_++;
  j.ad = std::move(*ad);
  j.plan = std::move(*plan);
  auto files = std::make_shared<grid::JobFiles>();
  for (const auto& f : j.plan.readable) files->in.push_back({f.name, f.path});
  for (const auto& f : j.plan.writable) files->out.push_back({f.name, f.path});
  for (const auto& [name, path] : j.plan.results) files->results.push_back({name, path});
  j.files = std::move(files);
  j.site = site;
  j.delegation_epoch = site->delegation_epoch();
  auto attrs = grid::ReadGridAttrs(j.ad);
  j.state.status = pj.status;
  j.state.moving = pj.moving;
  j.state.commits = grid::FindGridType(j.plan.resource.type)->caps.two_phase_commit;
  j.state.attempt = attrs.attempt;
  j.state.reported = attrs.job_status;
  j.state.reported_site = attrs.job_site_status;
  return &j;
}

void Engine::Save(Job& j, grid::GridUpdate update) {
  agent_.Queue(
      std::move(update), [this, id = j.id, serial = j.serial](const grid::UpdateResult& r) {
        Job* job = FindJob(id, serial);
        if (!job) return;
        if (!r.error.empty() || r.status == grid::kStatusLeftQueue) {
          return Feed(*job, GridInput{.event = GridEvent::kLeft});
        }
        Feed(*job, GridInput{.event = GridEvent::kSaved, .status = r.status, .moving = r.moving});
      });
}

// --- jobs --------------------------------------------------------------------------------------

// The one place a job's state changes.
void Engine::Feed(Job& j, const GridInput& in, bool drive) {
  auto step = Apply(j.state, in);
  if (!step) return;
  GridState before = std::move(j.state);
  j.state = std::move(step->state);
  if (before.phase != j.state.phase) {
    spdlog::info("gridmanager: job {}: {} -> {} ({})", j.id, PhaseName(before.phase),
                 PhaseName(j.state.phase), EventName(step->event));
  }
  if (step->event == GridEvent::kRefused && step->task != GridTask::kHold) {
    // Refused for good while the job is not wanted (a cancel, a commit-end): the site will not
    // let us settle it; tried again when the site is next driven.
    spdlog::error("gridmanager: job {}: {}", j.id, in.reason);
  }
  Index(j, before);
  if (!Run(j, step->task, before, in)) return;  // forgotten
  if (drive && step->task != GridTask::kWait) Drive(j);
}

// Runs what a transition asks for. False when the job is gone.
bool Engine::Run(Job& j, GridTask task, const GridState& before, const GridInput& in) {
  const std::string resource = j.plan.resource.HostPort();
  switch (task) {
    case GridTask::kNone:
    case GridTask::kWait:
      break;
    case GridTask::kSubmit:
      Submit(j);
      break;
    case GridTask::kSignal:
      Signal(j);
      break;
    case GridTask::kCommit:
      Request(j, Op::kCommit, "/commit");
      break;
    case GridTask::kCancel:
      if (WishOf(j.state.status, j.state.moving) == kWishMove) {
        Request(j, Op::kCancel, "/move", true);  // only while it has not started there
      } else {
        Request(j, Op::kCancel, "/cancel");
      }
      break;
    case GridTask::kCommitEnd:
      Request(j, Op::kCommitEnd, "/commit-end");
      break;
    case GridTask::kProbe:
      j.last_heard = options_.clock.steady();
      Request(j, Op::kStatus, "");
      break;
    case GridTask::kSaveContact:
      Save(j, SaveContactUpdate(j.id, j.state, j.plan.resource.Text()));
      break;
    case GridTask::kSaveFinal:
      Save(j, SaveFinalUpdate(j.id, j.state));
      break;
    case GridTask::kReport:
      if (auto u = ReportUpdate(j.id, before, j.state)) agent_.Queue(std::move(*u));
      break;
    case GridTask::kReportEnd:
    case GridTask::kReportLost:
    case GridTask::kClear:
      Save(j, EndUpdate(j.id, j.state, task, resource, options_.max_resubmits));
      break;
    case GridTask::kRetire:
      Save(j, RetireUpdate(j.id));
      break;
    case GridTask::kHold:
      spdlog::warn("gridmanager: holding job {}: {}", j.id, in.reason);
      agent_.Queue(HoldUpdate(j.id, in.reason, in.hold_code));
      break;
    case GridTask::kRedelegate:
      j.site->ForgetDelegation();
      break;
    case GridTask::kForget:
      Forget(j);
      return false;
  }
  return true;
}

// Takes the job's next step when it has one and its site can take it now.
void Engine::Drive(Job& j) {
  if (stopping_) return;
  bool at_site = j.state.phase == GridPhase::kSubmitted || j.state.phase == GridPhase::kCommitted;
  if (at_site && j.delegation_epoch < j.site->delegation_epoch()) {
    return Feed(j, GridInput{.event = GridEvent::kDelegationLost});
  }
  GridTask next = NextAction(j.state);
  if (next == GridTask::kNone) return;
  if (j.site->Down()) return;  // the site's retry timer drives it again
  if (!j.site->Ready(next)) return;
  Feed(j, GridInput{.event = GridEvent::kDrive});
}

// Keeps the site-id index and the site's count of jobs with a contact in step with the state.
void Engine::Index(Job& j, const GridState& before) {
  if (before.contact == j.state.contact) return;
  if (!j.site_id.empty()) by_site_id_.erase(j.site_id);
  j.site_id = j.state.contact.empty() ? "" : grid::SiteJobId(j.site->name().type, j.state.contact);
  if (!j.site_id.empty()) by_site_id_[j.site_id] = j.id;
  if (before.contact.empty() != j.state.contact.empty()) {
    j.site->CountJob(j.state.contact.empty() ? -1 : 1);
  }
  if (j.state.contact.empty()) {
    // A finishing job may let a waiting one go to this site.
    boost::asio::post(io_, [this, site = j.site] { DriveSite(*site); });
  }
}

void Engine::Forget(Job& j) {
  if (!j.state.contact.empty()) {
    by_site_id_.erase(j.site_id);
    j.site->CountJob(-1);
  }
  unheard_.erase(j.id);
  endpoints_.RemoveJob(j.id);
  jobs_.erase(j.id);
}

// A site answered for `j`. After a restart, the moment the last job known at a site before it is
// heard of again is logged (the recovery time bench/recovery measures).
void Engine::Heard(Job& j) {
  if (unheard_.erase(j.id) == 0 || !unheard_.empty()) return;
  spdlog::info("gridmanager: every job at the sites heard from again, {:.3f} s after start",
               options_.clock.steady() - started_);
}

void Engine::OnCallback(const gram::JobStatus& status) {
  auto it = by_site_id_.find(status.job_id);
  if (it == by_site_id_.end()) return;
  auto j = jobs_.find(it->second);
  if (j == jobs_.end()) return;
  Heard(j->second);
  j->second.last_heard = options_.clock.steady();
  Feed(j->second, SiteNews(status, false));
}

void Engine::OnNews(const std::string& site_id) {
  auto it = by_site_id_.find(site_id);
  if (it == by_site_id_.end()) return;
  auto j = jobs_.find(it->second);
  if (j == jobs_.end()) return;
  if (j->second.state.phase == GridPhase::kCommitted) {
    j->second.news = false;
    Feed(j->second, GridInput{.event = GridEvent::kProbeDue});
  } else {
    j->second.news = true;
  }
}

void Engine::ProbeNow() {
  double now = options_.clock.steady();
  std::vector<std::string> due;
  for (auto& [id, j] : jobs_) {
    if (j.state.phase != GridPhase::kCommitted || j.site->Down()) continue;
    if (now - j.last_heard >= options_.probe_interval) due.push_back(id);
  }
  for (const auto& id : due) {
    if (auto it = jobs_.find(id); it != jobs_.end()) {
      Feed(it->second, GridInput{.event = GridEvent::kProbeDue});
    }
  }
  if (stopping_) return;
  double every = std::clamp(options_.probe_interval / 4, 0.25, 15.0);
  probe_timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(every * 1000)));
  probe_timer_.async_wait([this](auto ec) {
    if (!ec) ProbeNow();
  });
}

// --- sites -------------------------------------------------------------------------------------

Site* Engine::SiteFor(const GridResource& name, std::string* error) {
  std::string key = name.type + " " + name.HostPort();
  if (auto it = sites_.find(key); it != sites_.end()) return it->second.get();
  auto link = connect_(name);
  if (!link) {
    *error = link.error().message();
    return nullptr;
  }
  SiteOptions so{.max_requests = options_.max_requests_per_resource,
                 .max_jobs = options_.max_jobs_per_resource,
                 .backoff_min = options_.backoff_min,
                 .backoff_max = options_.backoff_max};
  Site::Hooks hooks{
      .drive = [this, key] { DriveSite(*sites_.at(key)); },
      .proxy_refused = [this, key](const Error& e) { ProxyRefused(*sites_.at(key), e); },
      .report_due = [this] { agent_.Flush(); }};
  auto site =
      std::make_unique<Site>(io_, name, std::move(*link), so, options_.clock, std::move(hooks));
  Site* raw = site.get();
  sites_.emplace(key, std::move(site));
  return raw;
}

void Engine::DriveSite(Site& site) {
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_) {
    if (j.site == &site) ids.push_back(id);
  }
  for (const auto& id : ids) {
    if (auto it = jobs_.find(id); it != jobs_.end()) Drive(it->second);
  }
}

void Engine::ProxyRefused(Site& site, const Error& e) {
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_) {
    if (j.site == &site) ids.push_back(id);
  }
  GridInput in{.event = GridEvent::kProxyRefused,
               .reason = "Grid resource " + site.HostPort() + " refused the proxy: " + e.message(),
               .hold_code = kite::kHoldCorruptedCredential};
  for (const auto& id : ids) {
    if (auto it = jobs_.find(id); it != jobs_.end()) Feed(it->second, in);
  }
}

int Engine::OnProxyRefreshed(int64_t gen) {
  int delegated = 0;
  for (auto& [key, site] : sites_) {
    auto link = connect_(site->name());
    site->ProxyRefreshed(link ? std::move(*link) : nullptr, gen);
    if (!site->delegation_id().empty()) ++delegated;
  }
  for (auto& [key, site] : sites_) site->Drive();
  return delegated;
}

std::vector<grid::ResourceReport> Engine::TakeReports() {
  std::vector<grid::ResourceReport> out;
  if (stopping_) return out;
  for (auto& [key, site] : sites_) {
    if (auto r = site->TakeReport()) out.push_back(std::move(*r));
  }
  return out;
}

// --- requests ----------------------------------------------------------------------------------

void Engine::Request(Job& j, Op op, const std::string& suffix, bool only_pending) {
  SiteRequest req{.op = op, .job_id = j.site_id, .only_pending = only_pending, .files = j.files};
  req.job = j.plan.desc;  // which of its files are output: for links that fetch them (ARC)
  // A status probe's is the attempt's base: links that name the job's files after it (GRAM5's)
  // need it; it is not a request the site must not repeat.
  req.request_id = RequestIdBase(j.ad, j.state.attempt) + suffix;
  j.site->Send(std::move(req), [this, id = j.id, serial = j.serial, op](Result<SiteAnswer> a) {
    OnAnswer(id, serial, op, std::move(a));
  });
}

void Engine::Submit(Job& j) {
  // Output starts afresh with each attempt: nothing of this attempt can have been written yet,
  // since a job's output flows only after its GridJobId is stored and it is committed. Output
  // files are left as they are until the site replaces them.
  std::set<std::string> results;
  for (const auto& f : j.plan.desc.stage_out) results.insert(f.gass);
  for (auto& w : j.plan.writable) {
    if (results.contains(w.name)) continue;
    if (::truncate(w.path.c_str(), 0) != 0 && errno != ENOENT) {
      spdlog::warn("gridmanager: job {}: cannot empty {}", j.id, w.path);
    }
  }
  SiteRequest req{.op = Op::kSubmit,
                  .request_id = RequestIdBase(j.ad, j.state.attempt) + "/submit",
                  .job = j.plan.desc,
                  .files = j.files};
  req.job.gass_url = endpoints_.GassUrl(j.id);
  req.job.delegation_id = j.site->delegation_id();
  req.job.callback_url = endpoints_.CallbackUrl(j.id);
  j.delegation_epoch = j.site->delegation_epoch();
  j.site->Send(std::move(req), [this, id = j.id, serial = j.serial](Result<SiteAnswer> a) {
    OnAnswer(id, serial, Op::kSubmit, std::move(a));
  });
}

// Tells the site this run's GASS and callback addresses and moves the job to the site's current
// delegation (jobs of an earlier run were submitted under one this run does not know).
void Engine::Signal(Job& j) {
  SiteRequest req{.op = Op::kSignal,
                  .request_id = RequestIdBase(j.ad, j.state.attempt) + "/signal-" +
                                std::to_string(options_.run_id),
                  .job_id = j.site_id,
                  .files = j.files};
  req.job = j.plan.desc;
  req.signal.gass_url = endpoints_.GassUrl(j.id);
  req.signal.callback_url = endpoints_.CallbackUrl(j.id);
  req.signal.delegation_id = j.site->delegation_id();
  req.signal.run = options_.run_id;
  j.delegation_epoch = j.site->delegation_epoch();
  j.site->Send(std::move(req), [this, id = j.id, serial = j.serial](Result<SiteAnswer> a) {
    OnAnswer(id, serial, Op::kSignal, std::move(a));
  });
}

// What the site said, as an event.
void Engine::OnAnswer(const std::string& id, uint64_t serial, Op op, Result<SiteAnswer> a) {
  Job* j = FindJob(id, serial);
  if (!j) return;
  GridInput in;
  if (a) {
    Heard(*j);
    j->last_heard = options_.clock.steady();
    if (op == Op::kSubmit) {
      in = GridInput{.event = GridEvent::kSubmitted, .site = a->job, .existing = a->existing};
    } else if (op == Op::kCommitEnd) {
      in = GridInput{.event = GridEvent::kForgotten};
    } else {
      in = SiteNews(a->job, true);
    }
  } else if (SiteDown(a.error())) {
    in.event = GridEvent::kSiteDown;
  } else if (a.error().code() == ErrorCode::kNotFound || a.error().code() == ErrorCode::kConflict) {
    if (op != Op::kSubmit) Heard(*j);
    in.event =
        a.error().code() == ErrorCode::kNotFound ? GridEvent::kNotFound : GridEvent::kConflict;
  } else {
    in.event = GridEvent::kRefused;
  }
  if (!a && !SiteDown(a.error())) {
    // The reason a refusal (or a not-found or conflict the table counts as one) holds it with.
    const Error& e = a.error();
    in.reason = "Grid resource " + j->site->HostPort() + " refused the " + std::string(OpName(op)) +
                ": " + e.message();
    in.hold_code = e.code() == ErrorCode::kProxyExpired || e.code() == ErrorCode::kAuthFailed
                       ? kite::kHoldCorruptedCredential
                       : kite::kHoldGridError;
  }
  Feed(*j, in);
  // News that came while this was out: asked for now (the job may be gone or changed by now).
  if (Job* again = FindJob(id, serial);
      again && again->news && again->state.phase == GridPhase::kCommitted) {
    again->news = false;
    Feed(*again, GridInput{.event = GridEvent::kProbeDue});
  }
}

}  // namespace kite::gridmanager
