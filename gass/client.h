// The GASS client a job manager uses to pull a job's input from, and push its output to, the
// gridmanager's GASS server (docs/gass.md). libcurl over mutual TLS with the delegated proxy.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "credentials/tls.h"

namespace kite::gass {

struct GassClientOptions {
  // "https://HOST:PORT" of the server (GassServer::url()); no trailing path.
  std::string base_url;
  // The client credential (the user's delegated proxy) and the CAs to check the server with.
  credentials::CurlTls tls;
  // Giving up on a connection attempt, and on a transfer that moves no byte for this long.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds stall_timeout = std::chrono::seconds(30);
};

// One libcurl handle, reused for every call so the TLS connection stays open between requests
// (a handshake costs ~5 ms of CPU). Not thread-safe: use one client per thread.
//
// `path` arguments are request targets, "/jobs/<job_id>/<name>" (MakeTarget). Errors: 403 ->
// kAuthFailed, 404 -> kNotFound, 400/411/413/416 -> kInvalidInput, a failed TLS handshake ->
// kAuthFailed, no connection / timeout / connection lost -> kUnavailable, a reply that breaks
// the protocol -> kProtocol, a local file problem -> kIo. Messages carry the server's reason.
class GassClient {
 public:
  explicit GassClient(GassClientOptions options);
  ~GassClient();
  GassClient(GassClient&&) noexcept;
  GassClient& operator=(GassClient&&) noexcept;

  // Downloads the whole file to `local_path` (created 0666 & ~umask when missing). When the
  // local file already holds a prefix (a download cut short earlier), only the rest is fetched
  // with a Range request; a local file longer than the remote one is fetched again from the
  // start. Returns the file's size; on success the local file is fsynced and equals the remote.
  Result<uint64_t> Get(std::string_view path, const std::string& local_path);
  // Up to `length` bytes from `offset`; fewer at the end of the file, "" at or past it.
  Result<std::string> GetRange(std::string_view path, uint64_t offset, uint64_t length);
  // The file's size (HEAD).
  Result<uint64_t> Size(std::string_view path);
  // Writes `data` (at most kMaxPutBody bytes) at `offset`, creating the file when missing;
  // repeating the same call leaves the file unchanged. Returns the file's size afterwards.
  Result<uint64_t> PutAt(std::string_view path, uint64_t offset, std::string_view data);
  // Cuts the remote file to `size` bytes (or extends it with zeros). Returns the new size.
  Result<uint64_t> Truncate(std::string_view path, uint64_t size);
  // Makes PATH a folder (with those above it) on the server (an empty PUT with Kite-Folder: 1).
  Status MakeFolder(std::string_view path);

  // TCP connections opened so far (1 when every call reused the first).
  uint64_t connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kite::gass
