// The GRAM5 grid type (docs/grid-gt5.md): its registry row's site link. The Globus libraries run
// in kite-gt5-helper, one process per site, which this link starts and talks to in lines
// (grid/gt5_wire.h); blocking calls run on the gridmanager's pool, answers are posted to the
// engine's io_context. GRAM has Kite's own two-phase commit, so a submit resent after a crash
// makes a second, uncommitted job that the site drops when its commit timeout passes: only the
// committed one runs.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/files.h"
#include "common/paths.h"
#include "common/secret.h"
#include "common/strings.h"
#include "credentials/proxy.h"
#include "grid/gt5_format.h"
#include "grid/gt5_wire.h"
#include "grid/site_link.h"

extern char** environ;

namespace kite::grid {
namespace {

namespace asio = boost::asio;
using Op = SiteRequest::Op;
using Fields = std::vector<std::string>;

// How long one request to the helper may take: GRAM's own calls time out well before.
constexpr auto kCallTimeout = std::chrono::seconds(180);
// How many times a job manager that could not send a job's output is restarted to send it again
// before the job is held.
constexpr int kStageOutRetries = 4;
// How long a job GRAM says is done may take to send its output.
constexpr auto kOutputWait = std::chrono::minutes(5);
// How long a job manager finishing a job may refuse its commit-end.
constexpr auto kEndWait = std::chrono::seconds(20);

int64_t NowSeq() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One kite-gt5-helper process, started when first needed and again after it exits.
class Helper {
 public:
  Helper(std::string proxy, std::string dir)
      : proxy_(std::move(proxy)), port_file_(dir + "/gass-port"), written_dir_(dir + "/written") {
    (void)MakeDirs(written_dir_, 0700);
  }

  // Whether the site's job manager has completed a write of served file `name`.
  bool Written(const std::string& name) const { return FileExists(written_dir_ + "/" + name); }
  // Where the helper's own lines ("0 EVENT CONTACT STATE ERROR": a job manager's state callback;
  // "0 WRITTEN /NAME": a completed write) go; called on the reader thread.
  void OnEvents(std::function<void(const Fields&)> sink) {
    std::lock_guard lock(mu_);
    events_ = std::move(sink);
  }
  // Forgets that `name` was written: only a later write counts.
  void Unmark(const std::string& name) const {
    (void)::unlink((written_dir_ + "/" + name).c_str());
  }
  ~Helper() {
    std::unique_lock lock(mu_);
    Stop(lock);
  }

  // Sends one request and waits for its answer: the fields after "OK", or the helper's error.
  Result<Fields> Call(Fields request) {
    auto slot = std::make_shared<std::promise<Result<Fields>>>();
    auto answer = slot->get_future();
    {
      std::unique_lock lock(mu_);
      if (pid_ < 0) {
        if (auto st = Start(lock); !st) return Fail(st.error());
      }
      uint64_t id = next_id_++;
      pending_[id] = slot;
      request.insert(request.begin(), std::to_string(id));
      std::string line = gt5::JoinLine(request) + "\n";
      if (!WriteAll(in_fd_, line)) {
        pending_.erase(id);
        return Fail(ErrorCode::kUnavailable, "the GRAM5 helper does not take requests");
      }
    }
    if (answer.wait_for(kCallTimeout) != std::future_status::ready) {
      return Fail(ErrorCode::kTimeout, "the GRAM5 helper did not answer in time");
    }
    return answer.get();
  }

  // The helper's GASS server ("https://HOST:PORT"); starts the helper when it is not running.
  Result<std::string> GassBase() {
    std::unique_lock lock(mu_);
    if (pid_ < 0) {
      if (auto st = Start(lock); !st) return Fail(st.error());
    }
    return gass_base_;
  }

  // Files the helper serves, sent again to every new helper process.
  void Remember(const gt5::ServedFile& f) {
    std::lock_guard lock(mu_);
    served_[f.name] = f;
  }
  void Forget(const std::string& name) {
    std::lock_guard lock(mu_);
    served_.erase(name);
  }

 private:
  static bool WriteAll(int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      ssize_t n = ::write(fd, s.data() + done, s.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Starts the helper on the port it had before (so URLs given to sites stay good), reads its
  // first line, then hands its output to a reader thread. Called with mu_ held.
  Status Start(std::unique_lock<std::mutex>& lock) {
    std::string port = "0";
    if (auto saved = ReadFile(port_file_)) port = std::string(Trim(*saved));
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0) return Fail(ErrorCode::kIo, "pipe for the GRAM5 helper");
    if (pipe2(from_child, O_CLOEXEC) != 0) {
      close(to_child[0]);
      close(to_child[1]);
      return Fail(ErrorCode::kIo, "pipe for the GRAM5 helper");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
    std::string program = ProgramPath("kite-gt5-helper");
    std::vector<std::string> args = {program, proxy_, port, written_dir_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to_child[0]);
    close(from_child[1]);
    if (rc != 0) {
      close(to_child[1]);
      close(from_child[0]);
      return Fail(ErrorCode::kUnavailable,
                  "cannot start " + program + ": " + std::string(strerror(rc)));
    }
    // The first line: READY GASS_BASE, or FATAL WHY.
    std::string first;
    char c;
    while (::read(from_child[0], &c, 1) == 1 && c != '\n') first += c;
    Fields f = gt5::SplitLine(first);
    if (f.size() < 3 || f[1] != "READY") {
      close(to_child[1]);
      close(from_child[0]);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return Fail(ErrorCode::kUnavailable,
                  "the GRAM5 helper did not start: " + (f.size() >= 3 ? f[2] : first));
    }
    pid_ = pid;
    in_fd_ = to_child[1];
    spdlog::info("gridmanager: GRAM5 helper {} serves the jobs' files at {}", pid, f[2]);
    gass_base_ = f[2];
    if (auto colon = gass_base_.rfind(':'); colon != std::string::npos) {
      (void)WriteFileAtomic(port_file_, gass_base_.substr(colon + 1) + "\n", 0600);
    }
    uint64_t gen = ++gen_;
    reader_ = std::thread([this, fd = from_child[0], gen] { Read(fd, gen); });
    reader_.detach();
    // The files of jobs already at sites, served again.
    for (const auto& [name, s] : served_) {
      uint64_t id = next_id_++;
      WriteAll(in_fd_, gt5::JoinLine(
                           {std::to_string(id), "ALLOW", std::string(1, s.mode), s.name, s.path}) +
                           "\n");
    }
    (void)lock;
    return {};
  }

  void Read(int fd, uint64_t gen) {
    std::string buf;
    char chunk[4096];
    for (;;) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        Fields f = gt5::SplitLine(std::string_view(buf).substr(0, nl));
        buf.erase(0, nl + 1);
        Deliver(f);
      }
    }
    close(fd);
    std::unique_lock lock(mu_);
    if (gen != gen_) return;
    Stop(lock);
    // Started again at once, not at the next request: the site's job managers may be staging
    // files from its server right now.
    auto st = Start(lock);
    spdlog::warn("gridmanager: the GRAM5 helper exited; {}",
                 st ? "started again" : "starting it again failed: " + st.error().message());
  }

  void Deliver(const Fields& f) {
    if (f.size() < 2) return;
    uint64_t id = 0;
    try {
      id = std::stoull(f[0]);
    } catch (...) {
      return;
    }
    std::shared_ptr<std::promise<Result<Fields>>> slot;
    if (id == 0) {
      std::function<void(const Fields&)> sink;
      {
        std::lock_guard lock(mu_);
        sink = events_;
      }
      if (sink) sink(f);
      return;
    }
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      slot = it->second;
      pending_.erase(it);
    }
    if (f[1] == "OK") {
      slot->set_value(Fields(f.begin() + 2, f.end()));
      return;
    }
    int code = f.size() > 2 ? std::atoi(f[2].c_str()) : 0;
    slot->set_value(Fail(gt5::ErrorOf(code, f.size() > 3 ? f[3] : "the helper failed")));
  }

  // Ends the process and fails what waits on it. Called with mu_ held.
  void Stop(std::unique_lock<std::mutex>&) {
    if (pid_ > 0) {
      close(in_fd_);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    in_fd_ = -1;
    ++gen_;
    for (auto& [id, slot] : pending_) {
      slot->set_value(Fail(ErrorCode::kUnavailable, "the GRAM5 helper exited"));
    }
    pending_.clear();
  }

  const std::string proxy_;
  const std::string port_file_;
  const std::string written_dir_;
  std::mutex mu_;
  pid_t pid_ = -1;
  int in_fd_ = -1;
  uint64_t gen_ = 0;
  uint64_t next_id_ = 1;
  std::string gass_base_;
  std::thread reader_;
  std::map<uint64_t, std::shared_ptr<std::promise<Result<Fields>>>> pending_;
  std::map<std::string, gt5::ServedFile> served_;
  std::function<void(const Fields&)> events_;
};

// What a site's links share: a gridmanager makes a new link to a site when the proxy is
// refreshed, and the helper (with the GASS server whose URLs the site's jobs hold) and the jobs
// seen must carry over to it.
struct SiteShared {
  SiteShared(const std::string& proxy, const std::string& dir)
      : helper(proxy, dir), moves_file(dir + "/moved") {
    // "OLD NEW" lines: the contacts of jobs whose job manager was restarted.
    if (auto text = ReadFile(moves_file)) {
      for (const auto& line : Split(*text, '\n')) {
        auto parts = Split(line, ' ');
        if (parts.size() == 2) moved[parts[0]] = parts[1];
      }
    }
  }
  // Restarts made to send a job's output again (for this gridmanager's life).
  int Retries(const std::string& contact) {
    std::lock_guard lock(mu);
    return retries[contact];
  }
  void CountRetry(const std::string& contact) {
    std::lock_guard lock(mu);
    ++retries[contact];
  }
  // How long the job has been done at the site with its output not yet here.
  std::chrono::steady_clock::duration WaitingForOutput(const std::string& contact) {
    std::lock_guard lock(mu);
    auto now = std::chrono::steady_clock::now();
    auto [it, added] = done_since.try_emplace(contact, now);
    return now - it->second;
  }
  // Where the job first at `contact` is now: a restarted job manager listens on a new port, and
  // the gridmanager keeps the contact the job was submitted under.
  std::string At(const std::string& contact) {
    std::lock_guard lock(mu);
    std::string c = contact;
    for (int i = 0; i < 16; ++i) {
      auto it = moved.find(c);
      if (it == moved.end()) break;
      c = it->second;
    }
    return c;
  }
  void Moved(const std::string& from, const std::string& to) {
    std::lock_guard lock(mu);
    if (from == to) return;
    moved[from] = to;
    std::string text;
    for (const auto& [a, b] : moved) text += a + " " + b + "\n";
    if (auto st = WriteFileAtomic(moves_file, text, 0600); !st) {
      spdlog::warn("gridmanager: cannot record a moved GRAM5 job: {}", st.error().message());
    }
  }
  // The contact a job was submitted under, from where its job manager is now (At's inverse).
  std::string Original(const std::string& now_at) {
    std::lock_guard lock(mu);
    std::string c = now_at;
    for (int i = 0; i < 16; ++i) {
      auto it =
          std::find_if(moved.begin(), moved.end(), [&](const auto& m) { return m.second == c; });
      if (it == moved.end()) break;
      c = it->first;
    }
    return c;
  }
  // The helper's news, to the engine: a job manager's callback asks for that job's status at
  // once; a completed write, for that of every job done at its site whose output is awaited.
  void Listen(std::function<void(const std::string&)> news) {
    if (!news) return;
    helper.OnEvents([this, news = std::move(news)](const Fields& f) {
      if (f.size() >= 3 && f[1] == "EVENT") {
        news(Original(f[2]));
      } else if (f.size() >= 2 && f[1] == "WRITTEN") {
        std::vector<std::string> waiting;
        {
          std::lock_guard lock(mu);
          for (const auto& [contact, since] : done_since) waiting.push_back(contact);
        }
        for (const auto& c : waiting) news(c);
      }
    });
  }
  Helper helper;
  const std::string moves_file;
  std::mutex mu;
  std::set<std::string> contacts;      // jobs seen: refreshed with a new proxy
  std::map<std::string, int> retries;  // contact -> restarts made to send its output again
  std::map<std::string, std::chrono::steady_clock::time_point> done_since;  // output awaited
  std::map<std::string, std::string> moved;  // contact -> the contact after a restart
};

// Never destroyed: a gridmanager that exits leaves its helpers to notice (their input closes) and
// to go on serving while its jobs' files are named, as after a kill; destroying them at exit
// would end them.
std::shared_ptr<SiteShared> SharedFor(const std::string& proxy, const std::string& dir,
                                      const std::function<void(const std::string&)>& news) {
  static std::mutex mu;
  static auto* by_dir = new std::map<std::string, std::shared_ptr<SiteShared>>;
  std::lock_guard lock(mu);
  auto& s = (*by_dir)[dir];
  if (!s) {
    s = std::make_shared<SiteShared>(proxy, dir);
    s->Listen(news);
  }
  return s;
}

class Gt5SiteLink : public SiteLink, public std::enable_shared_from_this<Gt5SiteLink> {
 public:
  Gt5SiteLink(std::string gatekeeper, std::string proxy, std::string key,
              std::shared_ptr<SiteShared> shared, asio::thread_pool& pool, asio::io_context& io)
      : gatekeeper_(std::move(gatekeeper)),
        proxy_(std::move(proxy)),
        key_(std::move(key)),
        shared_(std::move(shared)),
        helper_(shared_->helper),
        pool_(pool),
        io_(io) {}

  void Send(const SiteRequest& req, SiteDone done) override {
    asio::post(pool_, [self = shared_from_this(), req, done = std::move(done)]() mutable {
      auto answer = std::make_shared<Result<SiteAnswer>>(self->Call(req));
      asio::post(self->io_, [answer, done = std::move(done)] { done(std::move(*answer)); });
    });
  }

 private:
  Result<SiteAnswer> Call(const SiteRequest& r) {
    if (r.op != Op::kDelegate && r.op != Op::kSubmit && !ValidContact(r.job_id)) {
      return Fail(ErrorCode::kNotFound, "'" + ForLog(r.job_id) + "' is not a GRAM job contact");
    }
    switch (r.op) {
      case Op::kDelegate:
        return Delegate(r);
      case Op::kSubmit:
        return Submit(r);
      case Op::kCommit:
        return Commit(r);
      case Op::kStatus:
        return StatusOf(r);
      case Op::kCancel:
        return Cancel(r);
      case Op::kSignal:
        return Signal(r);
      case Op::kCommitEnd:
        return CommitEnd(r);
    }
    return Fail(ErrorCode::kInternal, "unknown site request");
  }

  static bool ValidContact(const std::string& c) {
    return c.starts_with("https://") && c.size() < 1024 &&
           c.find_first_of(" \t\r\n\"") == std::string::npos;
  }

  // GRAM delegates inside each submit, from the proxy the helper presents: the user's own proxy
  // file. Its gatekeeper makes the delegated key the size of the presented one, and its client
  // signs only with the algorithm the presented proxy was signed with, so the proxy must be RSA
  // all the way up (`kite proxy init --bits 2048`); an EC proxy (Kite's default) is refused
  // here with that advice. A refresh hands the new proxy to every job manager holding a job.
  Result<SiteAnswer> Delegate(const SiteRequest& r) {
    auto proxy = credentials::LoadProxyFile(proxy_);
    if (!proxy) return Fail(proxy.error().Wrap("the proxy for GRAM5"));
    for (const auto& cert : proxy->chain) {
      if (cert.KeyAlgorithm() != "RSA") {
        return Fail(ErrorCode::kAuthFailed,
                    "GRAM5 gatekeepers take only RSA proxies, and " + proxy_ + " holds a " +
                        cert.KeyAlgorithm() +
                        " key; make an RSA one with 'kite proxy init --bits 2048'");
      }
    }
    double not_after =
        std::chrono::duration<double>(proxy->chain.front().NotAfter().time_since_epoch()).count();
    if (!r.delegation_id.empty()) {
      if (auto st = helper_.Call({"PROXY", proxy_}); !st) return Fail(st.error());
      std::set<std::string> jobs;
      {
        std::lock_guard lock(shared_->mu);
        jobs = shared_->contacts;
      }
      for (const auto& c : jobs) {
        if (auto st = helper_.Call({"REFRESH", shared_->At(c)}); !st) {
          spdlog::warn("gridmanager: refreshing the proxy of GRAM5 job {}: {}", c,
                       st.error().message());
        }
      }
    }
    return SiteAnswer{.delegation = {.id = "gt5", .not_after = not_after}};
  }

  static std::string Base(const std::string& request_id) {
    return request_id.substr(0, request_id.rfind('/'));
  }

  // The job's RSL and its files, served by the helper from now on.
  Result<gt5::Gt5Job> Serve(const SiteRequest& r, const std::string& base) {
    if (!r.files) return Fail(ErrorCode::kInternal, "a GRAM5 request without the job's files");
    auto gass = helper_.GassBase();
    if (!gass) return Fail(gass.error());
    auto job = gt5::DescribeJob(r.job, *r.files, *gass, key_, base);
    if (!job) return Fail(job.error());
    for (const auto& f : job->served) {
      helper_.Remember(f);
      auto st = helper_.Call({"ALLOW", std::string(1, f.mode), f.name, f.path});
      if (!st) return Fail(st.error());
    }
    return job;
  }

  Result<SiteAnswer> Submit(const SiteRequest& r) {
    auto job = Serve(r, Base(r.request_id));
    if (!job) return Fail(job.error());
    auto made = helper_.Call({"SUBMIT", gatekeeper_, job->rsl});
    if (!made) return Fail(made.error().Wrap("GRAM5 submit to " + gatekeeper_));
    if (made->empty() || !ValidContact((*made)[0])) {
      return Fail(ErrorCode::kProtocol, "the gatekeeper named no job contact");
    }
    const std::string& contact = (*made)[0];
    Track(contact);
    bool waiting = made->size() > 1 && (*made)[1] == std::to_string(gt5::kErrorWaitingForCommit);
    gram::JobStatus s{.job_id = contact,
                      .contact = contact,
                      .state = waiting ? gram::JobState::kPendingCommit : gram::JobState::kPending,
                      .seq = NowSeq()};
    return SiteAnswer{.job = std::move(s)};
  }

  Result<SiteAnswer> Commit(const SiteRequest& r) {
    auto st = helper_.Call({"COMMIT", shared_->At(r.job_id)});
    if (!st && SiteDown(st.error())) return Fail(st.error());
    // A commit sent again (its answer lost) is refused by a job that is past waiting for it:
    // the job's state tells.
    auto now = StatusOf(r);
    if (!now || st) return now;
    if (now->job.state == gram::JobState::kPendingCommit) return Fail(st.error());
    return now;
  }

  // Starts a new job manager for the job at `at` from its saved state (GRAM's jm_restart),
  // naming the job's stdout and stderr again at the helper serving now: the new contact, or empty
  // when the restart was refused. A job submitted with two-phase commit is restarted with it and
  // committed.
  std::string Restart(const SiteRequest& r, const std::string& at) {
    auto gass = helper_.GassBase();
    std::string stdio = gass ? gt5::StdioRsl(r.job, *gass, key_, Base(r.request_id)) : "";
    std::string rsl = "&(restart=" + RslQuote(at) + ")" + (stdio.empty() ? "" : stdio.substr(1));
    auto restarted = helper_.Call({"SUBMIT", gatekeeper_, rsl});
    if (!restarted || restarted->empty() || !ValidContact((*restarted)[0])) {
      spdlog::warn("gridmanager: GRAM5 job {}: its job manager could not be restarted: {}",
                   r.job_id, restarted ? "no contact" : restarted.error().message());
      return "";
    }
    const std::string now_at = (*restarted)[0];
    shared_->Moved(at, now_at);
    if (restarted->size() > 1 && (*restarted)[1] == std::to_string(gt5::kErrorWaitingForCommit)) {
      if (auto c = helper_.Call({"COMMIT", now_at}); !c) {
        spdlog::warn("gridmanager: GRAM5 job {}: its restarted job manager took no commit: {}",
                     r.job_id, c.error().message());
      }
    }
    spdlog::info("gridmanager: restarted the job manager of GRAM5 job {}: now at {}", r.job_id,
                 now_at);
    return now_at;
  }

  Result<SiteAnswer> StatusOf(const SiteRequest& r) {
    Track(r.job_id);
    std::string at = shared_->At(r.job_id);
    auto reply = helper_.Call({"STATUS", at});
    if (!reply && gt5::JobManagerGone(reply.error())) {
      // No job manager answers at the contact: start one, then ask it.
      if (std::string now_at = Restart(r, at); !now_at.empty()) {
        reply = helper_.Call({"STATUS", now_at});
      }
    }
    if (reply) {
      auto parsed = gt5::ParseStatus(*reply);
      if (parsed && gt5::MapState(parsed->state) == gram::JobState::kFailed &&
          gt5::MapFailure(parsed->error) == gram::FailureCode::kStageOutFailed &&
          shared_->Retries(r.job_id) < kStageOutRetries) {
        // The job ran, and its output found no file server (the helper was down when the job
        // manager sent it). A job manager restarted from a job failed this way sends the
        // output again (GRAM clears such a failure on restart): stop this one, start another.
        spdlog::info(
            "gridmanager: GRAM5 job {} ran but its output did not come back ({}): "
            "its job manager is restarted to send it again",
            r.job_id, reply->size() > 3 ? ForLog((*reply)[3]) : std::string("?"));
        shared_->CountRetry(r.job_id);
        if (Stop(r, at)) {
          // What the failed stage-out marked written is not to be trusted: a copy that failed
          // reading its source (a folder the job made under an output file's name) still ends
          // its PUT cleanly, and the helper marks it. The new job manager sends everything again.
          for (const auto& name : OutputNames(r)) helper_.Unmark(name);
          if (std::string now_at = Restart(r, at); !now_at.empty()) {
            reply = helper_.Call({"STATUS", now_at});
          }
        }
      }
    }
    if (!reply) return Fail(reply.error());
    auto parsed = gt5::ParseStatus(*reply);
    if (!parsed) return Fail(ErrorCode::kUnavailable, parsed.error().message());
    gram::JobStatus s{.job_id = r.job_id, .contact = r.job_id, .seq = NowSeq()};
    auto state = gt5::MapState(parsed->state);
    if (!state) {
      spdlog::warn("gridmanager: GRAM5 job {} is in a state Kite does not know: {}", r.job_id,
                   parsed->state);
      state = gram::JobState::kPending;
    }
    s.state = *state;
    if (s.state == gram::JobState::kFailed) {
      s.failure = gt5::MapFailure(parsed->error);
      s.failure_message =
          reply->size() > 3 && !(*reply)[3].empty()
              ? "GRAM error " + std::to_string(parsed->error) + ": " + ForLog((*reply)[3])
              : "the GRAM5 job failed (error " + std::to_string(parsed->error) + ")";
    } else if (s.state == gram::JobState::kDone && !OutputCameBack(r)) {
      // GRAM says DONE as soon as the job has ended, before its job manager has sent the output
      // (and a commit-end then would lose it): done only once every output file has reached the
      // helper. A job manager restarted under a running job never sends it (Debian 12's
      // globus-gram-job-manager 15.8 ends a reloaded job without staging out); output that does
      // not come in time is held. The job ran: never sent again. Nor does one restarted after
      // a failed stage-out that says DONE without it: such a job manager sends before it says
      // DONE, and the helper marks each write as it ends.
      bool reloaded = shared_->At(r.job_id) != r.job_id;
      int retried = shared_->Retries(r.job_id);
      auto waited = shared_->WaitingForOutput(r.job_id);
      if (!reloaded && retried == 0 && waited < kOutputWait) {
        s.state = gram::JobState::kStageOut;
        return SiteAnswer{.job = std::move(s)};
      }
      s.state = gram::JobState::kFailed;
      s.failure = gram::FailureCode::kStageOutFailed;
      std::string ran = "the job ran at the GRAM5 site (exit code " +
                        (parsed->exit ? std::to_string(*parsed->exit) : std::string("unknown")) +
                        "), but ";
      if (reloaded) {
        s.failure_message =
            ran + "its job manager was restarted while it ran and its output did not come back";
      } else if (retried > 0) {
        s.failure_message = ran +
                            "its job manager's stage-out failed (GRAM error 155) and, restarted, "
                            "it sent nothing: is an output file missing, or a folder?";
      } else {
        s.failure_message = ran + "its output did not come back";
      }
    } else if (s.state == gram::JobState::kDone) {
      if (!parsed->exit) {
        spdlog::warn("gridmanager: GRAM5 job {} is done and its site gives no exit code: 0",
                     r.job_id);
      }
      s.exit = gram::ExitInfo{.signaled = false, .code = parsed->exit.value_or(0)};
    }
    return SiteAnswer{.job = std::move(s)};
  }

  // Whether every file the job sends here (stdout, stderr, transfer_output_files) has been
  // written: a completed write is marked on disk by the helper that took it, and a job manager
  // sends every one, empty or not.
  bool OutputCameBack(const SiteRequest& r) {
    for (const auto& name : OutputNames(r)) {
      if (!helper_.Written(name)) return false;
    }
    return true;
  }
  std::vector<std::string> OutputNames(const SiteRequest& r) {
    std::vector<std::string> names;
    auto gass = helper_.GassBase();
    if (r.files && gass) {
      if (auto job = gt5::DescribeJob(r.job, *r.files, *gass, key_, Base(r.request_id))) {
        for (const auto& f : job->served) {
          if (f.mode == 'W') names.push_back(f.name);
        }
        return names;
      }
    }
    return gt5::StdioNames(r.job, key_, Base(r.request_id));
  }

  // Stops the job manager of the job at `at`: it keeps the job's state on disk and takes a
  // restart of the job at once (GRAM's own tests restart right after the stop).
  bool Stop(const SiteRequest& r, const std::string& at) {
    if (auto stop = helper_.Call({"STOP", at}); !stop) {
      spdlog::warn("gridmanager: GRAM5 job {}: its job manager did not stop: {}", r.job_id,
                   stop.error().message());
      return false;
    }
    return true;
  }

  Result<SiteAnswer> Cancel(const SiteRequest& r) {
    if (r.only_pending) {
      auto now = StatusOf(r);
      if (!now) return now;
      auto st = now->job.state;
      if (st != gram::JobState::kPendingCommit && st != gram::JobState::kStageIn &&
          st != gram::JobState::kPending) {
        return Fail(ErrorCode::kConflict,
                    "GRAM5 job " + r.job_id + " has started: left to run where it is");
      }
    }
    auto st = helper_.Call({"CANCEL", shared_->At(r.job_id)});
    if (!st && st.error().code() != ErrorCode::kNotFound) return Fail(st.error());
    auto now = StatusOf(r);
    if (!now && now.error().code() == ErrorCode::kNotFound) {
      // The job manager has let the job go: it is gone at the site.
      gram::JobStatus s{.job_id = r.job_id,
                        .contact = r.job_id,
                        .state = gram::JobState::kFailed,
                        .seq = NowSeq(),
                        .failure = gram::FailureCode::kCancelled,
                        .failure_message = "cancelled at the GRAM5 gatekeeper"};
      return SiteAnswer{.job = std::move(s)};
    }
    return now;
  }

  // A new gridmanager run: the job's files are served again (under the same names; the helper
  // keeps its port when it can).
  Result<SiteAnswer> Signal(const SiteRequest& r) {
    auto job = Serve(r, Base(r.request_id));
    if (!job) return Fail(job.error());
    return StatusOf(r);
  }

  Result<SiteAnswer> CommitEnd(const SiteRequest& r) {
    auto st = helper_.Call({"END", shared_->At(r.job_id)});
    // A job manager still finishing the job (its last output written, its state not yet
    // changed) refuses the commit-end for a moment; one that never gets it keeps the job's
    // files at the site until its two-phase timeout.
    auto until = std::chrono::steady_clock::now() + kEndWait;
    while (!st && gt5::IsGramError(st.error(), gt5::kErrorJobQueryDenial) &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      st = helper_.Call({"END", shared_->At(r.job_id)});
    }
    if (!st && st.error().code() != ErrorCode::kNotFound && SiteDown(st.error())) {
      return Fail(st.error());
    }
    if (r.files) {
      auto gass = helper_.GassBase();
      auto job = gass ? gt5::DescribeJob(r.job, *r.files, *gass, key_, Base(r.request_id))
                      : Result<gt5::Gt5Job>(Fail(gass.error()));
      if (job) {
        for (const auto& f : job->served) {
          helper_.Forget(f.name);
          (void)helper_.Call({"FORGET", f.name});
        }
      }
    }
    std::lock_guard lock(shared_->mu);
    shared_->contacts.erase(r.job_id);
    shared_->retries.erase(r.job_id);
    shared_->done_since.erase(r.job_id);
    return SiteAnswer{};
  }

  void Track(const std::string& contact) {
    std::lock_guard lock(shared_->mu);
    shared_->contacts.insert(contact);
  }

  const std::string gatekeeper_;
  const std::string proxy_;
  const std::string key_;
  std::shared_ptr<SiteShared> shared_;
  Helper& helper_;
  asio::thread_pool& pool_;
  asio::io_context& io_;
};

}  // namespace

std::string Gt5Contact(const GridResource& site) {
  return site.HostPort() + "/" + (site.batch.empty() ? "jobmanager" : site.batch);
}

Result<std::shared_ptr<SiteLink>> MakeGt5Link(const GridResource& site,
                                              const LinkContext& context) {
  if (context.proxy_file.empty() || context.home.empty()) {
    return Fail(ErrorCode::kInternal, "a GRAM5 link needs the proxy file and KITE_HOME");
  }
  // What must outlive this gridmanager: the key that names served files, and the port they are
  // served on. One folder per proxy file and site.
  std::string root = context.home + "/gt5";
  if (auto st = MakeDirs(root, 0700); !st) return Fail(st.error());
  auto key = LoadOrCreateSecret(root + "/gass.key", "the GRAM5 file-naming key");
  if (!key) return Fail(key.error());
  std::string dir = root + "/" + gt5::ServedName(*key, context.proxy_file, Gt5Contact(site));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(ErrorCode::kIo, "cannot make " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  return std::make_shared<Gt5SiteLink>(Gt5Contact(site), context.proxy_file, *key,
                                       SharedFor(context.proxy_file, dir, context.news),
                                       *context.pool, *context.io);
}

}  // namespace kite::grid
