// The startd's engine: the connection, the agent's messages, the runs' lives, the slots' ads.
#include "glidein/startd.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/local/stream_protocol.hpp>
#include <cmath>
#include <thread>

#include "classad/io.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/strings.h"
#include "glidein/machine.h"
#include "glidein/sandbox.h"
#include "pool/credential.h"

namespace kite::glidein {
namespace {

namespace asio = boost::asio;
using pool::Message;
using pool::MsgType;

constexpr double kTick = 0.25;            // seconds between looks at runs, lifetime and idleness
constexpr double kMaxBackoff = 30;        // seconds, the longest wait before redialling
constexpr double kHandshakeTimeout = 30;  // seconds from connect to `welcome`
constexpr size_t kMaxQueued = 4;          // frames queued ahead of the agent's socket

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

Startd::Startd(asio::io_context& io, StartdOptions options, World world)
    : io_(io),
      o_(std::move(options)),
      world_(std::move(world)),
      tick_(io),
      redial_(io),
      handshake_(io),
      children_(io, SIGCHLD) {}

// A startd that did not exit (a test stopping its io_context) takes its starters and their jobs
// with it, so nothing of it outlives the object.
Startd::~Startd() {
  for (auto& [id, p] : runs_)
    if (p.group > 0) ::kill(-p.group, SIGKILL);
  for (auto& s : slots_) {
    if (s.starter <= 0) continue;
    ::kill(s.starter, SIGKILL);
    ::waitpid(s.starter, nullptr, 0);
  }
}

Status Startd::Start() {
  if (auto st = MakeDirs(o_.work, 0700); !st) return st;
  machine_ = HostName();
  arch_ = ArchName();
  if (o_.name.empty()) o_.name = machine_;
  if (!o_.credential.empty()) o_.credential = AbsolutePath(o_.credential);
  if (o_.memory_mib == 0) o_.memory_mib = MemTotalMiB();
  if (o_.disk_kib == 0) o_.disk_kib = FreeDiskKiB(o_.work);
  int64_t now = static_cast<int64_t>(WallNow());
  for (int i = 1; i <= o_.slots; ++i) {
    slots_.push_back(
        {.id = i, .name = SlotName(i, o_.name), .state_since = now, .activity_since = now});
  }
  if (auto ad = BuildSlotAd(Facts(slots_.front())); !ad) return Fail(ad.error());
  started_at_ = idle_since_ = lost_since_ = SteadyNow();
  children_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
  spdlog::info("startd {}: {} slot(s) of {} cpu(s), {} MiB, {} KiB; agent {}", o_.name, o_.slots,
               o_.cpus_per_slot, o_.memory_mib / o_.slots, o_.disk_kib / o_.slots, o_.agent);
  Tick();
  Dial();
  return {};
}

// ---- the connection ----

void Startd::Dial() {
  if (exited_ || dialing_ || link_) return;
  dialing_ = true;
  world_.dialer->Dial([this](auto s) { OnDialed(std::move(s)); });
}

void Startd::OnDialed(Result<std::unique_ptr<ByteStream>> stream) {
  dialing_ = false;
  if (exited_) return;
  if (!stream && stream.error().code() == ErrorCode::kAuthFailed) {
    // Not the agent this startd works for (Dialer): as good as a refuse.
    spdlog::error("startd: refusing the agent: {}", stream.error().message());
    return Exit(kExitRefused);
  }
  if (!stream) {
    spdlog::warn("startd: {}; again in {:.1f} s", stream.error().ToString(), backoff_);
    return Redial();
  }
  link_ = std::make_shared<pool::Link>(
      std::move(*stream),
      pool::Link::Handlers{.frame = [this](pool::Frame f) { OnFrame(std::move(f)); },
                           .closed = [this](const Error& e) { OnClosed(e); },
                           .drained = [this] { Pump(); }});
  link_->Start();
  Message hello{.type = MsgType::kHello, .name = o_.name};
  if (!o_.credential.empty()) {
    // Read anew for each dial: a credential the agent reissued meanwhile is the one presented.
    auto text = ReadFile(o_.credential, {.max_bytes = pool::kMaxCredentialBytes + 64});
    if (text) {
      hello.credential = std::string(Trim(*text));
    } else {
      spdlog::warn("startd: cannot read the pool credential: {}", text.error().ToString());
    }
  }
  for (auto& s : slots_) {
    Note(s);
    hello.slots.push_back({s.name, SlotAdText(s)});
  }
  for (const auto& [id, r] : runs_) hello.runs.push_back(r.ref);
  link_->Send(hello);
  handshake_.expires_after(Ms(kHandshakeTimeout));
  handshake_.async_wait([this](auto ec) {
    if (!ec && link_ && !welcomed_)
      OnClosed(Error(ErrorCode::kTimeout, "no welcome from the agent"));
  });
}

void Startd::OnClosed(const Error& e) {
  if (link_) link_->Close();
  link_.reset();
  welcomed_ = false;
  handshake_.cancel();
  spdlog::warn("startd: lost the agent: {}", e.ToString());
  if (lost_since_ == 0) lost_since_ = SteadyNow();
  // A run still receiving its input cannot finish receiving it: the agent starts over.
  std::vector<std::string> receiving;
  for (auto& [id, p] : runs_)
    if (p.phase == RunPhase::kReceiving) receiving.push_back(id);
  for (const auto& id : receiving) {
    ToStarter(runs_.at(id), About(MsgType::kVacate, runs_.at(id).ref, "the agent is gone"));
    Detach(id);
  }
  if (!leaving_.empty()) return MaybeFinishLeaving();
  Redial();
}

void Startd::Redial() {
  if (o_.agent_gone_timeout > 0 && SteadyNow() - lost_since_ >= o_.agent_gone_timeout) {
    return Leave("no agent for " + std::to_string(static_cast<int64_t>(o_.agent_gone_timeout)) +
                 " s");
  }
  double wait = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  redial_.expires_after(Ms(wait));
  redial_.async_wait([this](auto ec) {
    if (!ec) Dial();
  });
}

void Startd::Send(const Message& m, std::string_view body) {
  if (link_) link_->Send(m, body);
}

void Startd::OnFrame(pool::Frame f) {
  const Message& m = f.msg;
  if (!welcomed_ && m.type != MsgType::kWelcome && m.type != MsgType::kRefuse) {
    return OnClosed(Error(ErrorCode::kProtocol,
                          "'" + std::string(pool::MsgTypeName(m.type)) + "' before welcome"));
  }
  switch (m.type) {
    case MsgType::kWelcome:
      return OnWelcome();
    case MsgType::kRefuse:
      spdlog::error("startd: the agent refused this startd: {}", m.reason);
      return Exit(kExitRefused);
    case MsgType::kActivate:
      return OnActivate(m);
    case MsgType::kInput:
    case MsgType::kGo:
    case MsgType::kRscReply:
    case MsgType::kCheckpoint:
      return OnToStarter(f);
    case MsgType::kVacate:
      return OnVacate(m);
    case MsgType::kAck:
      return OnAck(m);
    default:
      spdlog::warn("startd: ignoring '{}' from the agent", pool::MsgTypeName(m.type));
  }
}

// ---- the agent's messages ----

void Startd::SendStarted(const Placed& p) {
  Message started = About(MsgType::kStarted, p.ref);
  started.remote_io = p.remote_io;
  Send(started);
}

void Startd::OnWelcome() {
  if (welcomed_) return;
  welcomed_ = true;
  lost_since_ = 0;
  handshake_.cancel();
  backoff_ = 0.2;
  spdlog::info("startd: the agent welcomed {} ({} run(s) on)", o_.name, runs_.size());
  // The agent may have lost what was sent: each starter says it all again (its suspension, its
  // output and end), and what it had sent before that is dropped.
  for (auto& [id, p] : runs_) {
    // Its start too: the agent counts a run's start once, when it hears of it.
    if (p.started_sent) SendStarted(p);
    p.rewinding = true;
    p.ended_sent = false;
    ToStarter(p, Message{.type = MsgType::kRewind});
  }
  Pump();
}

Startd::Slot* Startd::FindSlot(const std::string& name) {
  for (auto& s : slots_)
    if (s.name == name) return &s;
  return nullptr;
}

Status Startd::CanActivate(const Message& m, Slot** slot) {
  if (!leaving_.empty()) return Fail(ErrorCode::kConflict, "the glide-in is leaving: " + leaving_);
  *slot = FindSlot(m.slot);
  if (*slot == nullptr) return Fail(ErrorCode::kNotFound, "no slot " + m.slot + " here");
  if (!(*slot)->run.empty()) return Fail(ErrorCode::kConflict, m.slot + " is busy");
  if (runs_.contains(m.run)) return Fail(ErrorCode::kConflict, "run " + m.run + " is here already");
  return {};
}

void Startd::Refuse(const Message& m, const std::string& reason) {
  spdlog::warn("startd: refused job {} run {} on {}: {}", m.job, m.run, m.slot, reason);
  Send(About(MsgType::kRefused, {m.slot, m.job, m.run}, reason));
}

void Startd::OnActivate(const Message& m) {
  Slot* slot = nullptr;
  if (auto st = CanActivate(m, &slot); !st) return Refuse(m, st.error().message());
  auto job = classad::ParseNewAd(m.ad);
  if (!job) return Refuse(m, "the job's ad does not parse: " + job.error().message());
  auto slot_ad = BuildSlotAd(Facts(*slot));
  if (!slot_ad) return Refuse(m, slot_ad.error().message());
  if (auto st = StartAllows(*slot_ad, *job); !st) return Refuse(m, st.error().message());
  if (auto name = SandboxName(m.job, m.run); !name) return Refuse(m, name.error().message());
  if (slot->starter <= 0) {
    if (auto st = SpawnStarter(*slot); !st)
      return Refuse(m, "cannot start kite-starter: " + st.error().message());
  }
  Placed& p = runs_[m.run];
  p.ref = {m.slot, m.job, m.run};
  p.job = std::move(*job);
  slot->run = m.run;
  ToStarter(p, m);
  spdlog::info("startd: {} takes job {} run {} ({} input file(s); starter pid {})", m.slot, m.job,
               m.run, m.files.size(), slot->starter);
  SendSlot(*slot);
}

// The slot's kite-starter, with one end of a socket pair as its descriptor 3; the startd keeps the
// other. It stays for the slot's later runs: a process per run would cost more CPU than the rest
// of a short job's handling here (docs/startd.md, "The starter").
Status Startd::SpawnStarter(Slot& slot) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return FailErrno("socketpair");
  std::vector<std::string> args = {world_.starter_path,
                                   "--work",
                                   o_.work,
                                   "--cpus",
                                   std::to_string(o_.cpus_per_slot),
                                   "--kill-grace",
                                   ExactNumber(o_.kill_grace),
                                   "--log-level",
                                   o_.log_level};
  if (!o_.log_file.empty()) args.insert(args.end(), {"--log", o_.log_file});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto 3 clears close-on-exec; the child's end is never 3 itself (0-2 are taken and the
  // pair is made after the startd's own descriptors).
  posix_spawn_file_actions_adddup2(&actions, fds[1], 3);
  // Nothing else of the startd's: a starter holding the agent's connection would keep it open
  // after the startd died, and the agent would not see the startd go.
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    return FailErrno("spawn " + world_.starter_path, err);
  }
  slot.starter = pid;
  boost::asio::local::stream_protocol::socket socket(io_);
  socket.assign(boost::asio::local::stream_protocol(), fds[0]);
  std::string name = slot.name;
  slot.starter_link = std::make_shared<pool::Link>(
      std::make_unique<pool::AsioByteStream<boost::asio::local::stream_protocol::socket>>(
          std::move(socket)),
      pool::Link::Handlers{
          .frame = [this, name](pool::Frame f) { OnStarterFrame(name, std::move(f)); },
          .closed = [this, name](const Error& e) { OnStarterGone(name, e.message()); }},
      "the starter of " + name);
  slot.starter_link->Start();
  return {};
}

void Startd::ToStarter(const Placed& p, const Message& m, std::string_view body) {
  Slot* slot = FindSlot(p.ref.slot);
  if (slot && slot->starter_link) slot->starter_link->Send(m, body);
}

Startd::Placed* Startd::FindRun(const Message& m) {
  auto it = runs_.find(m.run);
  if (it != runs_.end() && it->second.ref.job == m.job) return &it->second;
  spdlog::warn("startd: '{}' for job {} run {}, which is not here", pool::MsgTypeName(m.type),
               m.job, m.run);
  // A `vacate` waits for an answer. The `input` and `go` the agent sends right behind an
  // `activate` that was refused need none (and, naming no slot, could not carry one).
  if (!m.slot.empty()) Send(About(MsgType::kVacated, {m.slot, m.job, m.run}, "no such run here"));
  return nullptr;
}

void Startd::OnToStarter(const pool::Frame& f) {
  if (Placed* p = FindRun(f.msg)) ToStarter(*p, f.msg, f.body);
}

void Startd::OnVacate(const Message& m) {
  Placed* p = FindRun(m);
  if (p == nullptr) return;
  Stop(*p, m.reason.empty() ? "vacated by the agent" : m.reason);
}

// The starter stops the program (SIGTERM, then SIGKILL after the grace) and says `vacated`.
void Startd::Stop(Placed& p, const std::string& reason) {
  if (p.phase == RunPhase::kStopping || exited_) return;
  spdlog::info("startd: vacating job {} run {}: {}", p.ref.job, p.ref.run, reason);
  p.phase = RunPhase::kStopping;
  ToStarter(p, About(MsgType::kVacate, p.ref, reason));
  if (Slot* s = FindSlot(p.ref.slot)) SendSlot(*s);
}

void Startd::OnAck(const Message& m) {
  Placed* p = FindRun(m);
  if (p == nullptr) return;
  ToStarter(*p, m);
  if (m.checkpoint) {
    if (p->phase == RunPhase::kCheckpointing) p->phase = RunPhase::kRunning;
    if (Slot* s = FindSlot(p->ref.slot)) SendSlot(*s);
    return;
  }
  if (p->phase != RunPhase::kEnded) {
    spdlog::warn("startd: ack for run {} before its end; ignored", m.run);
    return;
  }
  spdlog::info("startd: job {} run {} done", p->ref.job, p->ref.run);
  Detach(p->ref.run);  // the slot takes the next job now
}

// ---- the starters ----

void Startd::OnStarterFrame(const std::string& slot_name, pool::Frame f) {
  Slot* slot = FindSlot(slot_name);
  if (slot == nullptr || slot->run.empty()) return;  // about a run that is over: no news
  std::string id = slot->run;
  Placed& p = runs_.at(id);
  const Message& m = f.msg;
  if (p.rewinding) {
    if (m.type == MsgType::kRewound) p.rewinding = false;
    return;
  }
  if (m.type == MsgType::kRewound) return;
  if (m.run != id || m.job != p.ref.job) return;  // about an earlier run on the slot
  // The slot's ad follows the run's phase, and goes to the agent before the news that changed it.
  auto phase = [&](RunPhase to) {
    if (p.phase == to) return;
    p.phase = to;
    SendSlot(*slot);
  };
  switch (m.type) {
    case MsgType::kStarted:
      p.group = static_cast<pid_t>(m.pid);
      if (p.phase == RunPhase::kReceiving || p.phase == RunPhase::kCheckpointing)
        phase(RunPhase::kRunning);
      p.last_periodic = WallNow();  // a start again comes after a checkpoint
      if (!p.started_sent) {
        p.started_sent = true;
        p.remote_io = m.remote_io;
        SendStarted(p);
      }
      break;
    case MsgType::kSuspended:
      if (p.phase == RunPhase::kRunning) phase(RunPhase::kSuspended);
      Relay(p, f);
      break;
    case MsgType::kContinued:
      if (p.phase == RunPhase::kSuspended) phase(RunPhase::kRunning);
      Relay(p, f);
      break;
    case MsgType::kOutput:
      // Its program's first output ends the run, unless it is streamed while the program runs.
      if (!m.streaming && (p.phase == RunPhase::kRunning || p.phase == RunPhase::kSuspended))
        phase(m.checkpoint ? RunPhase::kCheckpointing : RunPhase::kEnded);
      Relay(p, f);
      break;
    case MsgType::kCheckpointed:
      phase(RunPhase::kCheckpointing);
      Relay(p, f);
      break;
    case MsgType::kRsc:  // the program's remote system call, to the shadow
    case MsgType::kNotCheckpointed:
      Relay(p, f);
      break;
    case MsgType::kEnded:
      phase(RunPhase::kEnded);
      Relay(p, f);
      p.ended_sent = Connected();
      break;
    case MsgType::kVacated:
    case MsgType::kRefused:
      Relay(p, f);
      Detach(id);
      break;
    default:
      spdlog::warn("startd: ignoring '{}' from the starter of run {}", pool::MsgTypeName(m.type),
                   id);
      return;
  }
  if (!leaving_.empty()) MaybeFinishLeaving();
}

// To the agent, when there is one (after a reconnect the starter says it again). A starter whose
// frames fill the agent's queue waits until it drains (Pump): a big output file goes out at the
// connection's pace, not into the startd's memory.
void Startd::Relay(Placed& p, const pool::Frame& f) {
  if (!Connected()) return;
  link_->Send(f.msg, f.body);
  Slot* slot = FindSlot(p.ref.slot);
  if (link_->queued() >= kMaxQueued && slot && slot->starter_link) slot->starter_link->Pause();
}

void Startd::Pump() {
  if (!Connected()) return;
  for (auto& s : slots_) {
    if (link_->queued() >= kMaxQueued) return;
    if (s.starter_link) s.starter_link->Resume();
  }
  if (!leaving_.empty()) MaybeFinishLeaving();
}

// The starter's connection closed, or the process was reaped: it was killed (or left when told
// to). A run on the slot not yet over is lost with it: nobody can say how the job ends, so the
// job is killed and the agent runs it again (as HTCondor's shadow does when its starter is gone).
void Startd::OnStarterGone(const std::string& slot_name, const std::string& why) {
  Slot* slot = FindSlot(slot_name);
  if (slot == nullptr || !slot->starter_link) return;
  slot->starter_link->Close();
  slot->starter_link.reset();
  if (slot->starter > 0) {
    int status = 0;
    if (::waitpid(slot->starter, &status, WNOHANG) == slot->starter) slot->starter = 0;
  }
  // Still to be reaped: by pid, below (ReapStarters), and not given another run.
  if (slot->starter > 0) gone_starters_.push_back(slot->starter);
  slot->starter = 0;
  if (slot->run.empty()) return;
  std::string id = slot->run;
  Placed& p = runs_.at(id);
  if (p.group > 0) {
    ::kill(-p.group, SIGCONT);
    ::kill(-p.group, SIGKILL);
  }
  if (auto fd = ::open(o_.work.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    if (auto name = SandboxName(p.ref.job, p.ref.run); name) (void)RemoveBeneath(fd, *name);
    ::close(fd);
  }
  if (p.phase == RunPhase::kEnded && p.ended_sent) {
    // Its end is with the agent already; only the ack could not be passed on.
    spdlog::warn("startd: the starter of run {} is gone after the run's end ({})", id, why);
  } else {
    std::string reason =
        "the run's starter (kite-starter) went away before the job's end was known: " + why;
    spdlog::warn("startd: run {}: {}; vacated", id, reason);
    Send(About(MsgType::kVacated, p.ref, reason));
  }
  Detach(id);
  MaybeFinishLeaving();
}

void Startd::Detach(const std::string& run) {
  std::string id = run;  // `run` may be the ref of the entry erased below
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  std::string slot_name = it->second.ref.slot;
  runs_.erase(it);
  if (Slot* s = FindSlot(slot_name); s && s->run == id) {
    s->run.clear();
    SendSlot(*s);
  }
  idle_since_ = SteadyNow();
}

void Startd::OnChildSignal() {
  ReapStarters();
  children_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
}

// Only our own starters are waited for (by pid), so a process embedding the startd (a test)
// keeps its other children.
void Startd::ReapStarters() {
  std::vector<std::pair<std::string, int>> gone;
  for (auto& s : slots_) {
    int status = 0;
    if (s.starter > 0 && ::waitpid(s.starter, &status, WNOHANG) == s.starter) {
      s.starter = 0;
      gone.emplace_back(s.name, status);
    }
  }
  std::erase_if(gone_starters_, [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; });
  for (const auto& [slot, status] : gone) OnStarterGone(slot, "it " + DescribeWaitStatus(status));
}

// ---- the owner's policy ----

void Startd::ApplyPolicy() {
  std::vector<std::string> ids;
  for (const auto& [id, p] : runs_)
    if (HasProcesses(p.phase)) ids.push_back(id);
  double now = WallNow();
  for (const auto& id : ids) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    Placed& p = it->second;
    Slot* slot = FindSlot(p.ref.slot);
    if (slot == nullptr) continue;
    Note(*slot);
    auto ad = BuildSlotAd(Facts(*slot));
    if (!ad) continue;
    if (p.phase == RunPhase::kStopping) {
      if (!p.kill_sent && PolicySays(*ad, p.job, "Kill")) {
        spdlog::info("startd: run {}: {}; SIGKILL", id, PolicyText(*ad, "Kill"));
        ToStarter(p, Message{.type = MsgType::kKill});
        p.kill_sent = true;
      }
    } else if (p.retire_until > 0) {
      if (now >= p.retire_until) Stop(p, p.preempt_reason);
    } else if (PolicySays(*ad, p.job, "Preempt")) {
      p.preempt_reason = "preempted by the owner's policy (" + PolicyText(*ad, "Preempt") + ")";
      double retire = p.phase == RunPhase::kRunning ? RetirementTime(*ad, p.job) : 0;
      if (retire <= 0) {
        Stop(p, p.preempt_reason);
      } else {
        spdlog::info("startd: run {} {}; it may run {} s more", id, p.preempt_reason, retire);
        p.retire_until = now + retire;
        SendSlot(*slot);
      }
    } else if (p.phase == RunPhase::kRunning && IsTransparent(p.job) &&
               PolicySays(*ad, p.job, "PeriodicCheckpoint")) {
      spdlog::info("startd: job {} run {}: checkpoint ({})", p.ref.job, p.ref.run,
                   PolicyText(*ad, "PeriodicCheckpoint"));
      p.last_periodic = now;
      ToStarter(p, About(MsgType::kCheckpoint, p.ref,
                         "the owner's policy (" + PolicyText(*ad, "PeriodicCheckpoint") + ")"));
    } else if (p.phase == RunPhase::kRunning && PolicySays(*ad, p.job, "Suspend")) {
      spdlog::info("startd: suspending job {} run {}: {}", p.ref.job, p.ref.run,
                   PolicyText(*ad, "Suspend"));
      p.phase = RunPhase::kSuspended;  // the starter's `suspended` confirms it
      ToStarter(p, Message{.type = MsgType::kSuspend, .reason = PolicyText(*ad, "Suspend")});
      SendSlot(*slot);
    } else if (p.phase == RunPhase::kSuspended && PolicySays(*ad, p.job, "Continue")) {
      spdlog::info("startd: job {} run {} goes on", p.ref.job, p.ref.run);
      p.phase = RunPhase::kRunning;
      ToStarter(p, Message{.type = MsgType::kContinue});
      SendSlot(*slot);
    }
  }
}

// ---- slots, time, leaving ----

SlotFacts Startd::Facts(const Slot& s) const {
  SlotFacts f{.id = s.id,
              .startd = o_.name,
              .machine = machine_,
              .cpus = o_.cpus_per_slot,
              .memory_mib = o_.memory_mib / o_.slots,
              .disk_kib = o_.disk_kib / o_.slots,
              .arch = arch_,
              .load_avg = LoadAvg(),
              .keyboard_idle = KeyboardIdle(),
              .time_to_live = kNoInputDevice,
              .start = o_.start,
              .resource = o_.resource,
              .update_interval = o_.update_interval};
  if (o_.lifetime > 0) {
    double left = o_.lifetime - (SteadyNow() - started_at_);
    f.time_to_live = std::max<int64_t>(0, static_cast<int64_t>(std::floor(left)));
  }
  f.total_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& [id, r] : runs_) {
    if (r.phase == RunPhase::kRunning) f.total_condor_load += o_.cpus_per_slot;
  }
  auto it = s.run.empty() ? runs_.end() : runs_.find(s.run);
  if (it != runs_.end() && it->second.phase == RunPhase::kRunning) f.condor_load = o_.cpus_per_slot;
  if (it != runs_.end()) f.job = it->second.ref.job;
  if (it != runs_.end() && it->second.last_periodic > 0)
    f.last_periodic_checkpoint = static_cast<int64_t>(it->second.last_periodic);
  f.state = s.state;
  f.activity = s.activity;
  f.entered_state = s.state_since;
  f.entered_activity = s.activity_since;
  f.policy = o_.policy;
  return f;
}

void Startd::Note(Slot& s) {
  auto it = s.run.empty() ? runs_.end() : runs_.find(s.run);
  SlotState state = it == runs_.end() ? SlotState::kUnclaimed : SlotState::kClaimed;
  SlotActivity activity = SlotActivity::kIdle;
  if (it != runs_.end()) {
    const Placed& r = it->second;
    activity = r.phase == RunPhase::kRunning && r.retire_until > 0 ? SlotActivity::kRetiring
               : r.phase == RunPhase::kRunning                     ? SlotActivity::kBusy
               : r.phase == RunPhase::kSuspended                   ? SlotActivity::kSuspended
               : r.phase == RunPhase::kStopping                    ? SlotActivity::kRetiring
                                                                   : SlotActivity::kIdle;
  }
  auto now = static_cast<int64_t>(WallNow());
  if (state != s.state) s.state_since = now;
  if (state != s.state || activity != s.activity) s.activity_since = now;
  s.state = state;
  s.activity = activity;
}

std::string Startd::SlotAdText(const Slot& s) const {
  auto ad = BuildSlotAd(Facts(s));
  return ad ? classad::ToNewText(*ad) : "[]";  // START was checked at Start()
}

void Startd::SendSlot(Slot& s) {
  Note(s);
  if (Connected()) Send(Message{.type = MsgType::kSlot, .slot = s.name, .ad = SlotAdText(s)});
}

void Startd::Tick() {
  if (exited_) return;
  double now = SteadyNow();
  ReapStarters();  // a lost SIGCHLD costs at most a tick
  if (!runs_.empty()) idle_since_ = now;
  if (leaving_.empty() && o_.lifetime > 0 && now - started_at_ >= o_.lifetime)
    Leave("its lifetime of " + std::to_string(static_cast<int64_t>(o_.lifetime)) + " s is over");
  if (leaving_.empty() && o_.idle_timeout > 0 && runs_.empty() &&
      now - idle_since_ >= o_.idle_timeout)
    Leave("idle for " + std::to_string(static_cast<int64_t>(o_.idle_timeout)) + " s");
  if (now - last_policy_ >= 1) {
    last_policy_ = now;
    ApplyPolicy();
  }
  if (Connected() && now - last_update_ >= o_.update_interval) {
    last_update_ = now;
    for (auto& s : slots_) SendSlot(s);
  }
  if (exited_) return;
  tick_.expires_after(Ms(kTick));
  tick_.async_wait([this](auto ec) {
    if (!ec) Tick();
  });
}

void Startd::Leave(const std::string& why) {
  if (!leaving_.empty() || exited_) return;
  leaving_ = why;
  spdlog::info("startd: leaving: {}", why);
  std::vector<std::string> ids;
  for (const auto& [id, r] : runs_)
    if (r.phase != RunPhase::kEnded) ids.push_back(id);
  for (const auto& id : ids) Stop(runs_.at(id), "the glide-in is leaving: " + why);
  MaybeFinishLeaving();
}

// Leaving ends once nothing runs and every ended run's output went out (or there is no agent to
// send it to): then `bye`, and exit once it is written.
void Startd::MaybeFinishLeaving() {
  if (leaving_.empty() || exited_) return;
  for (const auto& [id, p] : runs_) {
    // A run still going (or sending its end) keeps the startd; an ended one whose end the agent
    // has is left to its starter, which goes when the startd does.
    if (p.phase != RunPhase::kEnded) return;
    if (Connected() && !p.ended_sent) return;
  }
  if (!Connected()) return Exit(kExitLeft);
  if (!bye_sent_) {
    bye_sent_ = true;
    Send(Message{.type = MsgType::kBye, .reason = leaving_});
  }
  if (link_->queued() == 0) Exit(kExitLeft);
}

void Startd::Exit(int code) {
  if (exited_) return;
  exited_ = true;
  spdlog::info("startd: exiting ({})", code);
  // Each starter sees its connection close, kills its job if one is left, removes its sandbox
  // and exits; a job whose starter cannot act on it in time goes now.
  for (auto& [id, p] : runs_)
    if (HasProcesses(p.phase) && p.group > 0) ::kill(-p.group, SIGKILL);
  for (auto& s : slots_)
    if (s.starter_link) s.starter_link->Close();
  if (link_) link_->Close();
  link_.reset();
  tick_.cancel();
  redial_.cancel();
  handshake_.cancel();
  children_.cancel();
  if (world_.on_exit) world_.on_exit(code);
}

}  // namespace kite::glidein
