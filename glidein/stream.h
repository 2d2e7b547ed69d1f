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
  // Connects to the agent; `done` gets the stream or why not (kUnavailable: try again later).
  virtual void Dial(Done done) = 0;
};

// The dialer for an --agent address: "unix:/path/to/pool.sock". kInvalidInput for any other
// (tls:HOST:PORT is not there yet).
Result<std::unique_ptr<Dialer>> MakeDialer(boost::asio::io_context& io, const std::string& agent);

}  // namespace kite::glidein
