// A small HTTPS server the gridmanager embeds to receive job-state callbacks from job managers
// (docs/protocol.md, "Callbacks"): POST <any path> with a JobStatus body, over mutual TLS. Only
// clients whose verified identity is `accepted_identity` (the user's, since job managers present
// the user's delegated proxy) are heard; others get 403.
//
// Runs its own io thread; the handler is called on that thread, one callback at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "gram/protocol.h"

namespace kite::gram {

struct CallbackServerOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;                   // 0: any free port (see port())
  credentials::Credential credential;  // presented to job managers (the user's proxy)
  std::shared_ptr<const credentials::Verifier> verifier;
  std::string accepted_identity;  // empty: any verified identity
  // Called with each well-formed callback; `path` is the URL path it was posted to.
  std::function<void(const std::string& path, const JobStatus& status)> handler;
  // Open connections one job manager host may hold (0: no limit); more are closed at once.
  size_t max_connections_per_peer = 256;
};

class CallbackServer {
 public:
  static Result<std::unique_ptr<CallbackServer>> Start(CallbackServerOptions options);
  ~CallbackServer();  // stops the server and joins its thread

  // Presents `credential` (e.g. a refreshed proxy) to connections accepted from now on.
  Status SetCredential(const credentials::Credential& credential);

  uint16_t port() const;
  // "https://HOST:PORT" + path: what to put in JobDescription::callback_url.
  std::string Url(const std::string& path = "/callbacks") const;

 private:
  struct Impl;
  explicit CallbackServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kite::gram
