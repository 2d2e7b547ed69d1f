// The starter's engine: one run's life in its sandbox (starter.h; the phases are run.h's).
#include "glidein/starter.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>

#include "classad/io.h"
#include "common/clock.h"
#include "common/exec_launch.h"
#include "common/files.h"
#include "glidein/run_spec.h"
#include "rsc/paths.h"
#include "rsc/roots.h"

namespace kite::glidein {
namespace {

namespace asio = boost::asio;
using pool::Message;
using pool::MsgType;

constexpr double kTick = 0.25;  // seconds between looks at the kill grace
// Seconds a program may take to write a transparent checkpoint before it counts as not taken.
constexpr double kCheckpointGrace = 300;
constexpr size_t kMaxQueued = 4;  // output frames queued ahead of the socket

void SetEnv(std::vector<std::string>& env, const std::string& k, const std::string& v) {
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(k + "="); });
  env.push_back(k + "=" + v);
}

// `lib` first in LD_PRELOAD (once).
void AddPreload(std::vector<std::string>& env, const std::string& lib) {
  std::string preload = lib;
  for (const auto& e : env) {
    if (!e.starts_with("LD_PRELOAD=") || e.size() <= 11) continue;
    std::string rest = e.substr(11);
    if (rest == lib || rest.starts_with(lib + ":")) return;
    preload += ":" + rest;
  }
  SetEnv(env, "LD_PRELOAD", preload);
}

// A small file's text ("" when it is not there).
std::string TextOf(const std::string& path) {
  auto text = ReadFile(path);
  return text ? *text : "";
}

double FileMtime(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
}

// The transparent checkpoint's image and the library's notes are never output; `image_too`:
// the image itself neither (it is a checkpoint file).
void DropCheckpointLeftovers(std::vector<OutputFile>& files, bool image_too) {
  std::string image = kCheckpointImage;
  std::erase_if(files, [&](const OutputFile& f) {
    return (image_too && f.path == image) || f.path.starts_with(image + ".");
  });
}

}  // namespace

Starter::Starter(asio::io_context& io, StarterOptions options, World world,
                 std::unique_ptr<pool::ByteStream> startd)
    : io_(io), o_(std::move(options)), world_(std::move(world)), tick_(io), children_(io, SIGCHLD) {
  link_ = std::make_shared<pool::Link>(
      std::move(startd),
      pool::Link::Handlers{.frame = [this](pool::Frame f) { OnFrame(std::move(f)); },
                           .closed = [this](const Error& e) { OnClosed(e); },
                           .drained = [this] { Pump(); }},
      "the startd");
}

Starter::~Starter() = default;

void Starter::Start() {
  children_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
  link_->Start();
  Tick();
}

void Starter::OnStopSignal(int sig) {
  if (!run_ || exited_) return;
  std::string why = std::string("the glide-in's processes were told to stop (") +
                    (sig == SIGINT ? "SIGINT" : "SIGTERM") + ")";
  if (HasProcesses(run_->phase)) {
    Stop(why);
  } else if (run_->phase == RunPhase::kReceiving) {
    Stop(why);  // nothing runs yet: vacated at once
  }
}

void Starter::Send(const Message& m, std::string_view body) {
  if (link_) link_->Send(m, body);
}

void Starter::OnFrame(pool::Frame f) {
  const Message& m = f.msg;
  if (m.type == MsgType::kRewind) return OnRewind();
  if (m.type == MsgType::kActivate) return OnActivate(m);
  // Everything else is about the run going on; what comes about an earlier one (a late `vacate`
  // or `ack`) is no news.
  if (!run_ || (!m.run.empty() && m.run != run_->ref.run)) {
    spdlog::debug("starter: '{}' for run {}, which is not going on; ignored",
                  pool::MsgTypeName(m.type), m.run);
    return;
  }
  switch (m.type) {
    case MsgType::kInput:
      return OnInput(m, f.body);
    case MsgType::kGo:
      return OnGo();
    case MsgType::kVacate:
      return Stop(m.reason.empty() ? "vacated by the agent" : m.reason);
    case MsgType::kAck:
      return OnAck(m);
    case MsgType::kSuspend:
      return Suspend(m.reason);
    case MsgType::kContinue:
      return Resume();
    case MsgType::kKill:
      return Kill();
    case MsgType::kCheckpoint:
      return AskCheckpoint(m.reason.empty() ? "asked by the agent (kite checkpoint)" : m.reason);
    case MsgType::kRscReply:
      if (rsc_) rsc_->Reply(m.chan, f.body);
      return;
    default:
      spdlog::warn("starter: ignoring '{}' from the startd", pool::MsgTypeName(m.type));
  }
}

// The startd is gone (killed, or it left without us): nobody would hear how the job ends, and the
// agent runs it again elsewhere, so the job goes now rather than run on unwatched.
void Starter::OnClosed(const Error& e) {
  if (exited_) return;
  if (run_ && HasProcesses(run_->phase)) {
    spdlog::warn("starter: run {}: {}; killing the job", run_->ref.run, e.ToString());
    ::kill(-run_->pid, SIGCONT);
    ::kill(-run_->pid, SIGKILL);
    int status = 0;
    ::waitpid(run_->pid, &status, 0);
  }
  bool orphaned = run_.has_value();
  if (run_) (void)run_->box.Remove();
  Exit(orphaned ? kStarterOrphaned : kStarterDone);
}

void Starter::OnActivate(const Message& m) {
  if (run_) {
    // The startd gives a slot's starter a run only once the last one is over: not expected.
    std::string why = "the slot's starter is still busy with run " + run_->ref.run;
    spdlog::warn("starter: refused job {} run {}: {}", m.job, m.run, why);
    return Send(About(MsgType::kRefused, {m.slot, m.job, m.run}, why));
  }
  auto refuse = [&](const std::string& why) {
    run_.emplace();
    run_->ref = {m.slot, m.job, m.run};
    Finish(About(MsgType::kRefused, run_->ref, why));
  };
  auto job = classad::ParseNewAd(m.ad);
  if (!job) return refuse("the job's ad does not parse: " + job.error().message());
  auto name = SandboxName(m.job, m.run);
  if (!name) return refuse(name.error().message());
  if (!m.in_place.empty()) {
    struct stat sb {};
    if (!m.files.empty()) return refuse("a run in place is sent no input files");
    if (::stat(m.in_place.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
      return refuse("cannot run in " + m.in_place + ": not a directory here");
  }
  auto box = Sandbox::Create(o_.work, *name);
  if (!box) return refuse("cannot make the sandbox: " + box.error().message());
  run_.emplace();
  run_->ref = {m.slot, m.job, m.run};
  run_->job = std::move(*job);
  run_->files = m.files;
  run_->in_place = m.in_place;
  run_->box = std::move(*box);
}

void Starter::OnInput(const Message& m, const std::string& body) {
  if (run_->phase != RunPhase::kReceiving) {
    spdlog::warn("starter: input for run {} after go; ignored", m.run);
    return;
  }
  if (m.checkpoint) run_->restored.insert(m.path);
  if (auto st = run_->box.Write(m.path, m.offset, body, m.mode, m.last); !st)
    Finish(About(MsgType::kRefused, run_->ref, "input '" + m.path + "': " + st.error().message()));
}

void Starter::OnGo() {
  if (run_->phase != RunPhase::kReceiving) {
    spdlog::warn("starter: a second go for run {}; ignored", run_->ref.run);
    return;
  }
  if (auto st = CheckInputs(*run_); !st)
    return Finish(About(MsgType::kRefused, run_->ref, st.error().message()));
  Launch(false);
}

// The first launch of the run, or (`again`) the launch after a checkpoint: in the same sandbox,
// its output appended to, and the agent already knows it runs.
void Starter::Launch(bool again) {
  Run& r = *run_;
  RunPlace place{world_.exec_path, r.ref.slot, o_.cpus, world_.env, r.in_place};
  auto launch = BuildRunLaunch(r.job, r.box, place);
  if (!launch) return Finish(About(MsgType::kRefused, r.ref, launch.error().message()));
  launch->append = again;
  if (!again) {
    r.before = TopLevelFiles(r.box.fd());
    // A stored checkpoint's files are the job's own work, not its input: each checkpoint holds
    // them all (changed since or not) and they go home at the end as what the job wrote.
    for (const auto& f : r.restored) r.before.erase(f);
  }
  bool remote_io = r.job.EvaluateBool("WantRemoteIO").value_or(false);
  bool transparent = IsTransparent(r.job);
  if (remote_io || transparent) {
    std::string why;
    bool ok = (!remote_io || StartRemoteIo(*launch, &why)) &&
              (!transparent || StartTransparent(*launch, &why));
    if (!ok) {
      // Said as the run's end, so the job is held with the reason rather than tried elsewhere.
      spdlog::warn("starter: job {} run {}: {}", r.ref.job, r.ref.run, why);
      r.exit = {pool::RunExit::Kind::kFailed, 0, why};
      r.usage = {.start = WallNow(), .end = WallNow()};
      return Finished();
    }
  }
  auto pid = LaunchUnderExec(*launch);
  if (!pid) {
    std::string why = "cannot start kite-exec: " + pid.error().message();
    // After a checkpoint the agent has it: the job resumes elsewhere.
    return Finish(About(again ? MsgType::kVacated : MsgType::kRefused, r.ref, why));
  }
  r.pid = *pid;
  r.launched_at = WallNow();
  r.checkpoint_asked = 0;
  r.checkpoint_clock = r.launched_at;
  r.tree_asked.clear();
  r.tree_taken = false;
  if (!again) r.first_launch = r.launched_at;
  r.phase = RunPhase::kRunning;
  spdlog::info("starter: job {} run {} {} on {} (pid {})", r.ref.job, r.ref.run,
               again ? "started again from its checkpoint" : "started", r.ref.slot, r.pid);
  Message started = About(MsgType::kStarted, r.ref);
  started.pid = r.pid;
  started.remote_io = r.remote_io;  // the startd's, to kill the job if this starter dies
  Send(started);
}

// Receiving, Ended or Checkpointing: nothing runs, so the run goes at once; Running: SIGTERM now,
// SIGKILL after the grace (Tick), `vacated` once the wrapper is reaped.
void Starter::Stop(const std::string& reason) {
  Run& r = *run_;
  if (r.phase == RunPhase::kStopping) return;
  spdlog::info("starter: vacating job {} run {}: {}", r.ref.job, r.ref.run, reason);
  r.stop_reason = reason;
  if (!HasProcesses(r.phase)) {
    // Its checkpoint on the way home goes on: the run is vacated once it is stored.
    if (r.phase == RunPhase::kCheckpointing && IsTransparent(r.job))
      return void(r.vacate_after_checkpoint = true);
    return Finish(About(MsgType::kVacated, r.ref, reason));
  }
  // A program with transparent checkpoints takes one first; the run is vacated once it is
  // stored (or stopped as any other when none comes of it).
  if (IsTransparent(r.job) && !r.vacate_after_checkpoint) {
    r.vacate_after_checkpoint = true;
    if (r.phase == RunPhase::kSuspended) {
      ::kill(-r.pid, SIGCONT);
      r.phase = RunPhase::kRunning;
    }
    if (r.checkpoint_asked == 0) AskCheckpoint("the run is vacated: " + reason);
    return;
  }
  bool suspended = r.phase == RunPhase::kSuspended;
  r.phase = RunPhase::kStopping;
  r.stop_at = WallNow();
  ::kill(-r.pid, SIGTERM);
  if (suspended) ::kill(-r.pid, SIGCONT);  // a stopped process would never see the SIGTERM
}

void Starter::Suspend(const std::string& reason) {
  Run& r = *run_;
  if (r.phase != RunPhase::kRunning) return;
  spdlog::info("starter: suspending job {} run {}: {}", r.ref.job, r.ref.run, reason);
  ::kill(-r.pid, SIGSTOP);
  r.phase = RunPhase::kSuspended;
  r.ever_suspended = true;
  r.stop_reason = reason;
  TellSuspension();
}

void Starter::Resume() {
  Run& r = *run_;
  if (r.phase != RunPhase::kSuspended) return;
  spdlog::info("starter: job {} run {} goes on", r.ref.job, r.ref.run);
  ::kill(-r.pid, SIGCONT);
  r.phase = RunPhase::kRunning;
  r.stop_reason.clear();
  TellSuspension();
}

void Starter::Kill() {
  Run& r = *run_;
  if (r.vacate_after_checkpoint && r.phase == RunPhase::kRunning) {
    // Vacated while writing its checkpoint: the owner's KILL does not wait for it.
    r.phase = RunPhase::kStopping;
    r.stop_at = WallNow();
  }
  if (r.phase != RunPhase::kStopping || r.killed) return;
  spdlog::info("starter: run {}: SIGKILL (the owner's KILL)", r.ref.run);
  ::kill(-r.pid, SIGKILL);
  r.killed = true;
}

// The agent learns whether the run is suspended; said again after every reconnect for a run
// that ever was.
void Starter::TellSuspension() {
  const Run& r = *run_;
  if (!r.ever_suspended) return;
  if (r.phase == RunPhase::kSuspended) {
    Send(About(MsgType::kSuspended, r.ref, r.stop_reason));
  } else if (r.phase == RunPhase::kRunning) {
    Send(About(MsgType::kContinued, r.ref));
  }
}

// A new connection to the agent: it may have lost what was sent. Everything after `rewound`
// replaces what came before it.
void Starter::OnRewind() {
  Send(Message{.type = MsgType::kRewound});
  if (!run_) return;
  TellSuspension();
  if (rsc_) rsc_->Resend();  // the calls the agent may not have had
  run_->streamed.clear();    // so is what was streamed: sent again from the start
  if (Sending(run_->phase)) {
    RewindOutput(*run_);
    Pump();
  }
}

void Starter::OnAck(const Message& m) {
  Run& r = *run_;
  if (m.checkpoint) {
    if (r.phase != RunPhase::kCheckpointing || !r.ended_sent) {
      spdlog::warn("starter: ack of a checkpoint that run {} has not sent; ignored", m.run);
      return;
    }
    if (r.vacate_after_checkpoint) {
      spdlog::info("starter: job {} run {} vacated after its checkpoint", r.ref.job, r.ref.run);
      Message v = About(MsgType::kVacated, r.ref, r.stop_reason);
      v.usage = r.earlier;
      return Finish(v);
    }
    return Launch(true);
  }
  // The agent acknowledges only an end it has stored: after a reconnect that may come while the
  // end is being said again.
  if (r.phase != RunPhase::kEnded) {
    spdlog::warn("starter: ack for run {} before its end; ignored", m.run);
    return;
  }
  spdlog::info("starter: job {} run {} done", r.ref.job, r.ref.run);
  Finish(std::nullopt);
}

void Starter::OnChildSignal() {
  if (run_ && HasProcesses(run_->phase)) {
    int status = 0;
    if (::waitpid(run_->pid, &status, WNOHANG) == run_->pid) Reap(status);
  }
  if (exited_) return;
  children_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
}

void Starter::Reap(int wait_status) {
  Run& r = *run_;
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
    // The wrapper died without saying how the job ended: nobody knows, so the run is lost, not
    // failed. What is left of the job goes with it, and the agent runs the job again.
    ::kill(-r.pid, SIGKILL);
    std::string why = "the job's wrapper (kite-exec, pid " + std::to_string(r.pid) + ") " +
                      DescribeWaitStatus(wait_status) + " before the job's end was known";
    spdlog::warn("starter: run {}: {}; vacated", r.ref.run, why);
    r.phase = RunPhase::kEnded;  // no processes left
    Message m = About(MsgType::kVacated, r.ref, why);
    m.usage = r.usage;
    return Finish(m);
  }
  std::string image = r.box.path() + "/" + kCheckpointImage;
  if (st && IsTransparent(r.job)) {
    // The library could not make the program the one in its image: said as the run's end, so
    // the job is held with the reason rather than started over and over.
    std::string failed = TextOf(image + ".failed");
    if (!failed.empty()) {
      ::unlink((image + ".failed").c_str());
      r.exit = {pool::RunExit::Kind::kFailed, 0,
                "checkpoint = transparent: cannot restore the checkpoint: " + failed};
      r.phase = RunPhase::kEnded;
      return Finished();
    }
  }
  bool taken = IsTransparent(r.job)
                   ? r.checkpoint_asked > 0 &&
                         (r.tree_taken || (r.exit.kind == pool::RunExit::Kind::kExited &&
                                           r.exit.code == kTransparentCheckpointExit &&
                                           FileMtime(image) >= r.launched_at - 1))
                   : IsCheckpointExit(r.job, r.exit);
  if (st && r.phase != RunPhase::kStopping && taken) return Checkpoint();
  if (r.phase == RunPhase::kStopping) {
    r.phase = RunPhase::kEnded;
    Message m = About(MsgType::kVacated, r.ref, r.stop_reason);
    m.usage = r.usage;
    return Finish(m);
  }
  Finished();
}

// The program exited with its CheckpointExitCode: its checkpoint files go to the agent, and once
// they are stored there (the agent's `ack` with `checkpoint`) it starts again, here.
void Starter::Checkpoint() {
  Run& r = *run_;
  std::vector<std::string> links, skipped;
  Snapshot after = TopLevelFiles(r.box.fd(), &links);
  r.outputs = SelectCheckpoint(r.job, r.before, after, &skipped);
  DropCheckpointLeftovers(r.outputs, /*image_too=*/false);
  for (const auto& l : links)
    spdlog::warn("starter: run {}: '{}' is a symbolic link; not in the checkpoint", r.ref.run, l);
  for (const auto& s : skipped) spdlog::warn("starter: run {}: checkpoint: {}", r.ref.run, s);
  r.earlier = r.usage;
  ++r.checkpoints;
  // A transparent one's image was whole when its program exited (a tree's: when put together).
  if (IsTransparent(r.job) && !r.tree_taken) r.checkpoint_took = WallNow() - r.checkpoint_asked;
  r.phase = RunPhase::kCheckpointing;
  RewindOutput(r);
  spdlog::info("starter: job {} run {} checkpointed ({} file(s))", r.ref.job, r.ref.run,
               r.outputs.size());
  Pump();
}

void Starter::Finished() {
  Run& r = *run_;
  std::vector<std::string> links, skipped;
  Snapshot after = TopLevelFiles(r.box.fd(), &links);
  for (const auto& l : links)
    spdlog::warn("starter: run {}: '{}' is a symbolic link; not sent", r.ref.run, l);
  r.outputs = SelectOutputs(r.job.EvaluateString("TransferOutput"), r.before, after, &skipped);
  if (IsTransparent(r.job)) DropCheckpointLeftovers(r.outputs, /*image_too=*/true);
  if (!r.in_place.empty()) r.outputs.clear();  // written where they belong already
  for (const auto& s : skipped) spdlog::warn("starter: run {}: {}", r.ref.run, s);
  r.phase = RunPhase::kEnded;
  RewindOutput(r);  // after a checkpoint, the same counters served its files
  spdlog::info("starter: job {} run {} ended ({} output file(s))", r.ref.job, r.ref.run,
               r.outputs.size());
  Pump();
}

void Starter::Pump() {
  if (!run_ || !Sending(run_->phase)) return;
  std::vector<std::string> skipped;
  while (link_ && link_->queued() < kMaxQueued) {
    auto frame = NextOutputFrame(*run_, &skipped);
    if (!frame) break;
    link_->Send(frame->first, frame->second);
  }
  for (const auto& s : skipped)
    spdlog::warn("starter: run {}: output {}; not sent", run_->ref.run, s);
}

void Starter::StreamOutput() {
  Run& r = *run_;
  const std::pair<std::string_view, const char*> streams[] = {{kStdoutName, "StreamOut"},
                                                              {kStderrName, "StreamErr"}};
  for (const auto& [name, attr] : streams) {
    if (!r.job.EvaluateBool(attr).value_or(false)) continue;
    auto reader = FileReader::Open(r.box.fd(), name);
    if (!reader) continue;  // a run in place writes the job's own file
    uint64_t& sent = r.streamed[std::string(name)];
    reader->SkipTo(sent);
    while (link_ && link_->queued() < kMaxQueued) {
      auto piece = reader->Next(pool::kChunk);
      if (!piece || piece->bytes.empty()) break;
      link_->Send(Message{.type = MsgType::kOutput,
                          .job = r.ref.job,
                          .run = r.ref.run,
                          .path = std::string(name),
                          .offset = piece->offset,
                          .streaming = true,
                          .mode = reader->mode()},
                  piece->bytes);
      sent += piece->bytes.size();
    }
  }
}

void Starter::Tick() {
  if (exited_) return;
  if (run_ && run_->phase == RunPhase::kRunning) StreamOutput();
  if (run_ && run_->phase == RunPhase::kRunning && IsTransparent(run_->job)) {
    Run& r = *run_;
    std::string refused = r.box.path() + "/" + kCheckpointImage + ".refused";
    double interval = r.job.EvaluateReal("CheckpointInterval").value_or(0);
    if (r.checkpoint_asked > 0 && r.tree) {
      PollTreeCheckpoint();
    } else if (r.checkpoint_asked > 0) {
      std::string why = TextOf(refused);
      if (!why.empty()) {
        ::unlink(refused.c_str());
        CheckpointNotTaken(why);
      } else if (WallNow() - r.checkpoint_asked > kCheckpointGrace) {
        CheckpointNotTaken("no checkpoint after " + std::to_string(int(kCheckpointGrace)) + " s");
      }
    } else if (interval > 0 && WallNow() - r.checkpoint_clock >= interval) {
      AskCheckpoint("its checkpoint_interval (" + std::to_string(int(interval)) + " s) passed");
    }
  }
  if (run_ && run_->phase == RunPhase::kStopping && !run_->killed &&
      WallNow() - run_->stop_at >= o_.kill_grace) {
    spdlog::info("starter: run {} outlived its grace; SIGKILL", run_->ref.run);
    ::kill(-run_->pid, SIGKILL);
    run_->killed = true;
  }
  tick_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(kTick * 1000)));
  tick_.async_wait([this](auto ec) {
    if (!ec) Tick();
  });
}

void Starter::Finish(std::optional<Message> last) {
  if (last) {
    if (last->type == MsgType::kRefused)
      spdlog::warn("starter: refused job {} run {}: {}", last->job, last->run, last->reason);
    Send(*last);
  }
  rsc_.reset();
  if (auto st = run_->box.Remove(); !st)
    spdlog::warn("starter: removing the sandbox of run {}: {}", run_->ref.run,
                 st.error().ToString());
  run_.reset();  // ready for the slot's next run
}

void Starter::AskCheckpoint(const std::string& why) {
  Run& r = *run_;
  if (!IsTransparent(r.job)) {
    spdlog::info("starter: job {} takes no transparent checkpoints; '{}' ignored", r.ref.job, why);
    return;
  }
  if (r.phase != RunPhase::kRunning || r.checkpoint_asked > 0) return;
  spdlog::info("starter: job {} run {}: checkpoint ({})", r.ref.job, r.ref.run, why);
  ::unlink((r.box.path() + "/" + kCheckpointImage + ".refused").c_str());
  r.checkpoint_asked = WallNow();
  if (r.tree) return AskTreeCheckpoint();
  // Only to the program (the process the library made it, kProgramPidName): every other
  // process of the job — a script that runs it, a child — goes on as it was.
  std::string pid_text = TextOf(r.box.control_dir() + "/" + rsc::ckpt::kProgramPidName);
  pid_t pid = static_cast<pid_t>(std::atol(pid_text.c_str()));
  bool ours = pid > 0 && ::getpgid(pid) == r.pid;
  if (ours) {
    std::string not_ready = rsc::ckpt::SignalRefusal({.pid = pid, .name = "the program"});
    if (!not_ready.empty()) return CheckpointNotTaken(not_ready);
  }
  if (!ours || ::kill(pid, rsc::ckpt::kSignal) != 0) {
    CheckpointNotTaken("no process of the job is its executable (" +
                       r.job.EvaluateString("Cmd").value_or("?") +
                       ") under the checkpoint library: a script, or a program that ran "
                       "another? Transparent checkpoints take the executable's own process");
  }
}

// The job's processes are stopped together (one moment for all), checked, each sent the
// checkpoint signal, and let go: each writes IMAGE.PID (or IMAGE.PID.refused) in its handler and
// stops itself there. PollTreeCheckpoint takes it from there.
void Starter::AskTreeCheckpoint() {
  Run& r = *run_;
  std::string image = r.box.path() + "/" + kCheckpointImage;
  ::kill(-r.pid, SIGSTOP);
  std::vector<rsc::ckpt::TreeProcess> procs;
  // A stop reaches every process at once; they show it within a moment.
  for (int i = 0; i < 200; ++i) {
    procs = rsc::ckpt::GroupProcesses(r.pid);
    bool all = true;
    for (const auto& p : procs) all = all && (p.state == 'T' || p.state == 't');
    if (all) break;
    ::usleep(5000);
  }
  std::string refusal = rsc::ckpt::TreeRefusal(r.pid, procs, "libkite_rsc.so");
  if (!refusal.empty()) {
    ::kill(-r.pid, SIGCONT);
    return CheckpointNotTaken(refusal);
  }
  rsc::ckpt::RemoveParts(image, procs);
  for (const auto& p : procs) ::kill(p.pid, rsc::ckpt::kSignal);
  r.tree_asked = procs;
  ::kill(-r.pid, SIGCONT);
}

// Once every process asked has answered (its image or its refusal) and stopped itself: all
// images there — put together, and the processes killed (the run then ends as checkpointed);
// else the images go and every process goes on.
void Starter::PollTreeCheckpoint() {
  Run& r = *run_;
  if (r.tree_taken) return;
  std::string image = r.box.path() + "/" + kCheckpointImage;
  std::string refusal;
  bool settled = true;
  auto now = rsc::ckpt::GroupProcesses(r.pid);
  for (const auto& p : r.tree_asked) {
    std::string part = rsc::ckpt::PartOf(image, p.pid);
    auto it = std::find_if(now.begin(), now.end(), [&](const auto& q) { return q.pid == p.pid; });
    if (it == now.end()) {
      if (refusal.empty()) refusal = "process " + rsc::ckpt::Describe(p) + " ended meanwhile";
      continue;
    }
    std::string why = TextOf(part + ".refused");
    bool answered = !why.empty() || ::access(part.c_str(), F_OK) == 0;
    settled = settled && answered && (it->state == 'T' || it->state == 't');
    if (!why.empty() && refusal.empty()) refusal = "process " + rsc::ckpt::Describe(p) + ": " + why;
  }
  bool late = WallNow() - r.checkpoint_asked > kCheckpointGrace;
  if (!settled && !late) return;
  if (!settled && refusal.empty())
    refusal = "no checkpoint after " + std::to_string(int(kCheckpointGrace)) + " s";
  if (refusal.empty()) refusal = rsc::ckpt::ComposeTree(image, r.tree_asked);
  if (refusal.empty()) {
    spdlog::info("starter: job {} run {}: the images of its {} processes put together", r.ref.job,
                 r.ref.run, r.tree_asked.size());
    r.tree_taken = true;
    r.checkpoint_took = WallNow() - r.checkpoint_asked;
    // Each process, not the group: the job's wrapper lives on to record the end.
    for (const auto& p : r.tree_asked) ::kill(p.pid, SIGKILL);
    return;
  }
  rsc::ckpt::RemoveParts(image, r.tree_asked);
  r.tree_asked.clear();
  ::kill(-r.pid, SIGCONT);
  CheckpointNotTaken(refusal);
}

void Starter::CheckpointNotTaken(const std::string& why) {
  Run& r = *run_;
  spdlog::warn("starter: job {} run {}: checkpoint not taken: {}", r.ref.job, r.ref.run, why);
  Send(About(MsgType::kNotCheckpointed, r.ref, why));  // for the job's ad and its user log
  r.checkpoint_asked = 0;
  r.checkpoint_clock = WallNow();  // the next periodic one is an interval away
  if (r.vacate_after_checkpoint) {
    // Vacated all the same: the job resumes from its last stored checkpoint.
    r.phase = RunPhase::kStopping;
    r.stop_at = WallNow();
    ::kill(-r.pid, SIGTERM);
  }
}

// The folder of kite-exec, where the programs and the library a job may need are too.
std::string Starter::ProgramDir() const {
  return world_.exec_path.substr(0, world_.exec_path.rfind('/'));
}

// libkite_rsc.so next to kite-exec, for a program that is dynamically linked; "" with `why`
// (`feature`: the submit command asking for it; `needs`: what it is and "needs"/"need").
std::string Starter::PreloadLibrary(const ExecLaunch& launch, const std::string& feature,
                                    const std::string& needs, std::string* why) const {
  if (IsStaticExecutable(launch.program)) {
    *why = feature + ": " + launch.program + " is statically linked; " + needs +
           " a dynamically linked program (it works by preloading libkite_rsc.so)";
    return "";
  }
  std::string lib = ProgramDir() + "/libkite_rsc.so";
  if (::access(lib.c_str(), R_OK) != 0) {
    *why = feature + ": " + lib + " is missing next to kite-exec";
    return "";
  }
  return lib;
}

bool Starter::StartTransparent(ExecLaunch& launch, std::string* why) {
  Run& r = *run_;
  std::string lib =
      PreloadLibrary(launch, "checkpoint = transparent", "transparent checkpoints need", why);
  if (lib.empty()) return false;
  char real[PATH_MAX];
  std::string program = ::realpath(launch.program.c_str(), real) ? real : launch.program;
  AddPreload(launch.env, lib);
  ::unlink((r.box.control_dir() + "/" + rsc::ckpt::kProgramPidName).c_str());
  SetEnv(launch.env, "KITE_CKPT_IMAGE", r.box.path() + "/" + kCheckpointImage);
  SetEnv(launch.env, "KITE_CKPT_PROGRAM", program);
  // A script: its interpreter and the programs it starts take the checkpoint together.
  char magic[2] = {0, 0};
  int fd = ::open(program.c_str(), O_RDONLY | O_CLOEXEC);
  r.tree = fd >= 0 && ::read(fd, magic, 2) == 2 && magic[0] == '#' && magic[1] == '!';
  if (fd >= 0) ::close(fd);
  if (r.tree) SetEnv(launch.env, "KITE_CKPT_TREE", "1");
  SetEnv(launch.env, "KITE_CKPT_EXIT", std::to_string(kTransparentCheckpointExit));
  SetEnv(launch.env, "KITE_RSC_SANDBOX", r.box.path());
  SetEnv(launch.env, "KITE_RSC_STATE", r.box.control_dir());
  launch.no_aslr = true;
  return true;
}

// Remote I/O through the kernel needs the server next to kite-exec, a /dev/fuse this process may
// open, a program without transparent checkpoints (they live in the library), no remote path
// inside the sandbox, and each outermost remote path present here to be mounted over. A sandbox
// inside a remote path (KITE_HOME under the Iwd) is put back over it, local as ever.
std::string Starter::FuseUnusable(const std::vector<std::string>& roots) const {
  const Run& r = *run_;
  std::string server = ProgramDir() + "/kite-rsc-fuse";
  if (::access(server.c_str(), X_OK) != 0) return server + " is missing next to kite-exec";
  int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::string("/dev/fuse cannot be opened: ") + std::strerror(errno);
  ::close(fd);
  if (IsTransparent(r.job)) return "transparent checkpoints need the preloaded library";
  for (const auto& root : roots) {
    if (rsc::PathUnder(root, r.box.path()))
      return "the remote path " + root + " is inside the sandbox " + r.box.path();
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0 || S_ISLNK(st.st_mode))
      return "the remote path " + root + " is not on this execute node to mount over";
  }
  return "";
}

bool Starter::StartRemoteIo(ExecLaunch& launch, std::string* why) {
  Run& r = *run_;
  std::vector<std::string> roots = rsc::RemoteRoots(r.job);
  // Outermost only: one inside another is reached through it.
  std::vector<std::string> outer;
  for (const auto& p : roots) {
    bool inside = false;
    for (const auto& q : roots) inside = inside || (q != p && rsc::PathUnder(p, q));
    if (!inside) outer.push_back(p);
  }
  // remote_io_method: auto (the default) through the kernel where it can be, else the library;
  // fuse only through the kernel; preload only the library.
  std::string method = r.job.EvaluateString("WantRemoteIOMethod").value_or("auto");
  std::string fuse_why = method == "preload" ? "remote_io_method = preload" : FuseUnusable(outer);
  if (method == "fuse" && !fuse_why.empty()) {
    *why = "remote_io_method = fuse: " + fuse_why;
    return false;
  }
  std::string lib;
  if (!fuse_why.empty()) {
    lib = PreloadLibrary(launch, "want_remote_io", "remote I/O needs", why);
    if (lib.empty()) {
      if (method != "preload") *why += "; and not through the kernel: " + fuse_why;
      return false;
    }
  }
  if (!rsc_) {
    rsc_ = std::make_unique<RscRelay>(io_, [this](int64_t chan, const std::string& request) {
      if (!run_) return;
      Message m = About(MsgType::kRsc, run_->ref);
      m.chan = chan;
      Send(m, request);
    });
    if (auto st = rsc_->Listen(r.box.control_dir() + "/rsc.sock"); !st) {
      *why = "want_remote_io: " + st.error().message();
      rsc_.reset();
      return false;
    }
  }
  if (fuse_why.empty()) {
    std::string mount = r.box.control_dir() + "/fuse";
    if (::mkdir(mount.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = "want_remote_io: cannot make " + mount + ": " + std::strerror(errno);
      return false;
    }
    launch.fuse = {.server = ProgramDir() + "/kite-rsc-fuse",
                   .socket = r.box.control_dir() + "/rsc.sock",
                   .mount = mount,
                   .log = r.box.control_dir() + "/rsc-fuse.log",
                   .roots = outer};
    for (const auto& root : outer)
      if (rsc::PathUnder(r.box.path(), root)) launch.fuse.keep = r.box.path();
    r.remote_io = "fuse";
    return true;
  }
  if (method != "preload")
    spdlog::info("starter: job {} run {}: remote I/O through the preloaded library: {}", r.ref.job,
                 r.ref.run, fuse_why);
  std::string joined;
  for (const auto& p : roots) joined += (joined.empty() ? "" : ":") + p;
  AddPreload(launch.env, lib);
  SetEnv(launch.env, "KITE_RSC_SOCKET", r.box.control_dir() + "/rsc.sock");
  SetEnv(launch.env, "KITE_RSC_PATHS", joined);
  SetEnv(launch.env, "KITE_RSC_SANDBOX", r.box.path());
  SetEnv(launch.env, "KITE_RSC_STATE", r.box.control_dir());
  r.remote_io = "preload";
  return true;
}

void Starter::Exit(int code) {
  if (exited_) return;
  exited_ = true;
  if (link_) link_->Close();
  link_.reset();
  tick_.cancel();
  children_.cancel();
  if (world_.on_exit) world_.on_exit(code);
}

}  // namespace kite::glidein
