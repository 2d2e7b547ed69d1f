// Streaming a growing local file to a GASS server at byte offsets.
#include "gass/output_streamer.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>

#include "gass/protocol.h"
#include "gass/unique_fd.h"

namespace kite::gass {

OutputStreamer::OutputStreamer(GassClient& client, std::string local_path, std::string remote_path,
                               uint64_t acknowledged, OutputStreamerOptions options)
    : client_(client),
      local_path_(std::move(local_path)),
      remote_path_(std::move(remote_path)),
      acknowledged_(acknowledged),
      options_(options),
      reconciled_(acknowledged == 0) {
  options_.chunk_size = std::clamp<size_t>(options_.chunk_size, 1, kMaxPutBody);
}

Status OutputStreamer::Reconcile() {
  auto remote = client_.Size(remote_path_);
  if (!remote && remote.error().code() != ErrorCode::kNotFound) return Fail(remote.error());
  uint64_t have = remote ? *remote : 0;
  if (have < acknowledged_) {
    spdlog::warn("gass: {} holds {} bytes, fewer than the acknowledged {}; resending from there",
                 remote_path_, have, acknowledged_);
    acknowledged_ = have;
  }
  reconciled_ = true;
  return {};
}

Status OutputStreamer::SendRange(int fd, uint64_t end) {
  std::string buf;
  while (acknowledged_ < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(options_.chunk_size, end - acknowledged_));
    buf.resize(want);
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(acknowledged_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read " + local_path_, errno);
    if (n == 0) break;  // the file shrank since we looked; the next Pump sees it
    buf.resize(static_cast<size_t>(n));
    auto size = client_.PutAt(remote_path_, acknowledged_, buf);
    if (!size) return Fail(size.error());
    acknowledged_ += static_cast<uint64_t>(n);
  }
  return {};
}

Result<uint64_t> OutputStreamer::Pump() {
  if (!reconciled_) {
    if (auto st = Reconcile(); !st) return Fail(st.error());
  }
  UniqueFd fd(::open(local_path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return acknowledged_;
    return FailErrno("open " + local_path_, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailErrno("stat " + local_path_, errno);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < acknowledged_) {
    spdlog::info("gass: {} shrank below what was sent; sending it again from the start",
                 local_path_);
    auto cut = client_.Truncate(remote_path_, 0);
    if (!cut) return Fail(cut.error());
    acknowledged_ = 0;
  }
  if (auto sent = SendRange(fd.get(), size); !sent) return Fail(sent.error());
  return acknowledged_;
}

Result<uint64_t> OutputStreamer::Finish() {
  auto pumped = Pump();
  if (!pumped) return pumped;
  auto cut = client_.Truncate(remote_path_, acknowledged_);
  if (!cut) return Fail(cut.error());
  return acknowledged_;
}

}  // namespace kite::gass
