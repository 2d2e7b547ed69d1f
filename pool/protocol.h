// The pool protocol (docs/pool.md): what a startd and the agent say to each other over the one
// connection the startd dials. Pure data, framing and parsing: no I/O, safe from any thread.
//
// A frame is two big-endian 32-bit lengths, a JSON header of that first length and a body of the
// second (file bytes for `input` and `output`, empty otherwise). One connection carries every
// slot of a startd, so later message kinds (remote I/O, checkpoints) ride on the same frames.
//
// Parsing is strict about the fields each kind needs (kInvalidInput naming the field) and ignores
// unknown members, so a later addition does not break an older peer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::pool {

inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kMaxHeader = 1 << 20;  // a job ad with a long environment fits
inline constexpr size_t kMaxBody = 1 << 20;    // file chunks are smaller
inline constexpr size_t kChunk = 256 << 10;    // the size of the file chunks either side sends

enum class MsgType {
  // startd -> agent
  kHello,      // name, credential, slots (its ads), runs (what it runs: after a reconnect)
  kSlot,       // slot, ad: a slot's ad changed (state, load, time left)
  kStarted,    // slot, job, run: the job's program runs
  kOutput,     // job, run, path, offset, last, mode + body: an output file's bytes
  kEnded,      // slot, job, run, exit, usage: the run ended and every output file was sent
  kVacated,    // slot, job, run, reason: the run was stopped before its end; the job runs again
  kRefused,    // slot, job, run, reason: the slot will not run this job (nothing was started)
  kBye,        // reason: the startd is leaving (lifetime, idle, told to stop)
  kSuspended,  // slot, job, run, reason: the owner's SUSPEND stopped the program for now
  kContinued,  // slot, job, run: the owner's CONTINUE let it go on
  // slot, job, run, usage: the program exited with the job's CheckpointExitCode and every file
  // of its checkpoint was sent (`output` frames with `checkpoint`); it restarts on `ack`
  kCheckpointed,
  // slot, job, run, reason: a transparent checkpoint asked for was not taken; the program goes
  // on as it was (or, when the run was being vacated, stops all the same)
  kNotCheckpointed,
  // job, run, chan + body: a remote system call of the run's program (rsc/wire.h), from the
  // starter's channel `chan` (one per connection of the program's library)
  kRsc,
  // agent -> startd
  kWelcome,     // version: the startd is accepted
  kRefuse,      // reason: the startd is not (the connection closes)
  kActivate,    // slot, job, run, ad, files, in_place: run this job on this slot; its input follows
  kInput,       // job, run, path, offset, last, mode + body: an input file's bytes
  kGo,          // job, run: every input file was sent
  kVacate,      // slot, job, run, reason: stop this run (the job returns to Idle)
  kAck,         // job, run: the run's outcome is stored; the sandbox may go. With `checkpoint`:
                // the checkpoint is stored; the program starts again in its sandbox
  kRscReply,    // job, run, chan + body: the shadow's reply to an `rsc`
  kCheckpoint,  // job, run: a program with transparent checkpoints takes one now and goes on
  // startd -> starter only (docs/startd.md, "The starter"): never on the agent's connection
  kSuspend,   // reason: stop the program (SIGSTOP) and say `suspended`
  kContinue,  // let it go on (SIGCONT) and say `continued`
  kKill,      // a run being vacated gets SIGKILL now (the owner's KILL)
  kRewind,    // the agent was reconnected: say everything again (suspension, output, end)
  // starter -> startd only
  kRewound,  // what follows comes after `rewind`: drop what came before it
};
std::string_view MsgTypeName(MsgType type);
std::optional<MsgType> ParseMsgType(std::string_view name);

struct SlotAd {
  std::string name;  // "slot1@host" (HTCondor's form)
  std::string ad;    // the slot's ClassAd, new syntax
  bool operator==(const SlotAd&) const = default;
};

struct RunRef {
  std::string slot, job, run;
  bool operator==(const RunRef&) const = default;
};

struct FileInfo {
  std::string path;  // relative to the sandbox (input) or to the job's Iwd (output)
  uint64_t size = 0;
  uint32_t mode = 0644;
  bool operator==(const FileInfo&) const = default;
};

struct RunExit {
  enum class Kind { kExited, kSignaled, kFailed };  // kFailed: the program could not be run
  Kind kind = Kind::kExited;
  int code = 0;         // exit code or signal number
  std::string message;  // kFailed: why
  bool operator==(const RunExit&) const = default;
};

struct RunUsage {
  double user_cpu = 0, sys_cpu = 0;  // seconds
  int64_t rss_kb = 0;                // largest resident set
  double start = 0, end = 0;         // wall clock of the program's run, seconds since the epoch
  bool operator==(const RunUsage&) const = default;
};

// One message; which members mean something depends on `type` (see MsgType).
struct Message {
  MsgType type = MsgType::kHello;
  int version = kProtocolVersion;
  std::string name;        // hello: the startd's name
  std::string credential;  // hello: the pool credential the agent issued it (pool/credential.h)
  std::string slot;        // the slot the message is about
  std::string job;         // "C.P"
  std::string run;         // the run's id, chosen by the agent (unique per start of a job)
  std::string ad;          // slot: the slot's ad; activate: the job's ad
  std::string reason;      // refuse, vacate, vacated, refused, bye, suspended
  std::string path;        // input, output
  uint64_t offset = 0;
  bool last = false;  // input, output: the file ends with this chunk
  // output: a checkpoint file's bytes; input: a stored checkpoint's file; ack: of a checkpoint
  bool checkpoint = false;
  // output: a piece of standard output or error sent while the program runs (stream_output); the
  // run goes on
  bool streaming = false;
  uint32_t mode = 0644;
  std::vector<SlotAd> slots;    // hello
  std::vector<RunRef> runs;     // hello
  std::vector<FileInfo> files;  // activate: the input files
  // activate: run the program in this directory (absolute: the job's Iwd) on the file system the
  // agent shares, with no input sent and no output sent back; the agent asks it only of its own
  // slots (docs/pool.md, "A shared file system").
  std::string in_place;
  RunExit exit;    // ended
  RunUsage usage;  // ended, vacated, checkpointed
  // checkpointed, a transparent one: seconds from asking for it to its image being whole
  double took = 0;
  int64_t pid = 0;  // started, from a starter: the job's process group (0: none)
  // started: how the program reaches its remote paths, "fuse" or "preload" ("": no remote I/O)
  std::string remote_io;
  int64_t chan = 0;  // rsc, rsc_reply: the starter's channel
  bool operator==(const Message&) const = default;
};

std::string ToJson(const Message& m);
// The header's JSON; checks the members `m.type` needs.
Result<Message> ParseMessage(std::string_view json);

// A whole frame: header and body.
struct Frame {
  Message msg;
  std::string body;
};
std::string EncodeFrame(const Message& m, std::string_view body = {});

// Cuts frames out of a byte stream as it arrives. A malformed frame (a length over the limits, a
// header that does not parse) is an error and the connection is not usable after it.
class FrameReader {
 public:
  void Feed(std::string_view bytes) { buf_.append(bytes); }
  // The next whole frame, nullopt when more bytes are needed, or the error.
  Result<std::optional<Frame>> Next();
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// A path as a job's file list names it, checked for use inside a sandbox or an Iwd: relative,
// no "..", no empty or "." component, no NUL. The file itself is opened without following links
// (glidein/sandbox.h).
Status CheckRelativePath(std::string_view path);

}  // namespace kite::pool
