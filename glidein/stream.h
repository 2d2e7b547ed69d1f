// How a startd dials its agent (pool/stream.h is the stream it then talks over): a Unix socket
// for the local startd, mutual TLS for glide-ins.
//
// Threads: everything runs on the io_context's thread; handlers never run inside the call.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/error.h"
#include "pool/stream.h"

namespace kite::glidein {

using pool::AsioByteStream;
using pool::ByteStream;

class Dialer {
 public:
  using Done = std::function<void(Result<std::unique_ptr<ByteStream>>)>;
  virtual ~Dialer() = default;
  // Connects to the agent; `done` gets the stream or why not: kUnavailable, try again later;
  // kAuthFailed, the agent is not the one this startd works for: do not dial again.
  virtual void Dial(Done done) = 0;
};

// What a tls: dialer presents and checks (StartdOptions' --proxy, --ca-dir, --agent-identity).
struct TlsDialOptions {
  std::string proxy;           // re-read on every dial; "" = $X509_USER_PROXY or /tmp/x509up_u<uid>
  std::string ca_dir;          // trusted CAs; "" = $X509_CERT_DIR or the default directory
  std::string agent_identity;  // the DN the agent's credential must speak for (required)
};

// The dialer for an --agent address: "unix:/path/to/pool.sock", or "tls:HOST:PORT" (mutual TLS
// with `tls`). kInvalidInput for any other, or for tls: without a valid agent identity or CAs.
Result<std::unique_ptr<Dialer>> MakeDialer(boost::asio::io_context& io, const std::string& agent,
                                           const TlsDialOptions& tls = {});

}  // namespace kite::glidein
