// The gridmanager's client of a Kite gatekeeper (docs/protocol.md): delegation, two-phase submit,
// status, cancel, signal and commit-end over kept-alive mutual-TLS connections.
//
// Thread-safe: any number of threads may call at once; each call borrows a connection from a
// small pool (opening one when none is idle) and returns it afterwards. Every mutating call takes
// a client request id: sending it again after any failure is safe and returns the first result.
// Errors: kUnavailable (site unreachable, connection lost: try again with the same request id),
// kTimeout, kAuthFailed (TLS refused, DN not in the grid-mapfile), kProxyExpired, kInvalidInput
// (the site refused the request as malformed), kNotFound (no such job/delegation), kConflict
// (not valid in the job's state), kProtocol (the site speaks another protocol version).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"
#include "gram/protocol.h"

namespace kite::gram {

class HttpsConnection;

struct ClientOptions {
  std::string host;  // the gatekeeper's host; its certificate must name it
  uint16_t port = 0;
  credentials::Credential credential;  // the user's proxy (presented, and used to delegate)
  std::shared_ptr<const credentials::Verifier> verifier;  // trusted CAs
  std::chrono::milliseconds timeout{30000};  // per connect, handshake, request and reply
  size_t max_idle_connections = 16;          // kept alive for reuse (one per calling thread)
};

// What Delegate returns.
struct Delegation {
  std::string id;
  double not_after = 0;  // Unix seconds: when the delegated proxy expires
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Create(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Checks that the gatekeeper answers and maps us (GET /ping); returns the mapped account.
  Result<std::string> Ping();
  // The site's ad (GET /info; docs/protocol.md, "Site information"): its ClassAd text.
  Result<std::string> Info();

  // Delegates a proxy signed by our credential (keys never travel). With `existing_id`, refreshes
  // that delegation in place (same id; jobs use the new proxy from then on). Uses `request_id`
  // and `request_id + "/complete"` as the two request ids.
  Result<Delegation> Delegate(const std::string& request_id, const std::string& existing_id = "",
                              std::chrono::seconds lifetime = std::chrono::hours(12));

  // Phase one: the site stores the job in pending-commit and returns its contact. `existing`,
  // when given, says whether the site made the job for an earlier send of this request id (its
  // addresses and delegation are that send's, not this one's).
  Result<JobStatus> Submit(const std::string& request_id, const JobDescription& job,
                           bool* existing = nullptr);
  // Phase two: the job may start.
  Result<JobStatus> Commit(const std::string& request_id, const std::string& job_id);
  Result<JobStatus> Status(const std::string& job_id);
  // With `only_pending`, only a job that has not started is cancelled (kConflict otherwise).
  Result<JobStatus> Cancel(const std::string& request_id, const std::string& job_id,
                           bool only_pending = false);
  Result<JobStatus> Signal(const std::string& request_id, const std::string& job_id,
                           const SignalRequest& what);
  // The client stored the final state and output: the site may forget the job.
  kite::Status CommitEnd(const std::string& request_id, const std::string& job_id);

  // Connections opened so far (a measure of reuse for tests and benchmarks).
  size_t connections_opened() const;

 private:
  explicit Client(ClientOptions options);
  // `status`, when given, receives the reply's HTTP status.
  Result<std::string> Call(const std::string& method, const std::string& target,
                           const std::string& body, int* status = nullptr);
  Result<std::unique_ptr<HttpsConnection>> Borrow(bool* reused);
  void Return(std::unique_ptr<HttpsConnection> c);

  ClientOptions options_;
  std::shared_ptr<void> ctx_;  // credentials::SslContextPtr, type-erased to keep Asio out
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<HttpsConnection>> idle_;  // guarded by mu_
  size_t opened_ = 0;                                   // guarded by mu_
};

// The job id of a contact "https://HOST:PORT/jobs/<id>" (or the id itself).
std::string JobIdFromContact(const std::string& contact);

}  // namespace kite::gram
