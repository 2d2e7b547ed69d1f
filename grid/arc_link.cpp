// The ARC CE grid type (docs/grid-arc.md): its registry row's site link over the CE's REST
// interface. Blocking calls run on the gridmanager's pool; answers are posted to the engine's
// io_context. ARC has no two-phase commit: a submit is made exactly-once by naming the job after
// the submit's request id and, whenever a submit with that name may have reached the CE without
// an answer (a crash, a lost reply), looking for the name among the CE's jobs before sending it
// again. Status requests that arrive together go to the CE as one bulk request.
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "common/strings.h"
#include "credentials/delegation.h"
#include "credentials/proxy.h"
#include "grid/arc_client.h"
#include "grid/arc_format.h"
#include "grid/site_link.h"

namespace kite::grid {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using Op = SiteRequest::Op;
using arc::ArcClient;
using arc::JobReply;

// xRSL's media type as A-REX reads it (its own spelling, with the 's').
constexpr char kXrslType[] = "applications/rsl";
// Jobs per bulk request (status, info).
constexpr size_t kBulk = 200;
// How deep an output folder is walked.
constexpr int kMaxDepth = 64;

// A status seq for a reply: the CE gives none, and news is judged by it, so it grows with time
// (and across gridmanager runs).
int64_t NowSeq() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string IdsBody(const std::vector<std::string>& ids) {
  json::array jobs;
  for (const auto& id : ids) jobs.push_back(json::object{{"id", id}});
  return json::serialize(json::object{{"job", std::move(jobs)}});
}

// The per-job answer in a bulk reply as an error (nullopt for a 2xx): 404 the CE does not know
// the job; 5xx and 503 try again later; any other a refusal with the CE's reason.
std::optional<Error> PerJobError(const JobReply& r, std::string_view what) {
  if (r.code == 0 || (r.code >= 200 && r.code < 300)) return std::nullopt;
  return arc::HttpError(r.code, r.reason, std::string(what) + " of ARC job " + r.id);
}

// A reply that cannot be read (truncated, not the CE's JSON) as no answer: the CE is asked again
// after a back-off, and nothing is decided on it.
template <class T>
Result<T> Readable(Result<T> parsed) {
  if (parsed || parsed.error().code() != ErrorCode::kProtocol) return parsed;
  return Fail(ErrorCode::kUnavailable,
              "the CE's reply could not be read: " + parsed.error().message());
}

class ArcSiteLink : public SiteLink, public std::enable_shared_from_this<ArcSiteLink> {
 public:
  ArcSiteLink(std::unique_ptr<ArcClient> client, credentials::Credential credential,
              asio::thread_pool& pool, asio::io_context& io)
      : client_(std::move(client)), credential_(std::move(credential)), pool_(pool), io_(io) {}

  void Send(const SiteRequest& req, SiteDone done) override {
    if (req.op == Op::kStatus) return QueueStatus(req, std::move(done));
    asio::post(pool_, [self = shared_from_this(), req, done = std::move(done)]() mutable {
      self->Answer(std::move(done), self->Call(req));
    });
  }

 private:
  struct PendingStatus {
    SiteRequest req;
    SiteDone done;
  };

  std::string JobTarget(const std::string& id) const { return "jobs/" + id; }
  std::string Contact(const std::string& id) const {
    return client_->endpoint() + "/rest/1.0/jobs/" + id;
  }

  Result<SiteAnswer> Call(const SiteRequest& r) {
    if (r.op != Op::kDelegate && r.op != Op::kSubmit && !arc::ValidArcId(r.job_id)) {
      return Fail(ErrorCode::kNotFound, "'" + r.job_id + "' is not an ARC job id");
    }
    switch (r.op) {
      case Op::kDelegate:
        return Delegate(r);
      case Op::kSubmit:
        return Submit(r);
      case Op::kCommit:  // no commit step: answered as a status request (grid/grid_type.h)
      case Op::kSignal:  // nothing to tell the CE: its jobs call no one back
      case Op::kStatus:
        return StatusOf(r);
      case Op::kCancel:
        return Cancel(r);
      case Op::kCommitEnd:
        return Clean(r);
    }
    return Fail(ErrorCode::kInternal, "unknown site request");
  }

  // --- delegation --------------------------------------------------------------------------

  Result<SiteAnswer> Delegate(const SiteRequest& r) {
    // A new delegation: the CE answers with a certificate request and names the delegation in
    // Location. A refresh: the CE makes a new request for the same delegation.
    std::string id = r.delegation_id;
    Result<arc::HttpReply> start =
        id.empty() ? client_->Call("POST", "delegations?action=new", "")
                   : client_->Call("POST", "delegations/" + id + "?action=renew", "");
    if (!start) return Fail(start.error().Wrap("ARC delegation"));
    if (id.empty()) {
      auto named = arc::DelegationIdOf(start->location);
      if (!named) return Fail(named.error());
      id = *named;
    }
    auto left = std::chrono::duration_cast<std::chrono::seconds>(
        credential_.chain.front().NotAfter() - credentials::Clock::now());
    credentials::ProxyOptions po;
    po.lifetime = std::max(left, std::chrono::seconds(60));
    auto chain = credentials::SignDelegation(start->body, credential_, po);
    if (!chain) return Fail(chain.error().Wrap("signing the CE's delegation request"));
    auto put = client_->Call("PUT", "delegations/" + id, *chain, "application/x-pem-file");
    if (!put) return Fail(put.error().Wrap("ARC delegation " + id));
    auto signed_chain = credentials::ParseChainPem(*chain);
    double not_after = 0;
    if (signed_chain && !signed_chain->empty()) {
      not_after = std::chrono::duration<double>(signed_chain->front().NotAfter().time_since_epoch())
                      .count();
    }
    return SiteAnswer{.delegation = {.id = id, .not_after = not_after}};
  }

  // --- submit ------------------------------------------------------------------------------

  // The CE's jobs of this identity by name. Asked once per link, and again before a submit whose
  // earlier send went unanswered.
  Status Scan() {
    auto list = client_->Call("GET", "jobs", "");
    if (!list) return Fail(list.error().Wrap("ARC job list"));
    auto ids = Readable(arc::ParseJobList(list->body));
    if (!ids) return Fail(ids.error());
    std::map<std::string, std::string> names;
    for (size_t i = 0; i < ids->size(); i += kBulk) {
      std::vector<std::string> part(
          ids->begin() + static_cast<std::ptrdiff_t>(i),
          ids->begin() + static_cast<std::ptrdiff_t>(std::min(ids->size(), i + kBulk)));
      auto info = client_->Call("POST", "jobs?action=info", IdsBody(part));
      if (!info) return Fail(info.error().Wrap("ARC job info"));
      auto jobs = Readable(arc::ParseJobsReply(info->body));
      if (!jobs) return Fail(jobs.error());
      for (const auto& j : *jobs) {
        if (!j.name.empty()) names[j.name] = j.id;
      }
    }
    std::lock_guard lock(mu_);
    for (auto& [name, id] : names) by_name_[name] = id;
    scanned_ = true;
    return {};
  }

  // The id of the CE's job named `name`, "" when it has none; scans when the link's knowledge
  // may be incomplete for that name.
  Result<std::string> Find(const std::string& name) {
    bool scan = false;
    {
      std::lock_guard lock(mu_);
      if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
      scan = !scanned_ || unanswered_.count(name) > 0;
    }
    if (scan) {
      // One scan at a time: the submits that wait for it find what it found.
      std::lock_guard scanning(scan_mu_);
      bool again = false;
      {
        std::lock_guard lock(mu_);
        again = !scanned_ || unanswered_.count(name) > 0;
      }
      if (again) {
        if (auto st = Scan(); !st) return Fail(st.error());
      }
    }
    std::lock_guard lock(mu_);
    unanswered_.erase(name);
    auto it = by_name_.find(name);
    return it == by_name_.end() ? std::string() : it->second;
  }

  Result<SiteAnswer> Submit(const SiteRequest& r) {
    if (!r.files) return Fail(ErrorCode::kInternal, "an ARC submit without the job's files");
    auto job = arc::DescribeJob(r.job, *r.files, r.request_id, r.job.delegation_id);
    if (!job) return Fail(job.error());
    auto found = Find(r.request_id);
    if (!found) return Fail(found.error());
    std::string id = *found;
    bool existing = !id.empty();
    std::string state = "ACCEPTING";
    if (existing) {
      spdlog::info("gridmanager: ARC job {} is at the CE already as {}: not submitted again",
                   r.request_id, id);
      auto st = StatusReply(id);
      if (!st) return Fail(st.error());
      state = st->state;
    } else {
      auto made = client_->Call("POST", "jobs?action=new", job->xrsl, kXrslType);
      auto jobs = made ? Readable(arc::ParseJobsReply(made->body))
                       : Result<std::vector<JobReply>>(Fail(made.error().Wrap("ARC submit")));
      if (jobs && jobs->size() != 1) {
        jobs = Fail(ErrorCode::kUnavailable,
                    "the CE answered a submit with " + std::to_string(jobs->size()) + " jobs");
      }
      if (!jobs) {
        // No answer, or none that can be read: the CE may have made the job. The next send looks
        // for it by name first.
        if (SiteDown(jobs.error())) {
          std::lock_guard lock(mu_);
          unanswered_.insert(r.request_id);
        }
        return Fail(jobs.error());
      }
      const JobReply& made_job = jobs->front();
      if (made_job.code != 201 && made_job.code != 0) {
        // The CE refused this description (ARC says so with a per-job 500); 503: it is busy.
        return Fail(made_job.code == 503 ? ErrorCode::kUnavailable : ErrorCode::kInvalidInput,
                    "the ARC CE refused the job: " + std::to_string(made_job.code) + " " +
                        ForLog(made_job.reason));
      }
      id = made_job.id;
      if (!arc::ValidArcId(id)) {
        return Fail(ErrorCode::kProtocol, "the CE named the new job '" + ForLog(id) + "'");
      }
      if (!made_job.state.empty()) state = made_job.state;
      std::lock_guard lock(mu_);
      by_name_[r.request_id] = id;
    }
    // Inputs go up while the CE waits for them (again after a crash: a PUT replaces the file).
    if (!existing || arc::AwaitsUploads(state)) {
      for (const auto& f : job->uploads) {
        if (auto st = client_->PutFile(JobTarget(id) + "/session/" + f.site, f.local); !st) {
          return Fail(st.error().Wrap("upload of " + f.local + " to ARC job " + id));
        }
      }
    }
    gram::JobStatus s{.job_id = id,
                      .contact = Contact(id),
                      .state = arc::MapState(state).value_or(gram::JobState::kStageIn),
                      .seq = NowSeq()};
    return SiteAnswer{.job = std::move(s), .existing = existing};
  }

  // --- status ------------------------------------------------------------------------------

  Result<JobReply> StatusReply(const std::string& id) {
    auto reply = client_->Call("POST", "jobs?action=status", IdsBody({id}));
    if (!reply) return Fail(reply.error().Wrap("ARC status"));
    auto jobs = Readable(arc::ParseJobsReply(reply->body));
    if (!jobs) return Fail(jobs.error());
    for (auto& j : *jobs) {
      if (j.id != id) continue;
      if (auto e = PerJobError(j, "status")) return Fail(*e);
      return j;
    }
    return Fail(ErrorCode::kUnavailable, "the CE's status reply leaves out job " + id);
  }

  Result<SiteAnswer> StatusOf(const SiteRequest& r) {
    auto reply = StatusReply(r.job_id);
    if (!reply) return Fail(reply.error());
    return Settle(r, *reply);
  }

  // What the CE's state means for Kite. An ended job's output is fetched, and its exit code
  // read, before the end is reported: what the user is told has ended is on the desktop.
  Result<SiteAnswer> Settle(const SiteRequest& r, const JobReply& reply) {
    gram::JobStatus s{.job_id = r.job_id, .contact = Contact(r.job_id), .seq = NowSeq()};
    auto state = arc::MapState(reply.state);
    if (!state) {
      spdlog::warn("gridmanager: ARC job {} is in a state Kite does not know: '{}'", r.job_id,
                   ForLog(reply.state));
      state = gram::JobState::kPending;
    }
    s.state = *state;
    s.site_state = ForLog(reply.state, 32);  // what `kite q -grid` shows: the CE's own word
    const std::string& rs = reply.state;
    if (rs == "KILLED") {
      s.failure = gram::FailureCode::kCancelled;
      s.failure_message = "killed at the ARC CE";
    } else if (rs == "WIPED") {
      s.failure = gram::FailureCode::kBatchLost;
      s.failure_message = "the ARC CE removed the job and its files (WIPED)";
    } else if (rs == "FINISHED" || rs == "FAILED") {
      auto diag = client_->Call("GET", JobTarget(r.job_id) + "/diagnose/diag", "");
      std::optional<int> code = diag ? arc::ParseExitCode(diag->body) : std::nullopt;
      if (!diag && SiteDown(diag.error())) return Fail(diag.error());
      std::string why;
      if (rs == "FAILED") {
        auto failed = client_->Call("GET", JobTarget(r.job_id) + "/diagnose/failed", "");
        if (!failed && SiteDown(failed.error())) return Fail(failed.error());
        why = failed ? std::string(Trim(failed->body)) : "";
      }
      // A job that ran and exited non-zero is a job that ran: its exit code decides, as for any
      // job. Only a job that never ran to its end has failed.
      bool ran = code.has_value() &&
                 (rs == "FINISHED" || why.empty() || why.find("exit code") != std::string::npos);
      if (ran) {
        if (r.files) {
          auto fetched = FetchOutput(r);
          if (!fetched && fetched.error().code() == ErrorCode::kNotFound) {
            // The job did not write a file it names: held, as HTCondor holds a job whose output
            // cannot be transferred (running it again would not write it either).
            s.state = gram::JobState::kFailed;
            s.failure = gram::FailureCode::kBadRequest;
            s.failure_message = fetched.error().message();
            return SiteAnswer{.job = std::move(s)};
          }
          if (!fetched) return Fail(fetched.error());
        }
        s.state = gram::JobState::kDone;
        s.exit = gram::ExitInfo{.signaled = false, .code = *code};
      } else {
        s.state = gram::JobState::kFailed;
        s.failure = gram::FailureCode::kBadRequest;
        s.failure_message =
            why.empty() ? "the ARC CE gives no exit code for the job (" + rs + ")" : ForLog(why);
      }
    }
    return SiteAnswer{.job = std::move(s)};
  }

  Status FetchOutput(const SiteRequest& r) {
    auto job = arc::DescribeJob(r.job, *r.files, r.request_id, "");
    if (!job) return Fail(job.error());
    std::string session = JobTarget(r.job_id) + "/session/";
    for (const auto& f : job->downloads) {
      // "d/" (a folder's contents) comes into f.local; "d", a file or a folder, becomes it.
      bool contents = f.site.ends_with('/');
      std::string site = contents ? f.site.substr(0, f.site.size() - 1) : f.site;
      Status st;
      if (contents) {
        auto xml = client_->List(session + site);
        st = xml ? FetchFolder(session + site, *xml, f.local, f.site) : Status(Fail(xml.error()));
      } else if (auto got = client_->GetFileOrListing(session + site, f.local); !got) {
        st = Fail(got.error());
      } else if (*got) {
        st = FetchFolder(session + site, **got, f.local, f.site);
      }
      if (!st) return Fail(st.error().Wrap("ARC output " + f.site + " of job " + r.job_id));
    }
    return {};
  }

  // A folder of the session directory, its listing `xml` in hand, into `local` (made when
  // missing; a folder on the way that is a symbolic link or a file is refused, never followed).
  // Its files are fetched and its folders walked, to kMaxDepth levels.
  Status FetchFolder(const std::string& target, const std::string& xml, const std::string& local,
                     const std::string& shown, int depth = 0) {
    auto listing = arc::ParseSessionListing(xml);
    if (!listing) return Fail(listing.error());
    if (depth > kMaxDepth) {
      return Fail(ErrorCode::kInvalidInput,
                  "'" + shown + "' is more than " + std::to_string(kMaxDepth) + " folders deep");
    }
    if (::mkdir(local.c_str(), 0777) != 0 && errno != EEXIST) return FailErrno("mkdir " + local);
    struct stat st {};
    if (::lstat(local.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Fail(ErrorCode::kInvalidInput,
                  local + " is not a folder (a file or a symbolic link is in the way)");
    }
    for (const auto& name : listing->files) {
      auto got = client_->GetFile(target + "/" + name, local + "/" + name);
      if (!got) return got;
    }
    for (const auto& name : listing->folders) {
      auto inner = client_->List(target + "/" + name);
      if (!inner) return Fail(inner.error());
      auto st2 = FetchFolder(target + "/" + name, *inner, local + "/" + name,
                             shown + (shown.ends_with('/') ? "" : "/") + name, depth + 1);
      if (!st2) return st2;
    }
    return {};
  }

  // Hands `a` to `done` on the engine's thread.
  void Answer(SiteDone done, Result<SiteAnswer> a) {
    auto answer = std::make_shared<Result<SiteAnswer>>(std::move(a));
    asio::post(io_, [answer, done = std::move(done)] { done(std::move(*answer)); });
  }

  // Status requests wait here; one pool task sends all that have gathered as one bulk request.
  void QueueStatus(const SiteRequest& req, SiteDone done) {
    bool start = false;
    {
      std::lock_guard lock(mu_);
      waiting_.push_back({req, std::move(done)});
      start = !batching_;
      batching_ = true;
    }
    if (start) asio::post(pool_, [self = shared_from_this()] { self->StatusBatch(); });
  }

  void StatusBatch() {
    for (;;) {
      std::vector<PendingStatus> batch;
      {
        std::lock_guard lock(mu_);
        if (waiting_.empty()) {
          batching_ = false;
          return;
        }
        size_t n = std::min(waiting_.size(), kBulk);
        batch.assign(std::make_move_iterator(waiting_.begin()),
                     std::make_move_iterator(waiting_.begin() + static_cast<std::ptrdiff_t>(n)));
        waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(n));
      }
      std::vector<std::string> ids;
      for (const auto& p : batch) {
        if (arc::ValidArcId(p.req.job_id)) ids.push_back(p.req.job_id);
      }
      Result<std::vector<JobReply>> replies = std::vector<JobReply>{};
      if (!ids.empty()) {
        auto reply = client_->Call("POST", "jobs?action=status", IdsBody(ids));
        replies = reply ? Readable(arc::ParseJobsReply(reply->body))
                        : Result<std::vector<JobReply>>(Fail(reply.error().Wrap("ARC status")));
      }
      for (auto& p : batch) {
        Result<SiteAnswer> a = Fail(ErrorCode::kInternal, "");
        if (!arc::ValidArcId(p.req.job_id)) {
          a = Fail(ErrorCode::kNotFound, "'" + p.req.job_id + "' is not an ARC job id");
        } else if (!replies) {
          a = Fail(replies.error());
        } else {
          a = Fail(ErrorCode::kUnavailable, "the CE's status reply leaves out job " + p.req.job_id);
          const JobReply* reply = nullptr;
          for (const auto& j : *replies) {
            if (j.id == p.req.job_id) reply = &j;
          }
          auto e = reply ? PerJobError(*reply, "status") : std::nullopt;
          if (reply && !e && arc::MapState(reply->state) &&
              gram::IsTerminal(*arc::MapState(reply->state))) {
            // An ended job's exit code and output are fetched on a pool thread of its own, so
            // that jobs ending together are settled side by side, not one after another.
            asio::post(pool_, [self = shared_from_this(), p = std::move(p), j = *reply]() mutable {
              self->Answer(std::move(p.done), self->Settle(p.req, j));
            });
            continue;
          }
          if (reply) a = e ? Result<SiteAnswer>(Fail(*e)) : Settle(p.req, *reply);
        }
        Answer(std::move(p.done), std::move(a));
      }
    }
  }

  // --- cancel and clean --------------------------------------------------------------------

  Result<SiteAnswer> Cancel(const SiteRequest& r) {
    if (r.only_pending) {
      auto st = StatusReply(r.job_id);
      if (!st) return Fail(st.error());
      if (!arc::NotStarted(st->state)) {
        return Fail(ErrorCode::kConflict, "ARC job " + r.job_id + " has started (" + st->state +
                                              "): left to run where it is");
      }
    }
    if (auto st = BulkAction("kill", r.job_id); !st) return Fail(st.error());
    return StatusOf(r);
  }

  Result<SiteAnswer> Clean(const SiteRequest& r) {
    auto st = BulkAction("clean", r.job_id);
    if (!st && st.error().code() != ErrorCode::kNotFound) return Fail(st.error());
    std::lock_guard lock(mu_);
    for (auto it = by_name_.begin(); it != by_name_.end(); ++it) {
      if (it->second == r.job_id) {
        by_name_.erase(it);
        break;
      }
    }
    return SiteAnswer{};
  }

  Status BulkAction(const std::string& action, const std::string& id) {
    auto reply = client_->Call("POST", "jobs?action=" + action, IdsBody({id}));
    if (!reply) return Fail(reply.error().Wrap("ARC " + action));
    auto jobs = Readable(arc::ParseJobsReply(reply->body));
    if (!jobs) return Fail(jobs.error());
    for (const auto& j : *jobs) {
      if (j.id != id) continue;
      if (auto e = PerJobError(j, action)) return Fail(*e);
      return {};
    }
    return Fail(ErrorCode::kUnavailable, "the CE's " + action + " reply leaves out job " + id);
  }

  std::unique_ptr<ArcClient> client_;
  credentials::Credential credential_;
  asio::thread_pool& pool_;
  asio::io_context& io_;

  std::mutex scan_mu_;  // held while the CE's jobs are read (Scan)
  std::mutex mu_;
  bool scanned_ = false;
  std::map<std::string, std::string> by_name_;  // the CE's job ids by job name (request id)
  std::set<std::string> unanswered_;            // names whose submit may have reached the CE
  std::vector<PendingStatus> waiting_;          // status requests for the next bulk request
  bool batching_ = false;                       // a pool task sends them
};

}  // namespace

Result<std::shared_ptr<SiteLink>> MakeArcLink(const GridResource& site,
                                              const LinkContext& context) {
  arc::ArcClientOptions o;
  o.endpoint = ArcEndpoint(site);
  o.tls.credential = *context.credential;
  o.tls.verifier = context.verifier;
  return std::make_shared<ArcSiteLink>(std::make_unique<ArcClient>(std::move(o)),
                                       *context.credential, *context.pool, *context.io);
}

std::string ArcEndpoint(const GridResource& site) {
  return "https://" + site.HostPort() + "/" + (site.batch.empty() ? "arex" : site.batch);
}

}  // namespace kite::grid
