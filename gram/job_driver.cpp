// JobManager: the periodic drive. Each pass runs the action of every job's state, in phases, and
// stores the transitions of a phase in one transaction before the next phase acts on them
// ("store, then act"); callbacks go out after the store.
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "common/clock.h"
#include "common/files.h"
#include "gram/callback_sender.h"
#include "gram/job_manager.h"
#include "gram/stager.h"

namespace kite::gram {
namespace {

// The environment every job starts from (the job's own variables are added on top).
std::vector<std::string> BaseEnvironment() {
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  if (const passwd* pw = ::getpwuid(::geteuid())) {
    env.push_back(std::string("HOME=") + pw->pw_dir);
    env.push_back(std::string("USER=") + pw->pw_name);
    env.push_back(std::string("LOGNAME=") + pw->pw_name);
  }
  return env;
}

}  // namespace

void JobManager::ScheduleDrive(std::chrono::milliseconds after) {
  if (stopped_) return;
  if (after.count() == 0) {
    if (drive_posted_) return;  // one immediate pass serves every request that asked for it
    drive_posted_ = true;
    // The posted pass may run after this JobManager is gone (a test reopens one on the same
    // io_context); the token says whether `this` is still alive. Runs on the io thread, as does
    // the destructor.
    boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_)] {
      if (alive.expired()) return;
      drive_posted_ = false;
      if (!stopped_) Drive();
    });
    return;
  }
  auto when = std::chrono::steady_clock::now() + after;
  if (timer_armed_ && timer_.expiry() <= when) return;
  timer_armed_ = true;
  timer_.expires_at(when);  // a wait already pending completes with operation_aborted
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    timer_armed_ = false;
    if (!stopped_) Drive();
  });
}

bool JobManager::Apply(JobRecord& j, JobEvent e, FailureCode failure, std::string message) {
  auto t = NextState(j.state, e);
  if (!t || t->forget || t->to == j.state) return false;
  j.state = t->to;
  ++j.seq;
  if (e == JobEvent::kFailed) {
    j.failure = failure;
    j.failure_message = std::move(message);
  }
  changed_.insert(j.id);
  notify_.insert(j.id);
  return true;
}

Status JobManager::Flush() {
  CommitBatch();
  if (changed_.empty() && notify_.empty()) return {};
  {
    store::Transaction txn(store_->db());
    if (!txn.begun()) return Fail(txn.begun().error());
    for (const auto& id : changed_) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;
      if (auto st = store_->PutJob(it->second); !st) return st;
    }
    if (auto st = txn.Commit(); !st) return st;
  }
  changed_.clear();
  for (const auto& id : notify_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    const JobRecord& j = it->second;
    if (!j.desc.callback_url.empty() && !j.delegation_id.empty()) {
      callbacks_->Send(
          {j.desc.callback_url, DelegationPath(j.delegation_id), j.owner, ToJson(StatusOf(j))});
    }
  }
  notify_.clear();
  return {};
}

void JobManager::Forget(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    jobs_.erase(id);
    changed_.erase(id);
    notify_.erase(id);
    next_stream_.erase(id);
    delivery_.erase(id);
    // Removing a directory costs milliseconds on a busy disk: not on the event loop.
    stager_->Run([dir = JobDir(id)] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
  }
}

void JobManager::Drive() {
  CommitBatch();  // act only on what is stored
  double now = WallNow();
  if (now - last_prune_ > 3600) {  // replies of forgotten jobs are kept for a day
    last_prune_ = now;
    if (auto st = store_->PruneRequests(now - 86400); !st) {
      spdlog::warn("pruning stored replies: {}", st.error().ToString());
    }
  }
  // Several passes let a job move through quick states (stage-in -> pending -> active) at once.
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<std::string> forget;
    DriveWaiting(now, &forget);
    if (!forget.empty()) {
      store::Transaction txn(store_->db());
      Status st = txn.begun();
      for (const auto& id : forget)
        if (st) st = store_->DeleteJob(id);
      if (st) st = txn.Commit();
      if (st) {
        Forget(forget);
      } else {
        spdlog::error("forgetting uncommitted jobs: {}", st.error().ToString());
      }
    }
    if (auto st = Flush(); !st) spdlog::error("storing job states: {}", st.error().ToString());
    for (auto& [id, j] : jobs_) {
      if (j.state == JobState::kPending && j.batch_id.empty()) SubmitToBatch(j);
    }
    CancelInBatch();
    PollBatch();
    bool more = !changed_.empty();
    if (auto st = Flush(); !st) spdlog::error("storing job states: {}", st.error().ToString());
    if (!more) break;
  }
  bool live = false;
  for (const auto& [id, j] : jobs_) live = live || !IsTerminal(j.state);
  ScheduleDrive(live ? options_.poll_interval : std::chrono::milliseconds(1000));
}

// The actions that need no batch system: commit timeouts, staging, output.
void JobManager::DriveWaiting(double now, std::vector<std::string>* forget) {
  auto steady = std::chrono::steady_clock::now();
  for (auto& [id, j] : jobs_) {
    if (busy_.contains(id)) continue;
    switch (j.state) {
      case JobState::kPendingCommit:
        if (now >= j.commit_deadline) {
          spdlog::info("job {}: not committed in time, forgotten", id);
          forget->push_back(id);
        }
        break;
      case JobState::kStageIn:
        if (auto st = PrepareJobDir(j); !st) {
          Apply(j, JobEvent::kFailed, FailureCode::kBadRequest, st.error().message());
        } else if (!NeedsStageIn(j)) {
          Apply(j, JobEvent::kStagedIn);
        } else {
          StartStageIn(j);
        }
        break;
      case JobState::kActive:
        if (Streams(j) && steady >= next_stream_[id]) {
          next_stream_[id] = steady + options_.stream_interval;
          StartOutput(j, false);
        }
        break;
      case JobState::kStageOut:
        if (!NeedsStageOut(j)) {
          Apply(j, JobEvent::kStagedOut);
        } else {
          StartOutput(j, true);
        }
        break;
      default:
        break;
    }
  }
}

Status JobManager::PrepareJobDir(const JobRecord& j) const {
  if (auto st = MakeDirs(ControlDir(j.id), 0700); !st) return st;
  std::string url_file = ControlDir(j.id) + "/gass_url";
  if (!j.gass_url.empty() && !FileExists(url_file)) {
    return WriteFileAtomic(url_file, j.gass_url + "\n", 0644);
  }
  return {};
}

batch::JobSpec JobManager::SpecFor(const JobRecord& j) const {
  batch::JobSpec s;
  s.name = j.id;
  s.resources = j.desc.resources;
  s.control_dir = ControlDir(j.id);
  s.cwd = JobDir(j.id);
  s.program =
      j.desc.executable.site.empty() ? s.control_dir + "/executable" : j.desc.executable.site;
  s.args = j.desc.arguments;
  s.env = BaseEnvironment();
  s.env.push_back("KITE_JOB_ID=" + j.id);
  s.env.push_back("KITE_GASS_URL_FILE=" + s.control_dir + "/gass_url");
  // The proxy delegated for the job, as GRAM gives it (a glide-in dials its agent with it), and
  // the site's trusted CAs (which verify the user's chain, so the agent's too). The proxy file is
  // refreshed in place when the delegation is, so a running job sees the renewed proxy. The
  // job's own X509_USER_PROXY or X509_CERT_DIR, if it sets them, replace these below.
  if (!j.delegation_id.empty())
    s.env.push_back("X509_USER_PROXY=" + DelegationPath(j.delegation_id));
  if (!options_.ca_dir.empty()) s.env.push_back("X509_CERT_DIR=" + options_.ca_dir);
  for (const auto& [k, v] : j.desc.environment) {
    std::string prefix = k + "=";
    std::erase_if(s.env, [&](const std::string& x) { return x.starts_with(prefix); });
    s.env.push_back(prefix + v);
  }
  const auto& d = j.desc;
  s.stdin_path = !d.stdin_file.site.empty()   ? d.stdin_file.site
                 : !d.stdin_file.gass.empty() ? s.control_dir + "/stdin"
                                              : "/dev/null";
  s.stdout_path = d.stdout_file.site.empty() ? s.control_dir + "/stdout" : d.stdout_file.site;
  s.stderr_path = d.stderr_file.site.empty() ? s.control_dir + "/stderr" : d.stderr_file.site;
  return s;
}

void JobManager::SubmitToBatch(JobRecord& j) {
  if (auto st = PrepareJobDir(j); !st) {
    Apply(j, JobEvent::kFailed, FailureCode::kBadRequest, st.error().message());
    return;
  }
  auto id = adapter_->Submit(SpecFor(j));
  if (!id && id.error().code() == ErrorCode::kUnavailable) {
    // Nothing decided (the batch system could not be asked): the next pass tries again.
    spdlog::debug("job {}: batch system unavailable, submitting later: {}", j.id,
                  id.error().message());
    return;
  }
  if (!id) {
    bool never = id.error().code() == ErrorCode::kInvalidInput;  // e.g. no such partition
    Apply(j, JobEvent::kFailed, never ? FailureCode::kBadRequest : FailureCode::kBatchSubmitFailed,
          id.error().message());
    return;
  }
  j.batch_id = *id;
  changed_.insert(j.id);
}

void JobManager::CancelInBatch() {
  for (auto& [id, j] : jobs_) {
    if (j.cancel_requested && !j.batch_id.empty()) (void)adapter_->Cancel(j.batch_id);
  }
}

void JobManager::PollBatch() {
  std::vector<std::string> ids;
  std::map<std::string, std::string> job_of;
  for (auto& [id, j] : jobs_) {
    bool watch = (j.state == JobState::kPending || j.state == JobState::kActive) ||
                 (j.cancel_requested && !j.batch_id.empty());
    if (watch && !j.batch_id.empty()) {
      ids.push_back(j.batch_id);
      job_of[j.batch_id] = id;
    }
  }
  if (ids.empty()) return;
  for (const auto& [bid, out] : adapter_->Poll(ids)) {
    auto it = jobs_.find(job_of[bid]);
    if (it == jobs_.end()) continue;
    JobRecord& j = it->second;
    if (j.cancel_requested) {  // a cancelled job: wait for its end, then stop signalling it
      if (out.state == batch::BatchState::kEnded || out.state == batch::BatchState::kLost) {
        j.cancel_requested = false;
        changed_.insert(j.id);
      }
      continue;
    }
    if (out.state == batch::BatchState::kRunning) {
      Apply(j, JobEvent::kStarted);
    } else if (out.state == batch::BatchState::kLost) {
      Apply(j, JobEvent::kFailed, FailureCode::kBatchLost,
            out.reason.empty() ? "the job's wrapper vanished without recording how the job ended"
                               : out.reason);
    } else if (out.state == batch::BatchState::kEnded && out.limit_exceeded) {
      const auto& x = out.exit;
      bool died =
          x && (x->kind == ExecStatus::Kind::kExited || x->kind == ExecStatus::Kind::kSignaled);
      if (died) j.exit = ExitInfo{x->kind == ExecStatus::Kind::kSignaled, x->code};
      Apply(j, JobEvent::kFailed, FailureCode::kBatchLimitExceeded, out.reason);
    } else if (out.state == batch::BatchState::kEnded && out.exit) {
      const ExecStatus& x = *out.exit;
      if (x.kind == ExecStatus::Kind::kExecFailed || x.kind == ExecStatus::Kind::kSetupFailed) {
        Apply(j, JobEvent::kFailed, FailureCode::kBadExecutable, x.message);
      } else {
        j.exit = ExitInfo{x.kind == ExecStatus::Kind::kSignaled, x.code};
        Apply(j, JobEvent::kEnded);
        // Nothing to send back: done in the same store (one write instead of two).
        if (!NeedsStageOut(j)) Apply(j, JobEvent::kStagedOut);
      }
    }
  }
}

}  // namespace kite::gram
