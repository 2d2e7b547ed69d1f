// Dialling the agent.
#include "glidein/stream.h"

#include <boost/asio/local/stream_protocol.hpp>

#include "common/unix_socket_path.h"

namespace kite::glidein {
namespace {

namespace asio = boost::asio;
using asio::local::stream_protocol;

class UnixDialer : public Dialer {
 public:
  UnixDialer(asio::io_context& io, std::string path) : io_(io), path_(std::move(path)) {}

  void Dial(Done done) override {
    auto addr = UnixSocketPath::For(path_);
    if (!addr) {
      asio::post(io_, [done, e = addr.error()] { done(Fail(e)); });
      return;
    }
    auto sock = std::make_shared<stream_protocol::socket>(io_);
    // The address object must live until the connect is done (it may hold a directory open).
    auto held = std::make_shared<UnixSocketPath>(std::move(*addr));
    sock->async_connect(
        stream_protocol::endpoint(held->address()),
        [this, sock, held, done](boost::system::error_code ec) {
          if (ec) {
            return done(Fail(ErrorCode::kUnavailable, "connect " + path_ + ": " + ec.message()));
          }
          using S = AsioByteStream<stream_protocol::socket>;
          done(std::unique_ptr<ByteStream>(new S(std::move(*sock))));
        });
  }

 private:
  asio::io_context& io_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<Dialer>> MakeDialer(asio::io_context& io, const std::string& agent) {
  if (agent.starts_with("unix:") && agent.size() > 5) {
    return std::unique_ptr<Dialer>(new UnixDialer(io, agent.substr(5)));
  }
  return Fail(ErrorCode::kInvalidInput,
              "--agent '" + agent + "': expected unix:/path/to/pool.sock (tls: is not there yet)");
}

}  // namespace kite::glidein
