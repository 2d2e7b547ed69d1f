// Fakes for driving the gridmanager's engine in-process: a site that answers as a Kite
// gatekeeper does (request ids stored with their answers, two-phase commit, commit-end), an
// agent with a queue of grid jobs, and GASS/callback endpoints. Answers are posted to the
// engine's io_context, or held until the test releases them.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "classad/io.h"
#include "grid/codes.h"
#include "gridmanager/agent_link.h"
#include "gridmanager/engine.h"
#include "gridmanager/site.h"

namespace kite::gridmanager::testing {

namespace asio = boost::asio;
using Op = SiteRequest::Op;

class FakeSite {
 public:
  struct Job {
    gram::JobStatus status;
    bool committed = false;
    std::string gass_url;  // as the submit, then each signal, set it
  };

  // Every request the gridmanager sent, in order.
  std::vector<SiteRequest> requests;
  bool down = false;                  // every request: kUnavailable
  std::map<Op, Error> refuse;         // this op: refused with this error
  std::map<Op, ErrorCode> fail_once;  // this op: this error once
  std::set<Op> hold;                  // requests of these ops wait for Release()
  std::map<std::string, Job> jobs;    // by site job id
  int delegations = 0;

  void SetIo(asio::io_context* io) { io_ = io; }

  void Send(const SiteRequest& r, SiteDone done) {
    requests.push_back(r);
    if (hold.count(r.op)) {
      held_.push_back({r, std::move(done)});
      return;
    }
    auto answer = Handle(r);
    asio::post(*io_, [answer, done = std::move(done)] { done(answer); });
  }
  // Answers every held request (in order).
  void Release() {
    auto held = std::move(held_);
    held_.clear();
    for (auto& [r, done] : held) {
      auto answer = Handle(r);
      asio::post(*io_, [answer, done = std::move(done)] { done(answer); });
    }
  }
  // A crash of the gridmanager: held requests reached the site, their answers are lost.
  void LoseAnswers() {
    for (auto& [r, done] : held_) (void)Handle(r);
    held_.clear();
  }
  // A crash of the gridmanager before held requests reached the site.
  void Drop() { held_.clear(); }
  size_t held() const { return held_.size(); }

  // The job ends at the site (seq grows); returns what its callback says.
  gram::JobStatus End(const std::string& id, gram::JobState state,
                      gram::FailureCode failure = gram::FailureCode::kNone) {
    Job& j = jobs.at(id);
    j.status.state = state;
    j.status.failure = failure;
    j.status.failure_message = failure == gram::FailureCode::kNone ? "" : "it broke";
    if (state == gram::JobState::kDone) j.status.exit = gram::ExitInfo{false, 0};
    ++j.status.seq;
    return j.status;
  }
  // Ops (and request ids) of the requests sent, delegations left out.
  std::vector<std::string> Sent(bool with_ids = false) const {
    std::vector<std::string> out;
    for (const auto& r : requests) {
      if (r.op == Op::kDelegate) continue;
      out.push_back(std::string(OpName(r.op)) + (with_ids ? " " + r.request_id : ""));
    }
    return out;
  }

 private:
  Result<SiteAnswer> Handle(const SiteRequest& r) {
    if (down) return Fail(ErrorCode::kUnavailable, "connection refused");
    if (auto it = refuse.find(r.op); it != refuse.end()) return Fail(it->second);
    if (auto it = fail_once.find(r.op); it != fail_once.end()) {
      auto code = it->second;
      fail_once.erase(it);
      return Fail(code, "once");
    }
    if (!r.request_id.empty() && r.op != Op::kDelegate) {
      if (auto it = answers_.find(r.request_id); it != answers_.end()) {
        auto again = it->second;
        if (again && r.op == Op::kSubmit) again->existing = true;  // 200, not 201
        return again;
      }
    }
    auto a = Do(r);
    if (!r.request_id.empty()) answers_.emplace(r.request_id, a);
    return a;
  }
  Result<SiteAnswer> Do(const SiteRequest& r) {
    if (r.op == Op::kDelegate) {
      ++delegations;
      std::string id =
          r.delegation_id.empty() ? "deleg-" + std::to_string(delegations) : r.delegation_id;
      return SiteAnswer{.delegation = {id, 4e9}};
    }
    if (r.op == Op::kSubmit) {
      char id[17];
      std::snprintf(id, sizeof id, "%016x", static_cast<unsigned>(++submitted_));
      Job& j = jobs[id];
      j.status.job_id = id;
      j.status.contact = std::string("https://site.example:2119/jobs/") + id;
      j.status.state = gram::JobState::kPendingCommit;
      j.status.seq = 1;
      j.gass_url = r.job.gass_url;
      return SiteAnswer{.job = j.status};
    }
    auto it = jobs.find(r.job_id);
    if (it == jobs.end()) return Fail(ErrorCode::kNotFound, "no job " + r.job_id);
    Job& j = it->second;
    switch (r.op) {
      case Op::kCommit:
        if (!j.committed) {
          j.committed = true;
          j.status.state = gram::JobState::kActive;
          ++j.status.seq;
        }
        break;
      case Op::kCancel:
        if (!gram::IsTerminal(j.status.state)) {
          j.status.state = gram::JobState::kFailed;
          j.status.failure = gram::FailureCode::kCancelled;
          ++j.status.seq;
        }
        break;
      case Op::kSignal:  // as at a Kite gatekeeper: the new addresses, and a commit
        if (gram::IsTerminal(j.status.state)) return Fail(ErrorCode::kConflict, "finished");
        if (!r.signal.gass_url.empty()) j.gass_url = r.signal.gass_url;
        if (!j.committed) {
          j.committed = true;
          j.status.state = gram::JobState::kActive;
          ++j.status.seq;
        }
        break;
      case Op::kCommitEnd:
        jobs.erase(it);
        return SiteAnswer{};
      default:
        break;
    }
    return SiteAnswer{.job = j.status};
  }

  asio::io_context* io_ = nullptr;
  std::vector<std::pair<SiteRequest, SiteDone>> held_;
  std::map<std::string, Result<SiteAnswer>> answers_;  // by request id
  int submitted_ = 0;
};

class FakeSiteLink : public SiteLink {
 public:
  explicit FakeSiteLink(FakeSite& site) : site_(site) {}
  void Send(const SiteRequest& r, SiteDone done) override { site_.Send(r, std::move(done)); }

 private:
  FakeSite& site_;
};

// The agent's queue of grid jobs, as grid/jobs and grid/update see it.
class FakeAgent : public AgentTransport {
 public:
  struct Job {
    int status = kite::kIdle;
    classad::ClassAd ad;
  };
  std::map<std::string, Job> jobs;          // in the queue
  std::vector<grid::GridUpdate> committed;  // every update applied, in order
  bool hold_updates = false;                // batches wait for Commit()

  void SetIo(asio::io_context* io) { io_ = io; }

  void Add(const std::string& id, int status = kite::kIdle,
           const std::string& resource = "kite site.example:2119/fork") {
    auto ad = classad::ParseOldAd(
        "GridResource = \"" + resource +
        "\"\nCmd = \"/bin/true\"\n"
        "TransferExecutable = false\nIwd = \"/tmp\"\nx509userproxy = \"/tmp/x509up\"\n"
        "QDate = 1700000000\nClusterId = " +
        id.substr(0, id.find('.')) + "\nProcId = " + id.substr(id.find('.') + 1) + "\n");
    jobs[id] = Job{status, std::move(*ad)};
    Announce(id);
  }
  // kite rm: a job with nothing stored at a site leaves at once (and is listed as gone).
  void Remove(const std::string& id) {
    Job& j = jobs.at(id);
    if (j.ad.EvaluateString("GridJobId")) {
      j.status = kite::kRemoved;
    } else {
      jobs.erase(id);
    }
    Announce(id);
  }
  void SetStatus(const std::string& id, int status) {
    jobs.at(id).status = status;
    Announce(id);
  }
  // Commits the held batches (in order) and answers them.
  void Commit() {
    auto held = std::move(held_);
    held_.clear();
    for (auto& [req, done] : held) Answer(req, std::move(done));
  }
  // A crash: what was not committed is lost, and no poll is answered.
  void Crash() {
    held_.clear();
    poll_.reset();
  }
  size_t held() const { return held_.size(); }
  std::vector<grid::GridUpdate> UpdatesFor(const std::string& id) const {
    std::vector<grid::GridUpdate> out;
    for (const auto& u : committed) {
      if (u.id == id) out.push_back(u);
    }
    return out;
  }

  void Poll(const grid::PollRequest& req,
            std::function<void(Result<grid::PollResponse>)> done) override {
    poll_ = std::move(done);
    bool fresh = req.epoch != kEpoch;  // a new gridmanager: every job, at once
    if (fresh) {
      for (auto& [id, j] : jobs) changed_.insert(id);
    }
    if (fresh || !changed_.empty()) AnswerPoll();
  }
  void Update(const grid::UpdateRequest& req,
              std::function<void(Result<grid::UpdateResponse>)> done) override {
    if (hold_updates) {
      held_.push_back({req, std::move(done)});
      return;
    }
    Answer(req, std::move(done));
  }

 private:
  static constexpr const char* kEpoch = "fake-epoch";

  void Announce(const std::string& id) {
    changed_.insert(id);
    if (poll_) AnswerPoll();
  }
  void AnswerPoll() {
    grid::PollResponse res{.epoch = kEpoch, .generation = ++generation_};
    for (const auto& id : changed_) {
      auto it = jobs.find(id);
      if (it == jobs.end()) {
        res.jobs.push_back({id, grid::kStatusLeftQueue, ""});
      } else {
        res.jobs.push_back({id, it->second.status, classad::ToOldText(it->second.ad)});
      }
    }
    changed_.clear();
    auto done = std::move(*poll_);
    poll_.reset();
    asio::post(*io_, [res, done = std::move(done)] { done(res); });
  }
  int Apply(const grid::GridUpdate& u) {
    Job& j = jobs.at(u.id);
    for (const auto& c : u.set) {
      j.ad.Insert(grid::GridAttrName(c.attr), grid::AttrValueExpr(c.value));
    }
    bool live = j.status == kite::kIdle || j.status == kite::kRunning;
    switch (u.action) {
      case grid::GridAction::kRunning:
        if (j.status == kite::kIdle) j.status = kite::kRunning;
        break;
      case grid::GridAction::kExited:
        if (live) j.status = kite::kCompleted;
        break;
      case grid::GridAction::kIdle:
        if (j.status == kite::kRunning) j.status = kite::kIdle;
        break;
      case grid::GridAction::kHold:
        if (live) j.status = kite::kHeld;
        break;
      case grid::GridAction::kRetire:
        if (j.status == kite::kRemoved) j.status = kite::kCompleted;
        break;
      case grid::GridAction::kNone:
        break;
    }
    if (j.status == kite::kCompleted) {  // leaves the queue
      jobs.erase(u.id);
      return grid::kStatusLeftQueue;
    }
    return j.status;
  }
  void Answer(const grid::UpdateRequest& req,
              std::function<void(Result<grid::UpdateResponse>)> done) {
    grid::UpdateResponse res;
    for (const auto& u : req.updates) {
      grid::UpdateResult r{.id = u.id};
      if (!jobs.count(u.id)) {
        r.error = "no grid job " + u.id + " in the queue";
      } else {
        committed.push_back(u);
        r.status = Apply(u);
      }
      res.results.push_back(std::move(r));
    }
    asio::post(*io_, [res, done = std::move(done)] { done(res); });
  }

  asio::io_context* io_ = nullptr;
  std::optional<std::function<void(Result<grid::PollResponse>)>> poll_;
  std::set<std::string> changed_;
  uint64_t generation_ = 0;
  std::vector<std::pair<grid::UpdateRequest, std::function<void(Result<grid::UpdateResponse>)>>>
      held_;
};

class FakeEndpoints : public JobEndpoints {
 public:
  int run = 1;  // each run of the gridmanager serves GASS and callbacks on addresses of its own
  std::string GassUrl(const std::string& job) override {
    return "https://gm:" + std::to_string(run) + "1/jobs/" + job;
  }
  std::string CallbackUrl(const std::string& job) override {
    return "https://gm:" + std::to_string(run) + "2/callbacks/" + job;
  }
  Status AddJob(const std::string&, const GridJobPlan&) override { return {}; }
  void RemoveJob(const std::string&) override {}
};

}  // namespace kite::gridmanager::testing
