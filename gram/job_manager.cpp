// JobManager: the protocol's requests. Each mutation is checked, stored with its request id in
// one transaction, and only then installed in memory and answered (docs/architecture.md: "Write
// ahead, then act", "Idempotent by request id", "Bad input changes nothing").
#include "gram/job_manager.h"
#include "gram/site_info.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>

#include "common/clock.h"
#include "common/files.h"
#include "common/strings.h"
#include "gram/callback_sender.h"
#include "gram/fault.h"
#include "gram/stager.h"

namespace kite::gram {
namespace {

Response ErrorResponse(ErrorCode code, std::string message) {
  return {HttpStatusFor(code), ToJson(ErrorReply{code, std::move(message)})};
}
Response ErrorResponse(const Error& e) {
  return ErrorResponse(e.code(), e.message());
}

std::string NewId() {
  return RandomHex(16);
}

}  // namespace

JobManager::JobManager(boost::asio::io_context& io, JobManagerOptions options)
    : io_(io), options_(std::move(options)), timer_(io) {}

JobManager::~JobManager() {
  Stop();
}

Result<std::unique_ptr<JobManager>> JobManager::Open(boost::asio::io_context& io,
                                                     JobManagerOptions options) {
  std::unique_ptr<JobManager> m(new JobManager(io, std::move(options)));
  const auto& o = m->options_;
  for (const char* sub : {"", "/jobs", "/creds"}) {
    if (auto st = MakeDirs(o.state_dir + sub, 0700); !st) return Fail(st.error());
  }
  auto store = JobStore::Open(o.state_dir + "/jobs.db");
  if (!store) return Fail(store.error());
  m->store_ = std::move(*store);
  auto adapter = batch::MakeAdapter(o.batch, {.exec_path = o.exec_path,
                                              .poll_interval = o.batch_poll_interval,
                                              .environment = o.environment,
                                              .fork_limits_file = o.fork_limits});
  if (!adapter) return Fail(adapter.error());
  m->adapter_ = std::move(*adapter);
  auto verifier = credentials::Verifier::Create({.ca_dir = o.ca_dir});
  if (!verifier) return Fail(verifier.error());
  m->verifier_ = *verifier;
  auto jobs = m->store_->LoadJobs();
  if (!jobs) return Fail(jobs.error());
  for (auto& j : *jobs) m->jobs_.emplace(j.id, std::move(j));
  auto dels = m->store_->LoadDelegations();
  if (!dels) return Fail(dels.error());
  for (auto& d : *dels) m->delegations_.emplace(d.id, d);
  m->callbacks_ = std::make_unique<CallbackSender>(m->verifier_);
  m->stager_ = std::make_unique<Stager>(m->verifier_);
  spdlog::info("job manager for {}: {} jobs and {} delegations recovered", o.account,
               m->jobs_.size(), m->delegations_.size());
  return m;
}

void JobManager::Start() {
  ScheduleDrive(std::chrono::milliseconds(0));
}

void JobManager::Stop() {
  if (store_) CommitBatch();
  stopped_ = true;
  timer_.cancel();
  if (stager_) stager_->Stop();
  if (callbacks_) callbacks_->Stop();
}

std::string JobManager::JobDir(const std::string& id) const {
  return options_.state_dir + "/jobs/" + id;
}
std::string JobManager::ControlDir(const std::string& id) const {
  return JobDir(id) + "/.kite";
}
std::string JobManager::DelegationPath(const std::string& id) const {
  return options_.state_dir + "/creds/" + id + ".pem";
}

JobStatus JobManager::StatusOf(const JobRecord& j) const {
  JobStatus s;
  s.job_id = j.id;
  s.contact = contact_base_ + "/jobs/" + j.id;
  s.state = j.state;
  s.seq = j.seq;
  s.failure = j.failure;
  s.failure_message = j.failure_message;
  s.exit = j.exit;
  s.stdout_offset = j.stdout_offset;
  s.stderr_offset = j.stderr_offset;
  return s;
}

void JobManager::Handle(const Request& r, Reply reply) {
  Response res = Route(r);
  if (!batch_) return reply(std::move(res));
  waiting_replies_.emplace_back(std::move(reply), std::move(res));
  if (!commit_posted_) {
    commit_posted_ = true;
    boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_)] {
      if (alive.expired()) return;  // see ScheduleDrive
      commit_posted_ = false;
      CommitBatch();
    });
  }
}

Response JobManager::HandleNow(const Request& r) {
  Response out;
  Handle(r, [&out](Response res) { out = std::move(res); });
  CommitBatch();
  return out;
}

void JobManager::CommitBatch() {
  if (!batch_) return;
  Status st = batch_->Commit();
  batch_.reset();
  auto replies = std::move(waiting_replies_);
  waiting_replies_.clear();
  if (!st) {
    // Memory already holds what the transaction did: the only safe state is the one on disk.
    // Exit; the gatekeeper restarts the job manager from its tables on the next request.
    spdlog::critical("group commit failed, exiting to recover from disk: {}",
                     st.error().ToString());
    for (auto& [reply, res] : replies) reply(ErrorResponse(st.error()));
    io_.stop();
    return;
  }
  for (auto& [reply, res] : replies) reply(std::move(res));
}

Response JobManager::Route(const Request& r) {
  if (r.identity.empty()) {
    return ErrorResponse(ErrorCode::kAuthFailed,
                         "no verified identity: requests reach a job manager via the gatekeeper");
  }
  if (!r.contact_base.empty()) contact_base_ = r.contact_base;
  auto parts = Split(r.target, '/');
  if (r.method == "GET" && r.target == "/ping") return Ping();
  if (r.method == "GET" && r.target == "/info") return Info();
  if (!parts.empty() && parts[0] == "delegations") {
    if (r.method == "POST" && parts.size() == 1) return StartDelegation(r);
    if (r.method == "PUT" && parts.size() == 2) return CompleteDelegation(r, parts[1]);
  }
  if (!parts.empty() && parts[0] == "jobs") {
    if (r.method == "POST" && parts.size() == 1) return SubmitJob(r);
    if (r.method == "GET" && parts.size() == 2) return JobStatusOf(r, parts[1]);
    if (r.method == "POST" && parts.size() == 3) return JobOperation(r, parts[1], parts[2]);
  }
  return ErrorResponse(ErrorCode::kNotFound, "no operation " + r.method + " " + r.target);
}

Response JobManager::Ping() {
  boost::json::object o{
      {"protocol", kProtocolVersion}, {"account", options_.account}, {"jobs", jobs_.size()}};
  return {200, boost::json::serialize(o)};
}

Response JobManager::Info() {
  // The batch system is asked at most every kInfoCache: a client refreshing often, or many
  // clients, cost it nothing more.
  double now = WallNow();
  if (!info_ || now - info_at_ >= kInfoCacheSeconds || now < info_at_) {
    auto info = adapter_->Info();
    if (!info) {
      spdlog::warn("info: the batch system could not be asked: {}", info.error().message());
      return ErrorResponse(Error(ErrorCode::kUnavailable,
                                 "the batch system could not be asked: " + info.error().message()));
    }
    info_ = std::move(*info);
    info_at_ = now;
  }
  std::string extra;
  if (!options_.site_attributes.empty()) {
    auto text = ReadFile(options_.site_attributes);
    if (!text) {
      spdlog::warn("info: cannot read the site attributes {}: {}", options_.site_attributes,
                   text.error().message());
    } else {
      extra = SiteAttributeLines(*text);
    }
  }
  boost::json::object o{{"protocol", kProtocolVersion},
                        {"ad", SiteAdText(*info_, extra, info_at_)}};
  return {200, boost::json::serialize(o)};
}

std::optional<Response> JobManager::Repeat(const std::string& owner, const std::string& request_id,
                                           std::string_view op, const std::string& target) {
  auto stored = store_->FindRequest(owner, request_id);
  if (!stored) return ErrorResponse(stored.error());
  if (!*stored) return std::nullopt;
  const StoredReply& s = **stored;
  if (s.op != op || (!target.empty() && s.target != target)) {
    return ErrorResponse(ErrorCode::kConflict, "request id " + request_id + " was used for " +
                                                   s.op + " " + s.target + " already");
  }
  return Response{s.status, s.body};
}

Status JobManager::Persist(const std::string& owner, const std::string& request_id,
                           const StoredReply& reply, const std::function<Status()>& writes) {
  if (!batch_) {
    batch_.emplace(store_->db());
    if (!batch_->begun()) {
      Error e = batch_->begun().error();
      batch_.reset();
      return Fail(e);
    }
  }
  auto& db = store_->db();
  if (auto st = db.Exec("SAVEPOINT request"); !st) return st;
  Status st = writes ? writes() : Status{};
  if (st) st = store_->PutRequest(owner, request_id, reply, WallNow());
  if (!st) {
    (void)db.Exec("ROLLBACK TO request; RELEASE request");
    return st;
  }
  return db.Exec("RELEASE request");
}

Response JobManager::StartDelegation(const Request& r) {
  auto req = ParseDelegationStartRequest(r.body);
  if (!req) return ErrorResponse(req.error());
  if (auto rep = Repeat(r.identity, req->request_id, "delegate", "")) return *rep;
  std::string id = req->delegation_id;
  if (!id.empty()) {
    auto it = delegations_.find(id);
    if (it == delegations_.end() || it->second.owner != r.identity) {
      return ErrorResponse(ErrorCode::kNotFound, "no delegation " + id + " of yours to refresh");
    }
  } else {
    id = NewId();
  }
  auto dr = credentials::DelegationRequest::Create();
  if (!dr) return ErrorResponse(dr.error());
  StoredReply reply{"delegate", id, 200, ToJson(DelegationReply{id, dr->csr_pem(), 0})};
  if (auto st = Persist(r.identity, req->request_id, reply); !st) {
    return ErrorResponse(st.error());
  }
  pending_delegations_.insert_or_assign(id, PendingDelegation{r.identity, std::move(*dr)});
  return {reply.status, reply.body};
}

Response JobManager::CompleteDelegation(const Request& r, const std::string& id) {
  auto req = ParseDelegationCompleteRequest(r.body);
  if (!req) return ErrorResponse(req.error());
  if (auto rep = Repeat(r.identity, req->request_id, "delegate-complete", id)) return *rep;
  auto it = pending_delegations_.find(id);
  if (it == pending_delegations_.end() || it->second.owner != r.identity) {
    return ErrorResponse(ErrorCode::kConflict, "no delegation request pending for " + id +
                                                   ": start the delegation again");
  }
  auto cred = it->second.request.Complete(req->chain_pem);
  if (!cred) return ErrorResponse(cred.error().Wrap("delegated chain"));
  auto who = verifier_->Verify(cred->chain);
  if (!who) return ErrorResponse(who.error().Wrap("delegated chain"));
  if (who->subject != r.identity) {
    return ErrorResponse(ErrorCode::kAuthFailed,
                         "delegated chain speaks for " + who->subject + ", not for " + r.identity);
  }
  // Replaced in place (atomic rename): jobs using this id read the new proxy from now on.
  if (auto st = credentials::SaveProxyFile(DelegationPath(id), *cred); !st) {
    return ErrorResponse(st.error());
  }
  double not_after = std::chrono::duration<double>(who->not_after.time_since_epoch()).count();
  DelegationRecord rec{id, r.identity, not_after};
  StoredReply reply{"delegate-complete", id, 200, ToJson(DelegationReply{id, "", not_after})};
  if (auto st =
          Persist(r.identity, req->request_id, reply, [&] { return store_->PutDelegation(rec); });
      !st) {
    return ErrorResponse(st.error());
  }
  delegations_[id] = rec;
  pending_delegations_.erase(it);
  callbacks_->CredentialChanged(DelegationPath(id));
  return {reply.status, reply.body};
}

Response JobManager::SubmitJob(const Request& r) {
  auto req = ParseSubmitRequest(r.body);
  if (!req) return ErrorResponse(req.error());
  if (auto rep = Repeat(r.identity, req->request_id, "submit", "")) {
    // The job an earlier send of this id made: 200, not 201, so the client knows it carries
    // that send's addresses and delegation (a client that crashed between the submit and
    // storing its contact signals it with its own before it commits).
    if (rep->status == 201) rep->status = 200;
    return *rep;
  }
  const auto& d = req->job;
  if (!d.delegation_id.empty()) {
    auto it = delegations_.find(d.delegation_id);
    if (it == delegations_.end() || it->second.owner != r.identity) {
      return ErrorResponse(ErrorCode::kNotFound,
                           "no delegation " + d.delegation_id + " of yours: delegate first");
    }
  }
  JobRecord j;
  j.id = NewId();
  j.owner = r.identity;
  j.state = JobState::kPendingCommit;
  j.seq = 1;
  j.desc = d;
  j.gass_url = d.gass_url;
  j.delegation_id = d.delegation_id;
  j.created = WallNow();
  j.commit_deadline = j.created + static_cast<double>(options_.commit_timeout.count());
  StoredReply reply{"submit", j.id, 201, ToJson(StatusOf(j))};
  if (auto st = Persist(r.identity, req->request_id, reply, [&] { return store_->PutJob(j); });
      !st) {
    return ErrorResponse(st.error());
  }
  jobs_.emplace(j.id, std::move(j));
  ScheduleDrive(std::chrono::milliseconds(0));  // arms the commit timeout
  if (FaultFires(Fault::kJobManagerDropAfterStoreSubmit)) return {0, "", true};
  return {reply.status, reply.body};
}

Response JobManager::JobStatusOf(const Request& r, const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.owner != r.identity) {
    return ErrorResponse(ErrorCode::kNotFound, "no job " + id + " (forgotten, or never yours)");
  }
  return {200, ToJson(StatusOf(it->second))};
}

Result<bool> JobManager::ChangeJob(JobRecord& j, const std::string& op, JobEvent event,
                                   const SignalRequest& sig, const std::string& identity) {
  if (op == "signal") {
    if (sig.run > 0 && sig.run < j.signal_run) {
      spdlog::info("job {}: a signal from run {} came after one from run {}: left as it is", j.id,
                   sig.run, j.signal_run);
      return false;
    }
    j.signal_run = std::max(j.signal_run, sig.run);
    if (!sig.delegation_id.empty()) {
      auto d = delegations_.find(sig.delegation_id);
      if (d == delegations_.end() || d->second.owner != identity) {
        return Fail(ErrorCode::kNotFound, "no delegation " + sig.delegation_id);
      }
      j.delegation_id = sig.delegation_id;
    }
    if (!sig.gass_url.empty()) j.gass_url = sig.gass_url;
    if (!sig.callback_url.empty()) j.desc.callback_url = sig.callback_url;
    spdlog::info("job {}: signalled by run {}: GASS {}, callbacks {}, delegation {}", j.id, sig.run,
                 j.gass_url, j.desc.callback_url, j.delegation_id);
    return false;
  }
  auto t = NextState(j.state, event);
  if (!t) {
    return Fail(ErrorCode::kConflict,
                "cannot " + op + " a job in state " + std::string(JobStateName(j.state)));
  }
  if (t->forget) return true;
  if (t->to == j.state) return false;
  j.state = t->to;
  ++j.seq;
  // Nothing to stage: the commit stores "pending" at once (one write less per job).
  if (j.state == JobState::kStageIn && !NeedsStageIn(j)) j.state = JobState::kPending;
  if (event == JobEvent::kCancel) {
    j.failure = FailureCode::kCancelled;
    j.failure_message = "cancelled by the client";
    j.cancel_requested = !j.batch_id.empty();
  }
  return false;
}

Response JobManager::JobOperation(const Request& r, const std::string& id, const std::string& op) {
  static const std::map<std::string, JobEvent> kOps = {{"commit", JobEvent::kCommit},
                                                       {"cancel", JobEvent::kCancel},
                                                       {"commit-end", JobEvent::kCommitEnd},
                                                       {"signal", JobEvent::kCommit}};
  auto opit = kOps.find(op);
  if (opit == kOps.end()) return ErrorResponse(ErrorCode::kNotFound, "no job operation " + op);
  SignalRequest sig;
  bool only_pending = false;
  if (op == "signal") {
    auto s = ParseSignalRequest(r.body);
    if (!s) return ErrorResponse(s.error());
    sig = *s;
  } else {
    auto s = ParseSimpleRequest(r.body);
    if (!s) return ErrorResponse(s.error());
    sig.request_id = s->request_id;
    only_pending = op == "cancel" && s->only_pending;
  }
  if (auto rep = Repeat(r.identity, sig.request_id, op, id)) return *rep;
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.owner != r.identity) {
    return ErrorResponse(ErrorCode::kNotFound, "no job " + id + " (forgotten, or never yours)");
  }
  JobRecord j = it->second;  // changed on a copy, installed after it is stored
  if (only_pending && j.state != JobState::kPendingCommit && j.state != JobState::kStageIn &&
      j.state != JobState::kPending) {
    return ErrorResponse(ErrorCode::kConflict, "job " + id + " has started here (state " +
                                                   std::string(JobStateName(j.state)) +
                                                   "): not cancelled");
  }
  auto forget_or = ChangeJob(j, op, opit->second, sig, r.identity);
  if (!forget_or) return ErrorResponse(forget_or.error());
  bool forget = *forget_or;
  StoredReply reply{
      op, id, 200,
      forget ? boost::json::serialize(boost::json::object{{"job_id", id}, {"forgotten", true}})
             : ToJson(StatusOf(j))};
  auto writes = [&]() -> Status { return forget ? store_->DeleteJob(id) : store_->PutJob(j); };
  if (auto st = Persist(r.identity, sig.request_id, reply, writes); !st) {
    return ErrorResponse(st.error());
  }
  if (forget) {
    Forget({id});
  } else {
    bool state_changed = j.seq != it->second.seq;
    it->second = std::move(j);
    if (op == "signal" && !sig.gass_url.empty() && it->second.gass_url == sig.gass_url &&
        FileExists(ControlDir(id))) {
      (void)WriteFileAtomic(ControlDir(id) + "/gass_url", sig.gass_url + "\n", 0644);
    }
    if (state_changed) {
      notify_.insert(id);  // stored already; Flush sends the callback
      ScheduleDrive(std::chrono::milliseconds(0));
    }
  }
  if (op == "commit" && FaultFires(Fault::kJobManagerDropAfterStoreCommit)) return {0, "", true};
  return {reply.status, reply.body};
}

}  // namespace kite::gram
