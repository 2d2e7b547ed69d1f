// OutputStreamer: how a job manager streams a growing local file (a job's stdout or stderr) to
// the gridmanager's GASS server, at byte offsets, resuming after a restart without loss or
// duplication (docs/architecture.md, "Offsets, not appends").
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"
#include "gass/client.h"

namespace kite::gass {

struct OutputStreamerOptions {
  // Bytes per PUT (at most kMaxPutBody): bounds memory and the work a lost reply repeats.
  size_t chunk_size = 4u << 20;
};

// Sends what the local file holds beyond the acknowledged offset. The acknowledged offset is the
// number of leading bytes the server has confirmed it stored (durably); the caller may persist
// it after each Pump and pass it back after a restart. Because every chunk is written at its
// offset, resending from an older offset (a crash between the server's reply and the caller
// persisting it) rewrites the same bytes: nothing is lost or doubled.
//
// Not thread-safe; uses the given client (which must outlive the streamer) on the calling thread.
class OutputStreamer {
 public:
  OutputStreamer(GassClient& client, std::string local_path, std::string remote_path,
                 uint64_t acknowledged = 0, OutputStreamerOptions options = {});

  // Sends bytes [acknowledged, local size) in chunks and returns the new acknowledged offset.
  // A missing local file sends nothing. On the first call after construction with a non-zero
  // offset, the remote size is checked: a remote file shorter than the offset (the server lost
  // it) makes the streamer resend from the remote size. A local file shorter than the offset
  // (the job was rerun and started its output afresh) cuts the remote file to zero and starts
  // over. On error the offset reached so far is kept (acknowledged()) and the next Pump goes on.
  Result<uint64_t> Pump();
  // Pump, then cut the remote file to exactly the local size (a rerun's output may be shorter
  // than a stale remote tail). Call once the job has ended.
  Result<uint64_t> Finish();

  uint64_t acknowledged() const { return acknowledged_; }
  const std::string& remote_path() const { return remote_path_; }

 private:
  Status Reconcile();
  Status SendRange(int fd, uint64_t end);

  GassClient& client_;
  std::string local_path_;
  std::string remote_path_;
  uint64_t acknowledged_;
  OutputStreamerOptions options_;
  bool reconciled_;
};

}  // namespace kite::gass
