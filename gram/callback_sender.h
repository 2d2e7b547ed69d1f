// State-change callbacks from the job manager to the client's callback URL: HTTPS POST with mutual
// TLS, the job manager presenting the job's delegated proxy and accepting only a server that
// speaks for the job's owner. Best effort: a few retries with backoff, then dropped (the client
// also polls). Connections are kept alive per (server, credential).
//
// Thread-safe: Send and CredentialChanged may be called from any thread; one helper thread sends.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/error.h"
#include "credentials/verify.h"

namespace kite::gram {

struct Callback {
  std::string url;              // https://HOST:PORT/PATH
  std::string credential_path;  // the delegated proxy to present
  std::string owner;            // the identity the callback server must prove
  std::string body;             // JobStatus JSON
};

class CallbackSender {
 public:
  explicit CallbackSender(std::shared_ptr<const credentials::Verifier> verifier);
  ~CallbackSender();

  void Send(Callback c);
  // The proxy at `path` was replaced: new connections present the new one.
  void CredentialChanged(const std::string& path);
  void Stop();

  size_t sent() const;  // delivered callbacks (for tests and benchmarks)

 private:
  struct Item;
  struct Cache;
  void Loop();
  // One attempt to deliver `cb` (on the helper thread; uses cache_).
  Status Deliver(const Callback& cb);

  std::shared_ptr<const credentials::Verifier> verifier_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Item>> queue_;       // guarded by mu_; ordered by due time per retry
  std::vector<std::string> changed_credentials_;  // guarded by mu_
  bool stop_ = false;                             // guarded by mu_
  size_t sent_ = 0;                               // guarded by mu_
  std::unique_ptr<Cache> cache_;                  // used by the helper thread only
  std::thread thread_;
};

}  // namespace kite::gram
