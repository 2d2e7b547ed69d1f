// The startd's engine: the connection, the agent's messages, the runs' lives, the slots' ads.
#include "glidein/startd.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "classad/io.h"
#include "common/clock.h"
#include "common/exec_launch.h"
#include "common/files.h"
#include "glidein/machine.h"
#include "glidein/run_spec.h"

namespace kite::glidein {
namespace {

namespace asio = boost::asio;
using pool::Message;
using pool::MsgType;

constexpr double kTick = 0.25;            // seconds between looks at runs, lifetime and idleness
constexpr double kMaxBackoff = 30;        // seconds, the longest wait before redialling
constexpr double kHandshakeTimeout = 30;  // seconds from connect to `welcome`
constexpr size_t kMaxQueued = 4;          // output frames queued ahead of the socket

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// How a reaped process ended, for a log line or a reason.
std::string DescribeWaitStatus(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

Message About(MsgType type, const pool::RunRef& r, std::string reason = {}) {
  return Message{.type = type, .slot = r.slot, .job = r.job, .run = r.run, .reason = reason};
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

Startd::~Startd() = default;

Status Startd::Start() {
  if (auto st = MakeDirs(o_.work, 0700); !st) return st;
  machine_ = HostName();
  arch_ = ArchName();
  if (o_.name.empty()) o_.name = machine_;
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
  link_ = std::make_shared<Link>(
      std::move(*stream), Link::Handlers{.frame = [this](pool::Frame f) { OnFrame(std::move(f)); },
                                         .closed = [this](const Error& e) { OnClosed(e); },
                                         .drained = [this] { Pump(); }});
  link_->Start();
  Message hello{.type = MsgType::kHello, .name = o_.name};
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
  for (auto& [id, r] : runs_)
    if (r.phase == RunPhase::kReceiving) receiving.push_back(id);
  for (const auto& id : receiving) Drop(runs_.at(id));
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
      return OnInput(m, f.body);
    case MsgType::kGo:
      return OnGo(m);
    case MsgType::kVacate:
      return OnVacate(m);
    case MsgType::kAck:
      return OnAck(m);
    default:
      spdlog::warn("startd: ignoring '{}' from the agent", pool::MsgTypeName(m.type));
  }
}

// ---- the agent's messages ----

void Startd::OnWelcome() {
  if (welcomed_) return;
  welcomed_ = true;
  lost_since_ = 0;
  handshake_.cancel();
  backoff_ = 0.2;
  spdlog::info("startd: the agent welcomed {} ({} run(s) on)", o_.name, runs_.size());
  for (auto& [id, r] : runs_) {
    if (Sending(r.phase)) RewindOutput(r);
    TellSuspension(r);  // a change made while the agent was away
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
  auto name = SandboxName(m.job, m.run);
  if (!name) return Refuse(m, name.error().message());
  auto box = Sandbox::Create(o_.work, *name);
  if (!box) return Refuse(m, "cannot make the sandbox: " + box.error().message());
  Run& r = runs_[m.run];
  r.ref = {m.slot, m.job, m.run};
  r.job = std::move(*job);
  r.files = m.files;
  r.box = std::move(*box);
  slot->run = m.run;
  spdlog::info("startd: {} takes job {} run {} ({} input file(s))", m.slot, m.job, m.run,
               m.files.size());
  SendSlot(*slot);
}

Run* Startd::FindRun(const Message& m) {
  auto it = runs_.find(m.run);
  if (it != runs_.end() && it->second.ref.job == m.job) return &it->second;
  spdlog::warn("startd: '{}' for job {} run {}, which is not here", pool::MsgTypeName(m.type),
               m.job, m.run);
  Send(About(MsgType::kVacated, {m.slot, m.job, m.run}, "no such run here"));
  return nullptr;
}

void Startd::OnInput(const Message& m, const std::string& body) {
  Run* r = FindRun(m);
  if (r == nullptr) return;
  if (r->phase != RunPhase::kReceiving) {
    spdlog::warn("startd: input for run {} after go; ignored", m.run);
    return;
  }
  if (auto st = r->box.Write(m.path, m.offset, body, m.mode, m.last); !st) {
    Refuse(About(MsgType::kRefused, r->ref), "input '" + m.path + "': " + st.error().message());
    Drop(*r);
  }
}

void Startd::OnGo(const Message& m) {
  Run* r = FindRun(m);
  if (r == nullptr) return;
  if (r->phase != RunPhase::kReceiving) {
    spdlog::warn("startd: a second go for run {}; ignored", m.run);
    return;
  }
  if (auto st = CheckInputs(*r); !st) {
    Refuse(About(MsgType::kRefused, r->ref), st.error().message());
    return Drop(*r);
  }
  Launch(*r, false);
}

// The first launch of a run, or (`again`) the launch after a checkpoint: in the same sandbox,
// its output appended to, and the agent already knows it runs.
void Startd::Launch(Run& r, bool again) {
  Slot* slot = FindSlot(r.ref.slot);
  RunPlace place{world_.exec_path, r.ref.slot, o_.cpus_per_slot, world_.env};
  auto launch = BuildRunLaunch(r.job, r.box, place);
  if (!launch) {
    Refuse(About(MsgType::kRefused, r.ref), launch.error().message());
    return Drop(r);
  }
  launch->append = again;
  if (!again) r.before = TopLevelFiles(r.box.fd());
  auto pid = LaunchUnderExec(*launch);
  if (!pid) {
    std::string why = "cannot start kite-exec: " + pid.error().message();
    if (!again) {
      Refuse(About(MsgType::kRefused, r.ref), why);
    } else {
      Send(About(MsgType::kVacated, r.ref, why));  // the checkpoint is home: it resumes elsewhere
    }
    return Drop(r);
  }
  r.pid = *pid;
  r.launched_at = WallNow();
  if (!again) r.first_launch = r.launched_at;
  r.phase = RunPhase::kRunning;
  spdlog::info("startd: job {} run {} {} on {} (pid {})", r.ref.job, r.ref.run,
               again ? "started again from its checkpoint" : "started", r.ref.slot, r.pid);
  if (!again) Send(About(MsgType::kStarted, r.ref));
  if (slot) SendSlot(*slot);
}

void Startd::OnVacate(const Message& m) {
  Run* r = FindRun(m);
  if (r == nullptr) return;
  Stop(*r, m.reason.empty() ? "vacated by the agent" : m.reason);
}

// Receiving or Ended: nothing runs, so the run goes at once; Running: SIGTERM now, SIGKILL after
// the grace (Tick), `vacated` once the wrapper is reaped.
void Startd::Stop(Run& r, const std::string& reason) {
  if (r.phase == RunPhase::kStopping || exited_) return;
  spdlog::info("startd: vacating job {} run {}: {}", r.ref.job, r.ref.run, reason);
  r.stop_reason = reason;
  if (!HasProcesses(r.phase)) {
    Send(About(MsgType::kVacated, r.ref, reason));
    return Drop(r);
  }
  bool suspended = r.phase == RunPhase::kSuspended;
  r.phase = RunPhase::kStopping;
  r.stop_at = WallNow();
  ::kill(-r.pid, SIGTERM);
  if (suspended) ::kill(-r.pid, SIGCONT);  // a stopped process would never see the SIGTERM
  if (Slot* s = FindSlot(r.ref.slot)) SendSlot(*s);
}

// ---- the owner's policy ----

void Startd::ApplyPolicy() {
  std::vector<std::string> ids;
  for (const auto& [id, r] : runs_)
    if (HasProcesses(r.phase)) ids.push_back(id);
  double now = WallNow();
  for (const auto& id : ids) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    Run& r = it->second;
    Slot* slot = FindSlot(r.ref.slot);
    if (slot == nullptr) continue;
    Note(*slot);
    auto ad = BuildSlotAd(Facts(*slot));
    if (!ad) continue;
    if (r.phase == RunPhase::kStopping) {
      if (!r.killed && PolicySays(*ad, r.job, "Kill")) {
        spdlog::info("startd: run {}: {}; SIGKILL", id, PolicyText(*ad, "Kill"));
        ::kill(-r.pid, SIGKILL);
        r.killed = true;
      }
    } else if (r.retire_until > 0) {
      if (now >= r.retire_until) Stop(r, r.preempt_reason);
    } else if (PolicySays(*ad, r.job, "Preempt")) {
      r.preempt_reason = "preempted by the owner's policy (" + PolicyText(*ad, "Preempt") + ")";
      double retire = r.phase == RunPhase::kRunning ? RetirementTime(*ad, r.job) : 0;
      if (retire <= 0) {
        Stop(r, r.preempt_reason);
      } else {
        spdlog::info("startd: run {} {}; it may run {} s more", id, r.preempt_reason, retire);
        r.retire_until = now + retire;
        SendSlot(*slot);
      }
    } else if (r.phase == RunPhase::kRunning && PolicySays(*ad, r.job, "Suspend")) {
      Suspend(r, *ad);
    } else if (r.phase == RunPhase::kSuspended && PolicySays(*ad, r.job, "Continue")) {
      Resume(r);
    }
  }
}

void Startd::Suspend(Run& r, const classad::ClassAd& slot_ad) {
  spdlog::info("startd: suspending job {} run {}: {}", r.ref.job, r.ref.run,
               PolicyText(slot_ad, "Suspend"));
  ::kill(-r.pid, SIGSTOP);
  r.phase = RunPhase::kSuspended;
  r.ever_suspended = true;
  r.stop_reason = PolicyText(slot_ad, "Suspend");
  TellSuspension(r);
  if (Slot* s = FindSlot(r.ref.slot)) SendSlot(*s);
}

void Startd::Resume(Run& r) {
  spdlog::info("startd: job {} run {} goes on", r.ref.job, r.ref.run);
  ::kill(-r.pid, SIGCONT);
  r.phase = RunPhase::kRunning;
  r.stop_reason.clear();
  TellSuspension(r);
  if (Slot* s = FindSlot(r.ref.slot)) SendSlot(*s);
}

// The agent learns whether the run is suspended; said again after every reconnect for a run
// that ever was.
void Startd::TellSuspension(const Run& r) {
  if (!r.ever_suspended) return;
  if (r.phase == RunPhase::kSuspended) {
    Send(About(MsgType::kSuspended, r.ref, r.stop_reason));
  } else if (r.phase == RunPhase::kRunning) {
    Send(About(MsgType::kContinued, r.ref));
  }
}

void Startd::OnAck(const Message& m) {
  Run* r = FindRun(m);
  if (r == nullptr) return;
  if (m.checkpoint) {
    if (r->phase != RunPhase::kCheckpointing || !r->ended_sent) {
      spdlog::warn("startd: ack of a checkpoint that run {} has not sent; ignored", m.run);
      return;
    }
    return Launch(*r, true);
  }
  if (r->phase != RunPhase::kEnded || !r->ended_sent) {
    spdlog::warn("startd: ack for run {} before its end; ignored", m.run);
    return;
  }
  spdlog::info("startd: job {} run {} done", r->ref.job, r->ref.run);
  Drop(*r);
}

// ---- runs ----

void Startd::OnChildSignal() {
  ReapEnded();
  children_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
}

// Only our own wrappers are waited for (by pid), so a process embedding the startd (a test)
// keeps its other children.
void Startd::ReapEnded() {
  std::vector<std::pair<std::string, int>> ended;
  for (auto& [id, r] : runs_) {
    if (!HasProcesses(r.phase)) continue;
    int status = 0;
    if (::waitpid(r.pid, &status, WNOHANG) == r.pid) ended.emplace_back(id, status);
  }
  for (const auto& [id, status] : ended) {
    if (auto it = runs_.find(id); it != runs_.end()) Reap(it->second, status);
  }
}

void Startd::Reap(Run& r, int wait_status) {
  auto st = ReadExecStatus(r.box.control_dir());
  if (st) {
    r.exit = ExitOf(*st);
    r.usage = UsageOf(*st);
    if (r.checkpoints > 0) {  // the whole run: the launches before this one too
      r.usage.user_cpu += r.earlier.user_cpu;
      r.usage.sys_cpu += r.earlier.sys_cpu;
      r.usage.rss_kb = std::max(r.usage.rss_kb, r.earlier.rss_kb);
      r.usage.start = r.first_launch;
    }
  } else {
    // Killed with its job (SIGKILL to the group): the run lasted from its launch until now.
    r.usage = {.start = r.first_launch, .end = WallNow()};
  }
  if (!st && r.phase != RunPhase::kStopping) {
    // The wrapper (this run's starter) died without saying how the job ended: nobody knows,
    // so the run is lost, not failed. What is left of the job goes with it, and the agent
    // runs the job again (HTCondor's shadow does the same when its starter is gone).
    ::kill(-r.pid, SIGKILL);
    std::string why = "the job's wrapper (kite-exec, pid " + std::to_string(r.pid) + ") " +
                      DescribeWaitStatus(wait_status) + " before the job's end was known";
    spdlog::warn("startd: run {}: {}; vacated", r.ref.run, why);
    Message m = About(MsgType::kVacated, r.ref, why);
    m.usage = r.usage;
    Send(m);
    return Drop(r);
  }
  if (st && r.phase != RunPhase::kStopping && IsCheckpointExit(r.job, r.exit)) return Checkpoint(r);
  if (r.phase == RunPhase::kStopping) {
    Message m = About(MsgType::kVacated, r.ref, r.stop_reason);
    m.usage = r.usage;
    Send(m);
    Drop(r);
    return MaybeFinishLeaving();
  }
  Finished(r);
}

// The program exited with its CheckpointExitCode: its checkpoint files go to the agent, and once
// they are stored there (the agent's `ack` with `checkpoint`) it starts again, here.
void Startd::Checkpoint(Run& r) {
  std::vector<std::string> links, skipped;
  Snapshot after = TopLevelFiles(r.box.fd(), &links);
  r.outputs = SelectCheckpoint(r.job, r.before, after, &skipped);
  for (const auto& l : links)
    spdlog::warn("startd: run {}: '{}' is a symbolic link; not in the checkpoint", r.ref.run, l);
  for (const auto& s : skipped) spdlog::warn("startd: run {}: checkpoint: {}", r.ref.run, s);
  r.earlier = r.usage;
  ++r.checkpoints;
  r.phase = RunPhase::kCheckpointing;
  RewindOutput(r);
  spdlog::info("startd: job {} run {} checkpointed ({} file(s))", r.ref.job, r.ref.run,
               r.outputs.size());
  Pump();
}

void Startd::Finished(Run& r) {
  std::vector<std::string> links, skipped;
  Snapshot after = TopLevelFiles(r.box.fd(), &links);
  for (const auto& l : links)
    spdlog::warn("startd: run {}: '{}' is a symbolic link; not sent", r.ref.run, l);
  r.outputs = SelectOutputs(r.job.EvaluateString("TransferOutput"), r.before, after, &skipped);
  for (const auto& s : skipped) spdlog::warn("startd: run {}: {}", r.ref.run, s);
  r.phase = RunPhase::kEnded;
  RewindOutput(r);  // after a checkpoint, the same counters served its files
  spdlog::info("startd: job {} run {} ended ({} output file(s))", r.ref.job, r.ref.run,
               r.outputs.size());
  if (Slot* s = FindSlot(r.ref.slot)) SendSlot(*s);
  Pump();
}

void Startd::Drop(Run& r) {
  if (auto st = r.box.Remove(); !st)
    spdlog::warn("startd: removing the sandbox of run {}: {}", r.ref.run, st.error().ToString());
  Slot* s = FindSlot(r.ref.slot);
  std::string id = r.ref.run;
  runs_.erase(id);  // r is gone from here on
  if (s && s->run == id) {
    s->run.clear();
    SendSlot(*s);
  }
  idle_since_ = SteadyNow();
  if (!leaving_.empty()) MaybeFinishLeaving();
}

void Startd::Pump() {
  if (!Connected()) return;
  for (auto& [id, r] : runs_) {
    if (!Sending(r.phase)) continue;
    std::vector<std::string> skipped;
    while (link_->queued() < kMaxQueued) {
      auto frame = NextOutputFrame(r, &skipped);
      if (!frame) break;
      link_->Send(frame->first, frame->second);
    }
    for (const auto& s : skipped) spdlog::warn("startd: run {}: output {}; not sent", id, s);
    if (link_->queued() >= kMaxQueued) return;
  }
  if (!leaving_.empty()) MaybeFinishLeaving();
}

void Startd::KillStragglers() {
  double now = WallNow();
  for (auto& [id, r] : runs_) {
    if (r.phase == RunPhase::kStopping && !r.killed && now - r.stop_at >= o_.kill_grace) {
      spdlog::info("startd: run {} outlived its grace; SIGKILL", id);
      ::kill(-r.pid, SIGKILL);
      r.killed = true;
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
              .resource = o_.resource};
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
    const Run& r = it->second;
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
  ReapEnded();  // a lost SIGCHLD costs at most a tick
  if (!runs_.empty()) idle_since_ = now;
  KillStragglers();
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
  for (const auto& [id, r] : runs_) {
    if (HasProcesses(r.phase)) return;
    if (Connected() && !r.ended_sent) return;
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
  for (auto& [id, r] : runs_)
    if (HasProcesses(r.phase)) ::kill(-r.pid, SIGKILL);
  if (link_) link_->Close();
  link_.reset();
  tick_.cancel();
  redial_.cancel();
  handshake_.cancel();
  children_.cancel();
  if (world_.on_exit) world_.on_exit(code);
}

}  // namespace kite::glidein
