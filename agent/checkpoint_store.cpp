// A pool job's checkpoints: what may be one, its digest, its files in the spool.
#include "agent/checkpoint_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>

#include "common/strings.h"
#include "rsc/ckpt_image.h"

namespace kite::agent {
namespace {

namespace fs = std::filesystem;

std::string HexOf(const unsigned char* md, unsigned int n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

// `path` is `root` or lies below it.
bool Within(std::string_view path, std::string_view root) {
  return path == root ||
         (path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/');
}

}  // namespace

CheckpointPolicy CheckpointPolicyOf(const classad::ClassAd& job, std::vector<std::string> inputs) {
  CheckpointPolicy p;
  p.transparent = job.EvaluateBool("TransparentCheckpoint").value_or(false);
  p.checkpoints = p.transparent || job.EvaluateInt("CheckpointExitCode").has_value();
  if (auto list = job.EvaluateString("TransferCheckpoint")) {
    for (auto& name : Split(*list, ',')) {
      while (name.size() > 1 && name.back() == '/') name.pop_back();
      if (!name.empty()) p.names.push_back(name);
    }
  }
  p.inputs = std::move(inputs);
  return p;
}

std::string CheckpointFileRefusal(const CheckpointPolicy& p, std::string_view path) {
  if (!p.checkpoints)
    return "the job takes no checkpoints (no checkpoint_exit_code, not checkpoint = transparent)";
  bool image = p.transparent && path == rsc::ckpt::kImageName;
  if (!image && !p.names.empty() &&
      std::none_of(p.names.begin(), p.names.end(),
                   [&](const std::string& n) { return Within(path, n); })) {
    return "'" + ForLog(path, 200) + "' is not among the job's transfer_checkpoint_files";
  }
  for (const auto& in : p.inputs) {
    if (Within(path, in) || Within(in, path))
      return "'" + ForLog(path, 200) +
             "' would take the place of the job's executable or an input file";
  }
  return "";
}

StreamHash::StreamHash() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
  if (ctx_) EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
}
StreamHash::~StreamHash() = default;
StreamHash::StreamHash(StreamHash&&) noexcept = default;
StreamHash& StreamHash::operator=(StreamHash&&) noexcept = default;

bool StreamHash::Update(uint64_t offset, std::string_view bytes) {
  if (!ctx_) return false;
  if (offset == 0 && size_ != 0) {
    EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
    size_ = 0;
  }
  if (offset != size_) return false;
  EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size());
  size_ += bytes.size();
  return true;
}

std::string StreamHash::Hex() const {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> copy(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (!ctx_ || !copy || EVP_MD_CTX_copy_ex(copy.get(), ctx_.get()) != 1 ||
      EVP_DigestFinal_ex(copy.get(), md.data(), &n) != 1)
    return "";
  return HexOf(md.data(), n);
}

std::string CheckpointDigest(std::vector<CheckpointFileSum> files) {
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  StreamHash h;
  uint64_t at = 0;
  for (const auto& f : files) {
    // Each field ends with a NUL, which no path holds: no two lists read the same.
    std::string line = f.path + '\0' + std::to_string(f.size) + '\0' + f.sha256 + '\0';
    h.Update(at, line);
    at += line.size();
  }
  return h.Hex();
}

Result<std::vector<StoredCheckpointFile>> StoredCheckpointFiles(const std::string& dir) {
  std::vector<StoredCheckpointFile> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    // The entry itself, never what a link points at.
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st)) continue;
    std::string rel = fs::relative(it->path(), dir, ec).string();
    if (!fs::is_regular_file(st))
      return Fail(ErrorCode::kInvalidInput, "the checkpoint's '" + ForLog(rel, 200) +
                                                "' is not a regular file (a link or a device)");
    out.push_back({it->path().string(), rel, static_cast<uint32_t>(st.permissions()) & 0777,
                   static_cast<uint64_t>(it->file_size(ec))});
  }
  if (ec) return Fail(ErrorCode::kIo, "cannot read the checkpoint " + dir + ": " + ec.message());
  return out;
}

Status SyncPath(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return FailErrno("open " + p);
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok ? Status{} : FailErrno("fsync " + p);
}

Status SyncTree(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> paths = {dir};
  for (auto& e : fs::recursive_directory_iterator(dir, ec)) paths.push_back(e.path().string());
  if (ec) return Fail(ErrorCode::kIo, "cannot read " + dir + ": " + ec.message());
  for (const auto& p : paths) {
    if (auto st = SyncPath(p); !st) return st;
  }
  return {};
}

uint64_t TreeBytes(const std::string& dir) {
  std::error_code ec;
  uint64_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

}  // namespace kite::agent
