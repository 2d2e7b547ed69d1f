// The GASS file server of a gridmanager: HTTPS with mutual TLS, serving each job's registered
// files to the job's own identity (docs/gass.md). Downloads with ranges, uploads at byte offsets.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "gass/job_table.h"

namespace kite::gass {

struct GassServerOptions {
  // "HOST:PORT" to listen on ("[::1]:0" for IPv6); port 0 picks a free port.
  std::string listen = "127.0.0.1:0";
  // What the server presents: a host certificate with its key, or the user's proxy.
  credentials::Credential credential;
  // Checks every client's chain during the handshake (required).
  std::shared_ptr<const credentials::Verifier> verifier;
  // Limits for one connection: the TLS handshake, the wait for the next request on a kept-alive
  // connection, and each read or write of at most one chunk (256 KiB) once a request is under way.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
  std::chrono::milliseconds io_timeout = std::chrono::seconds(30);
  // fdatasync a written file before acknowledging the PUT, so an acknowledged offset survives a
  // crash of this machine (docs/architecture.md, "Acknowledged means durable"). Off only for
  // benchmarks.
  bool sync_writes = true;
  // Open connections one client address may hold (0: no limit); more are closed at once. Every
  // job manager of a site connects from the site's address, so the default is generous.
  size_t max_connections_per_peer = 512;
};

struct GassServerStats {
  uint64_t connections = 0;  // accepted TCP connections
  uint64_t requests = 0;     // requests answered (any status)
  uint64_t refused = 0;      // answered with 4xx
};

// Runs on the caller's io_context, which one or several threads may run: each connection lives on
// its own strand and the job table has its own lock, so every member function is thread-safe.
// File reads and writes happen on the io_context's threads (local disk, 256 KiB at a time).
class GassServer {
 public:
  // Binds and starts accepting (the io_context must be run for anything to happen).
  static Result<std::unique_ptr<GassServer>> Create(boost::asio::io_context& io,
                                                    GassServerOptions options);
  ~GassServer();  // Close()
  GassServer(const GassServer&) = delete;
  GassServer& operator=(const GassServer&) = delete;

  uint16_t port() const;
  // "https://HOST:PORT" (HOST as listened on; IPv6 in brackets).
  std::string url() const;

  // Exposes files of `job_id` to the TLS peer whose end-entity subject (Identity::subject: the
  // user's DN, which every proxy delegated from the user carries) equals `allowed_identity`.
  // Replaces an earlier registration of the same id. See JobTable::Add for what is refused.
  Status AddJob(std::string job_id, std::string allowed_identity,
                std::vector<ReadableFile> readable, std::vector<WritableFile> writable);
  // Later requests for the job get 404; transfers under way finish. False when not registered.
  bool RemoveJob(const std::string& job_id);

  // Presents `credential` (e.g. a refreshed proxy) to connections accepted from now on; open
  // connections keep what they started with. Thread-safe.
  Status SetCredential(const credentials::Credential& credential);

  // Stops accepting and ends every open connection. Idempotent.
  void Close();
  GassServerStats stats() const;

  struct State;

 private:
  explicit GassServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace kite::gass
