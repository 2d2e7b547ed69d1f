// The REST status endpoint's TCP listener (plain HTTP) on the agent's io_context.
//
// Sessions are agent/http_session.h's, as on the agent's Unix socket; requests go to RestService
// (agent/rest.h). Loopback only unless the configuration allows other addresses.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "agent/listen_address.h"
#include "common/error.h"

namespace kite {
template <typename Protocol>
class AcceptLoop;
class PeerLimit;
}  // namespace kite

namespace kite::agent {

class Agent;
class IdleRoster;
class RestService;

// Starts the endpoint the agent's options ask for: the token (LoadOrCreateRestToken), the listener,
// and HOME/rest.address ("http://HOST:PORT/", for `kite agent status` and scripts).
Result<std::unique_ptr<class RestServer>> StartRestServer(Agent& agent);

class RestServer {
 public:
  RestServer(Agent& agent, std::string token);
  ~RestServer();
  // Binds `endpoint` and starts accepting.
  Status Listen(const boost::asio::ip::tcp::endpoint& endpoint);
  void Close();
  // The address bound (the real port when 0 was asked for).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  RestService& service() { return *service_; }

 private:
  void DoAccept();
  Agent& agent_;
  std::unique_ptr<RestService> service_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<AcceptLoop<boost::asio::ip::tcp>> loop_;
  std::shared_ptr<IdleRoster> roster_;  // connections waiting for a request
  std::shared_ptr<PeerLimit> peers_;    // authenticated connections per address
};

}  // namespace kite::agent
