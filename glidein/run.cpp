// A run's exit, usage and output frames.
#include "glidein/run.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kite::glidein {

pool::Message About(pool::MsgType type, const pool::RunRef& r, std::string reason) {
  return pool::Message{
      .type = type, .slot = r.slot, .job = r.job, .run = r.run, .reason = std::move(reason)};
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status))
    return "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  return "ended (wait status " + std::to_string(wait_status) + ")";
}

pool::RunExit ExitOf(const ExecStatus& s) {
  using K = pool::RunExit::Kind;
  switch (s.kind) {
    case ExecStatus::Kind::kExited:
      return {K::kExited, s.code, ""};
    case ExecStatus::Kind::kSignaled:
      return {K::kSignaled, s.code, ""};
    case ExecStatus::Kind::kExecFailed:
    case ExecStatus::Kind::kSetupFailed:
      return {K::kFailed, s.code, s.message};
  }
  return {K::kFailed, s.code, s.message};
}

pool::RunUsage UsageOf(const ExecStatus& s) {
  return {.user_cpu = s.utime,
          .sys_cpu = s.stime,
          .rss_kb = s.max_rss_kb,
          .start = s.start,
          .end = s.end};
}

Status CheckInputs(Run& run) {
  for (const auto& f : run.files) {
    auto fd = OpenBeneath(run.box.fd(), f.path, O_RDONLY);
    if (!fd && f.size == 0) {
      if (auto st = run.box.Write(f.path, 0, "", f.mode, true); !st) return st;
      continue;
    }
    if (!fd) return Fail(fd.error().Wrap("input file '" + f.path + "'"));
    struct stat st;
    bool ok = ::fstat(*fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == f.size;
    ::close(*fd);
    if (!ok) {
      return Fail(ErrorCode::kInvalidInput, "input file '" + f.path + "' is incomplete (" +
                                                std::to_string(f.size) + " bytes announced)");
    }
  }
  return {};
}

std::vector<OutputFile> SelectCheckpoint(const classad::ClassAd& job, const Snapshot& before,
                                         const Snapshot& after, std::vector<std::string>* skipped) {
  auto files = job.EvaluateString("TransferCheckpoint");
  if (!files) files = job.EvaluateString("TransferOutput");
  // A transparent checkpoint is its image and what the program wrote in the sandbox.
  if (files && IsTransparent(job)) *files += std::string(",") + kCheckpointImage;
  auto out = SelectOutputs(files, before, after, skipped);
  std::erase_if(out,
                [](const OutputFile& f) { return f.path == kStdoutName || f.path == kStderrName; });
  return out;
}

bool IsTransparent(const classad::ClassAd& job) {
  return job.EvaluateBool("TransparentCheckpoint").value_or(false);
}

bool IsCheckpointExit(const classad::ClassAd& job, const pool::RunExit& exit) {
  auto code = job.EvaluateInt("CheckpointExitCode");
  return code && exit.kind == pool::RunExit::Kind::kExited && exit.code == *code;
}

std::optional<std::pair<pool::Message, std::string>> NextOutputFrame(
    Run& run, std::vector<std::string>* skipped) {
  if (run.ended_sent) return std::nullopt;
  while (run.next_output < run.outputs.size()) {
    const OutputFile& f = run.outputs[run.next_output];
    if (!run.reader) {
      auto r = FileReader::Open(run.box.fd(), f.path);
      if (!r) {
        if (skipped) skipped->push_back(f.path + ": " + r.error().message());
        ++run.next_output;
        continue;
      }
      run.reader.emplace(std::move(*r));
      // A streamed standard stream is on the desktop up to where the streaming got.
      if (auto s = run.streamed.find(f.path); s != run.streamed.end())
        run.reader->SkipTo(s->second);
    }
    auto piece = run.reader->Next(pool::kChunk);
    if (!piece) {
      if (skipped) skipped->push_back(f.path + ": " + piece.error().message());
      run.reader.reset();
      ++run.next_output;
      continue;
    }
    pool::Message m{.type = pool::MsgType::kOutput,
                    .job = run.ref.job,
                    .run = run.ref.run,
                    .path = f.name,
                    .offset = piece->offset,
                    .last = piece->last,
                    .checkpoint = run.phase == RunPhase::kCheckpointing,
                    .mode = run.reader->mode()};
    if (piece->last) {
      run.reader.reset();
      ++run.next_output;
    }
    return std::pair{std::move(m), std::move(piece->bytes)};
  }
  run.ended_sent = true;
  pool::Message m{.type = run.phase == RunPhase::kCheckpointing ? pool::MsgType::kCheckpointed
                                                                : pool::MsgType::kEnded,
                  .slot = run.ref.slot,
                  .job = run.ref.job,
                  .run = run.ref.run,
                  .exit = run.exit,
                  .usage = run.usage,
                  .took = run.phase == RunPhase::kCheckpointing ? run.checkpoint_took : 0};
  return std::pair{std::move(m), std::string()};
}

void RewindOutput(Run& run) {
  run.next_output = 0;
  run.reader.reset();
  run.ended_sent = false;
}

}  // namespace kite::glidein
