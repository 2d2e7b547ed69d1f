// One kept-alive HTTPS/1.1 connection with mutual TLS, used synchronously by one thread at a time
// (the client library's pool and the job manager's callback sender). Every operation has a
// deadline: it runs on the connection's own io_context for at most that long.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "credentials/tls.h"
#include "credentials/verify.h"

namespace kite::gram {

struct HttpReply {
  unsigned status = 0;
  std::string body;
  std::string protocol;  // the Kite-Protocol header ("" when absent)
};

// "https://HOST:PORT/PATH" split; kInvalidInput for anything else.
struct HttpsUrl {
  std::string host;
  uint16_t port = 443;
  std::string target = "/";
};
Result<HttpsUrl> ParseHttpsUrl(const std::string& url);

class HttpsConnection {
 public:
  // Checks the peer once the handshake verified its chain (e.g. "is the job's owner").
  using PeerCheck = std::function<Status(const credentials::Identity&)>;

  // Connects and handshakes. kUnavailable: nothing listens or the network failed; kAuthFailed:
  // the TLS handshake failed (either side refused the other's chain) or `check` refused the peer.
  static Result<std::unique_ptr<HttpsConnection>> Open(credentials::SslContextPtr ctx,
                                                       const std::string& host, uint16_t port,
                                                       std::chrono::milliseconds timeout,
                                                       const PeerCheck& check = {});
  ~HttpsConnection();

  // Sends one request and reads its reply. On failure `*nothing_received` says whether no byte
  // of a reply arrived (then a kept-alive connection that the peer had closed is the likely
  // cause and the caller may resend an idempotent request on a fresh connection).
  Result<HttpReply> RoundTrip(const std::string& method, const std::string& target,
                              const std::string& body,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::chrono::milliseconds timeout, bool* nothing_received);

  // False once the peer or an error closed the connection.
  bool reusable() const;

 private:
  struct Impl;
  explicit HttpsConnection(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kite::gram
