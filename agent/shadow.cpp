// One run's side on the desktop: its input, output, checkpoints and remote I/O.
#include "agent/shadow.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "agent/userlog.h"
#include "classad/expr.h"
#include "classad/io.h"
#include "classad/match.h"
#include "common/files.h"
#include "common/strings.h"
#include "rsc/roots.h"

namespace kite::agent {

namespace {

namespace fs = std::filesystem;
using pool::Message;
using pool::MsgType;

// The names under which the startd sends the program's standard output and error.
constexpr std::string_view kStdoutName = "_kite_stdout";
constexpr std::string_view kStderrName = "_kite_stderr";

// The file's bytes [offset, offset + body) land in `path`, created with `mode`; offset 0 starts
// the file afresh and the last piece sets its length, so a resent piece changes nothing.
Status WriteAt(const std::string& path, uint64_t offset, const std::string& body, bool last,
               uint32_t mode) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (offset == 0 ? O_TRUNC : 0);
  int fd = ::open(path.c_str(), flags, mode & 0777);
  if (fd < 0) return FailErrno("open " + path);
  Status st;
  size_t done = 0;
  while (st && done < body.size()) {
    ssize_t n =
        ::pwrite(fd, body.data() + done, body.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno != EINTR) st = FailErrno("write " + path);
      continue;
    }
    done += static_cast<size_t>(n);
  }
  if (st && last && ::ftruncate(fd, static_cast<off_t>(offset + body.size())) != 0)
    st = FailErrno("truncate " + path);
  ::close(fd);
  return st;
}

// transfer_output_remaps: "name = newname; name2 = newname2".
std::string Remapped(const Job& j, const std::string& name) {
  auto remaps = j.ad.EvaluateString("TransferOutputRemaps");
  if (!remaps) return name;
  for (const auto& item : Split(*remaps, ';')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    if (Trim(item.substr(0, eq)) == name) return std::string(Trim(item.substr(eq + 1)));
  }
  return name;
}

// The job's input as HTCondor sends it: the executable (unless transfer_executable = false), its
// standard input file, and transfer_input_files (files, and directories with what they hold), each
// under its base name at the top of the sandbox. `ad`, the copy that goes to the startd, names
// the executable and stdin as the sandbox has them.
Result<std::vector<ShadowInput>> InputsOf(const Job& j, classad::ClassAd* ad) {
  std::vector<ShadowInput> in;
  std::string iwd = j.ad.EvaluateString("Iwd").value_or("/");
  std::error_code ec;
  auto add = [&](const std::string& local, const std::string& remote, uint32_t mode) -> Status {
    struct stat sb {};
    if (::stat(local.c_str(), &sb) != 0) return FailErrno("cannot read input file " + local);
    if (S_ISDIR(sb.st_mode)) {
      for (auto& e : fs::recursive_directory_iterator(local, ec)) {
        if (!e.is_regular_file(ec)) continue;
        std::string rel = fs::relative(e.path(), local, ec).string();
        in.push_back({e.path().string(), remote + "/" + rel,
                      static_cast<uint32_t>(e.status().permissions()) & 0777,
                      static_cast<uint64_t>(e.file_size(ec)), 0});
      }
      if (ec)
        return Fail(ErrorCode::kIo, "cannot read input directory " + local + ": " + ec.message());
      return {};
    }
    if (!S_ISREG(sb.st_mode)) return Fail(ErrorCode::kInvalidInput, local + " is not a file");
    in.push_back(
        {local, remote, mode ? mode : (sb.st_mode & 0777), static_cast<uint64_t>(sb.st_size), 0});
    return {};
  };
  auto cmd = j.ad.EvaluateString("Cmd").value_or("");
  if (j.ad.EvaluateBool("TransferExecutable").value_or(true) && !cmd.empty()) {
    std::string base = BaseName(cmd);
    if (auto st = add(JoinPath(iwd, cmd), base, 0755); !st) return std::unexpected(st.error());
    ad->Assign("Cmd", base);
  }
  auto stdin_file = j.ad.EvaluateString("In").value_or("/dev/null");
  if (stdin_file != "/dev/null" && !stdin_file.empty() &&
      j.ad.EvaluateBool("TransferIn").value_or(true)) {
    std::string base = BaseName(stdin_file);
    if (auto st = add(JoinPath(iwd, stdin_file), base, 0); !st) return std::unexpected(st.error());
    ad->Assign("In", base);
  }
  for (const auto& item : Split(j.ad.EvaluateString("TransferInput").value_or(""), ',')) {
    std::string f(Trim(item));
    if (f.empty()) continue;
    bool contents = f.size() > 1 && f.back() == '/';
    while (f.size() > 1 && f.back() == '/') f.pop_back();
    std::string local = JoinPath(iwd, f);
    if (contents) {
      for (auto& e : fs::directory_iterator(local, ec)) {
        if (auto st = add(e.path().string(), e.path().filename().string(), 0); !st)
          return std::unexpected(st.error());
      }
      if (ec)
        return Fail(ErrorCode::kIo, "cannot read input directory " + local + ": " + ec.message());
    } else if (auto st = add(local, BaseName(f), 0); !st) {
      return std::unexpected(st.error());
    }
  }
  for (const auto& i : in) {
    if (auto st = pool::CheckRelativePath(i.remote); !st) return std::unexpected(st.error());
  }
  return in;
}

// HTCondor's $$() substitution in the job's strings, done in the copy that goes to the slot.
Status ExpandMatchReferences(classad::ClassAd& job, const classad::ClassAd& slot) {
  std::vector<std::pair<std::string, std::string>> changed;
  for (const auto& a : job) {
    classad::Value v;
    if (!classad::IsLiteral(a.expr(), &v) || !v.IsString()) continue;
    if (v.AsString().find("$$(") == std::string_view::npos) continue;
    auto text = classad::ExpandMatchReferences(v.AsString(), job, slot);
    if (!text) return Fail(text.error().Wrap(std::string(a.name())));
    changed.emplace_back(a.name(), std::move(*text));
  }
  for (auto& [name, text] : changed) job.Assign(name, text);
  return {};
}

// The digest of the checkpoint received in `dir`, from the hashes taken as its pieces came; the
// files there must be exactly those, of those sizes.
Result<std::string> ReceivedDigest(const std::string& dir,
                                   const std::map<std::string, StreamHash>& hashes) {
  auto files = StoredCheckpointFiles(dir);
  if (!files) return Fail(files.error());
  if (files->size() != hashes.size())
    return Fail(ErrorCode::kInvalidInput, "its files are not the ones that were sent");
  std::vector<CheckpointFileSum> sums;
  for (const auto& f : *files) {
    auto h = hashes.find(f.path);
    if (h == hashes.end() || h->second.size() != f.size)
      return Fail(ErrorCode::kInvalidInput, "'" + ForLog(f.path) + "' is not as it was sent");
    sums.push_back({f.path, f.size, h->second.Hex()});
  }
  return CheckpointDigest(std::move(sums));
}

}  // namespace

std::string RefusedRemoteCall(const std::string& body) {
  rsc::Reply no{.result = -1, .error = EACCES};
  if (body.size() >= 8) no.seq = rsc::wire::Get(body, 0, 8);
  return rsc::Encode(no);
}

std::string ShadowShared::CheckpointDir(JobKey key) const {
  return checkpoints + "/" + JobIdString(key);
}

bool ShadowShared::LocalRestoreAllowed(const classad::ClassAd& ad) const {
  return local_restore_site_checkpoints ||
         !ad.EvaluateBool("TransparentCheckpoint").value_or(false) ||
         ad.EvaluateInt("NumCheckpoints").value_or(0) <= 0 ||
         !ad.EvaluateBool("CheckpointFromSite").value_or(false);
}

Shadow::Shadow(ShadowShared& shared, std::string run, JobKey job)
    : shared_(shared), run_(std::move(run)), job_(job) {}

Shadow::~Shadow() {
  if (fd_ >= 0) ::close(fd_);
}

// ---- input ----

std::expected<Message, ShadowHold> Shadow::Activate(Job& j, const RunPlace& place) {
  auto flat = classad::ParseOldAd(shared_.queue.FlatText(j));
  if (!flat)
    return std::unexpected(
        ShadowHold{"The job's ad does not read back: " + flat.error().message(), kHoldQueueDamage});
  if (place.slot_ad) {
    if (auto st = ExpandMatchReferences(*flat, *place.slot_ad); !st)
      return std::unexpected(ShadowHold{
          "Cannot expand $$ references at the match: " + st.error().message(), kHoldQueueDamage});
  }
  auto inputs = place.in_place.empty() ? InputsOf(j, &*flat) : std::vector<ShadowInput>{};
  if (!inputs)
    return std::unexpected(ShadowHold{"Transfer input files failure: " + inputs.error().message(),
                                      kHoldTransferInputError});
  std::vector<std::string> names;
  for (const auto& i : *inputs) names.push_back(i.remote);
  policy_ = CheckpointPolicyOf(j.ad, std::move(names));
  inputs_ = std::move(*inputs);
  next_input_ = 0;
  expected_digest_.clear();
  restored_.clear();
  if (auto n = j.ad.EvaluateInt("NumCheckpoints"); n && *n > 0) {
    if (auto why = RestoreCheckpoint(j, place.door); !why.empty())
      return std::unexpected(ShadowHold{
          "Cannot restore checkpoint " + std::to_string(*n) + ": " + why, kHoldTransferInputError});
  }
  Message m{.type = MsgType::kActivate,
            .slot = place.slot,
            .job = JobIdString(job_),
            .run = run_,
            .ad = classad::ToNewText(*flat),
            .in_place = place.in_place};
  for (const auto& i : inputs_) m.files.push_back({i.remote, i.size, i.mode});
  return m;
}

std::string Shadow::RestoreCheckpoint(Job& j, PoolDoor door) {
  int n = static_cast<int>(j.ad.EvaluateInt("NumCheckpoints").value_or(0));
  auto digest = j.ad.EvaluateString("CheckpointDigest");
  if (!digest) {
    // Stored by a Kite that kept no digest: nothing binds its files to the job. It starts over.
    shared_.queue.AddEvent(j, kEventGeneric,
                           "Checkpoint " + std::to_string(n) +
                               " has no recorded digest (stored by an earlier Kite); the job "
                               "starts from its beginning");
    return "";
  }
  if (door == PoolDoor::kLocal && !shared_.LocalRestoreAllowed(j.ad)) {
    // The negotiator keeps such jobs off the local slots; should one get here, it starts over
    // rather than run what a site wrote.
    shared_.queue.AddEvent(j, kEventGeneric,
                           "Checkpoint " + std::to_string(n) + " is an image made at " +
                               j.ad.EvaluateString("CheckpointStartd").value_or("a site") +
                               "; it is not restored on this desktop's slots ([pool] "
                               "local_restore_site_checkpoints); the job starts from its "
                               "beginning");
    return "";
  }
  auto files = StoredCheckpointFiles(shared_.CheckpointDir(job_) + "/ckpt." + std::to_string(n));
  if (!files) return files.error().message();
  for (const auto& f : *files) {
    if (std::string why = CheckpointFileRefusal(*policy_, f.path); !why.empty()) return why;
    inputs_.push_back({f.local, f.path, f.mode, f.size, 0, /*checkpoint=*/true});
  }
  expected_digest_ = *digest;
  return "";
}

// A large file is never all in memory: a piece is read only while the link's queue is short.
Shadow::Pumped Shadow::Pump(RunLink& link, size_t high) {
  std::string job = JobIdString(job_);
  std::string chunk;
  while (link.queued_bytes() < high) {
    if (next_input_ == inputs_.size()) {
      if (!expected_digest_.empty() &&
          CheckpointDigest(std::exchange(restored_, {})) != expected_digest_) {
        // Not what was stored for this job: never restored. The hold vacates the run.
        if (Job* j = shared_.queue.Find(job_)) {
          (void)shared_.queue.Hold(
              *j,
              "Cannot restore checkpoint " +
                  std::to_string(j->ad.EvaluateInt("NumCheckpoints").value_or(0)) +
                  ": its files are not the ones stored for this job (their digest differs from "
                  "CheckpointDigest)",
              kHoldTransferInputError);
        }
        return Pumped::kStopped;
      }
      link.Send(Message{.type = MsgType::kGo, .job = job, .run = run_}, {});
      return Pumped::kDone;
    }
    auto& in = inputs_[next_input_];
    // A stored checkpoint's file is the agent's own: never read through a link.
    if (fd_ < 0)
      fd_ = ::open(in.local.c_str(), O_RDONLY | O_CLOEXEC | (in.checkpoint ? O_NOFOLLOW : 0));
    ssize_t n = -1;
    if (fd_ >= 0) {
      chunk.resize(pool::kChunk);
      n = ::pread(fd_, chunk.data(), chunk.size(), static_cast<off_t>(in.sent));
    }
    if (n < 0) {
      std::string why = "cannot read input file " + in.local + ": " + std::strerror(errno);
      if (Job* j = shared_.queue.Find(job_))
        (void)shared_.queue.Hold(*j, "Transfer input files failure: " + why,
                                 kHoldTransferInputError);
      return Pumped::kStopped;  // the hold vacates the run
    }
    chunk.resize(static_cast<size_t>(n));
    bool last = n == 0 || in.sent + static_cast<uint64_t>(n) >= in.size;
    if (in.checkpoint) {
      sending_.Update(in.sent, chunk);
      if (last) restored_.push_back({in.remote, in.sent + chunk.size(), sending_.Hex()});
    }
    link.Send(Message{.type = MsgType::kInput,
                      .job = job,
                      .run = run_,
                      .path = in.remote,
                      .offset = in.sent,
                      .last = last,
                      .checkpoint = in.checkpoint,
                      .mode = in.mode},
              chunk);
    in.sent += static_cast<uint64_t>(n);
    if (last) {
      ::close(fd_);
      fd_ = -1;
      ++next_input_;
    }
  }
  return Pumped::kMore;
}

// ---- what comes back ----

void Shadow::Output(const Job& j, const Message& m, const std::string& body) {
  if (!output_error_.empty()) return;
  // Streamed while the program runs: only the standard streams the job asked to stream.
  if (m.streaming && !(m.path == kStdoutName && j.ad.EvaluateBool("StreamOut").value_or(false)) &&
      !(m.path == kStderrName && j.ad.EvaluateBool("StreamErr").value_or(false)))
    return;
  std::string iwd = j.ad.EvaluateString("Iwd").value_or("/");
  std::string target;
  if (m.path == kStdoutName || m.path == kStderrName) {
    auto name = j.ad.EvaluateString(m.path == kStdoutName ? "Out" : "Err").value_or("");
    if (name.empty() || name == "/dev/null") return;
    target = JoinPath(iwd, name);
  } else {
    target = JoinPath(iwd, Remapped(j, m.path));
  }
  if (m.offset == 0) {
    if (auto st = MakeDirs(fs::path(target).parent_path().string(), 0755); !st) {
      output_error_ = st.error().message();
      return;
    }
  }
  if (auto st = WriteAt(target, m.offset, body, m.last, m.mode); !st)
    output_error_ = st.error().message();
}

// ---- checkpoints (docs/pool.md, "Checkpoints") ----
//
// A job's checkpoints live in spool/checkpoints/C.P/: the pieces of one arrive in
// incoming.RUN/, which becomes ckpt.N once whole and synced; NumCheckpoints = N is then
// committed, and only after that commit do older ones go and is the startd told to go on. So a
// crash or a cut connection at any point leaves the last committed checkpoint whole.

std::string Shadow::Incoming() const {
  return shared_.CheckpointDir(job_) + "/incoming." + run_;
}

const CheckpointPolicy& Shadow::Policy(const Job& j) {
  if (!policy_) {
    std::vector<std::string> names;
    classad::ClassAd scratch;
    if (auto inputs = InputsOf(j, &scratch)) {
      for (const auto& i : *inputs) names.push_back(i.remote);
      policy_ = CheckpointPolicyOf(j.ad, std::move(names));
    } else {
      // Its inputs cannot be told apart: nothing may be taken as its checkpoint.
      policy_ = CheckpointPolicy{};
    }
  }
  return *policy_;
}

std::string Shadow::CheckpointPiece(const Job& j, const Message& m, const std::string& body) {
  if (!checkpoint_error_.empty()) return "";
  if (std::string why = CheckpointFileRefusal(Policy(j), m.path); !why.empty()) {
    checkpoint_error_ = why;
    return "checkpoint file refused: " + why;
  }
  if (!receiving_[m.path].Update(m.offset, body)) {
    checkpoint_error_ = "'" + ForLog(m.path) + "' arrived out of order";
    return "";
  }
  std::string target = Incoming() + "/" + m.path;
  Status st;
  if (m.offset == 0) st = MakeDirs(fs::path(target).parent_path().string(), 0700);
  if (st) st = WriteAt(target, m.offset, body, m.last, m.mode);
  if (!st) checkpoint_error_ = "cannot write a checkpoint file: " + st.error().message();
  return "";
}

void Shadow::DropIncomingCheckpoint() {
  std::error_code ec;
  fs::remove_all(Incoming(), ec);
  receiving_.clear();
  checkpoint_error_.clear();
}

int Shadow::StoreCheckpoint(Job& j, const Message& m, const std::string& startd, bool site) {
  JobQueue& queue = shared_.queue;
  std::string dir = shared_.CheckpointDir(job_), incoming = Incoming();
  auto received = std::exchange(receiving_, {});
  int n = static_cast<int>(j.ad.EvaluateInt("NumCheckpoints").value_or(0)) + 1;
  std::string committed = dir + "/ckpt." + std::to_string(n);
  Status st = checkpoint_error_.empty() ? MakeDirs(incoming, 0700)
                                        : Fail(ErrorCode::kIo, checkpoint_error_);
  Result<std::string> digest = st ? ReceivedDigest(incoming, received) : Fail(st.error());
  if (!digest) st = Fail(digest.error());
  if (st) st = SyncTree(incoming);
  std::error_code ec;
  if (st) {
    fs::remove_all(committed, ec);  // left by a crash before its commit
    if (::rename(incoming.c_str(), committed.c_str()) != 0) st = FailErrno("rename " + incoming);
  }
  if (st) st = SyncPath(dir);
  if (!st) {
    // The job goes on from where it is; its last committed checkpoint stays the one to resume.
    spdlog::warn("agent: pool: job {}: checkpoint not stored: {}", JobIdString(job_),
                 st.error().message());
    queue.AddEvent(j, kEventGeneric,
                   "The job's checkpoint could not be stored: " + st.error().message());
    DropIncomingCheckpoint();
    return n - 1;
  }
  double now = queue.Now(),
         run_time = m.usage.end > m.usage.start ? m.usage.end - m.usage.start : 0;
  queue.SetAttr(j, "NumCheckpoints", classad::MakeInteger(n));
  queue.SetAttr(j, "LastCheckpointTime", classad::MakeInteger(static_cast<int64_t>(now)));
  queue.SetAttr(j, "CheckpointBytes",
                classad::MakeInteger(static_cast<int64_t>(TreeBytes(committed))));
  if (m.took > 0) queue.SetAttr(j, "LastCheckpointDuration", classad::MakeReal(m.took));
  queue.SetAttr(j, "CommittedTime",
                classad::MakeReal(j.ad.EvaluateReal("RemoteWallClockTime").value_or(0) + run_time));
  // What binds the stored files to this job: they go back only while they have this digest.
  queue.SetAttr(j, "CheckpointDigest", classad::MakeString(*digest));
  queue.SetAttr(j, "CheckpointStartd", classad::MakeString(startd));
  queue.SetAttr(j, "CheckpointFromSite", classad::MakeBool(site));
  queue.AddEvent(j, kEventCheckpointed, EventBody(kEventCheckpointed, ""));
  spdlog::info("agent: pool: job {} checkpoint {} stored", JobIdString(job_), n);
  return n;
}

void Shadow::KeepOnlyCheckpoint(const ShadowShared& shared, JobKey job, int number) {
  std::error_code ec;
  std::string keep = "ckpt." + std::to_string(number);
  for (auto& e : fs::directory_iterator(shared.CheckpointDir(job), ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with("ckpt.") && name != keep) fs::remove_all(e.path(), ec);
  }
}

// ---- remote I/O ----

std::string Shadow::RemoteCall(Job* j, const std::string& body) {
  std::string job = JobIdString(job_);
  if (!j || !j->ad.EvaluateBool("WantRemoteIO").value_or(false)) {
    // Not a run of a job that asked for remote I/O: answered, never done.
    spdlog::warn("agent: pool: job {} run {}: a remote system call refused: {}", job, run_,
                 j ? "the job did not ask for remote I/O (want_remote_io)" : "no such run");
    return RefusedRemoteCall(body);
  }
  if (!io_) {
    std::vector<std::string> roots;
    for (auto& r : rsc::RemoteRoots(j->ad)) {
      struct stat st {};
      bool folder = ::stat(r.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      roots.push_back(folder ? r + "/" : r);
    }
    io_ = std::make_unique<rsc::ShadowIo>(
        std::move(roots), rsc::ShadowIo::Limits{.shared_open = shared_.remote_open,
                                                .max_shared = shared_.remote_open_max});
  }
  std::string reply = io_->Handle(body);
  for (const auto& why : io_->TakeRefusals())
    spdlog::warn("agent: pool: job {}: remote I/O refused: {}", job, why);
  // Bytes the program wrote that its library could not send: never taken for a good run.
  for (const auto& path : io_->TakeUnseen()) {
    spdlog::warn("agent: pool: job {}: wrote to {} through calls remote I/O cannot follow", job,
                 path);
    if (j->status != kRunning) continue;
    (void)shared_.queue.Hold(*j,
                             "Remote I/O: the job wrote to " + path +
                                 " through calls remote I/O cannot follow (a bash builtin's "
                                 "redirection, such as echo > FILE?); those bytes never reached "
                                 "this machine",
                             kHoldTransferOutputError);
  }
  return reply;
}

void Shadow::RecordIo(Job& j) {
  if (!io_) return;
  JobQueue& queue = shared_.queue;
  const auto& now = io_->counts();
  auto add = [&](const char* name, uint64_t v) {
    int64_t before = j.ad.EvaluateInt(name).value_or(0);
    queue.SetAttr(j, name, classad::MakeInteger(before + static_cast<int64_t>(v)));
  };
  add("BytesRead", now.bytes_read - io_recorded_.bytes_read);
  add("BytesWritten", now.bytes_written - io_recorded_.bytes_written);
  add("RemoteIOCalls", now.calls - io_recorded_.calls);
  queue.SetAttr(j, "RunBytesRead", classad::MakeInteger(static_cast<int64_t>(now.bytes_read)));
  queue.SetAttr(j, "RunBytesWritten",
                classad::MakeInteger(static_cast<int64_t>(now.bytes_written)));
  io_recorded_ = now;
}

}  // namespace kite::agent
