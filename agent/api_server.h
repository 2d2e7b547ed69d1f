// The agent's HTTP/JSON API on its Unix socket (docs/api.md), with Boost.Beast.
//
// The listener accepts connections; each session reads a request, hands it to HandleApiRequest
// (agent/api.h, callable without a socket) and writes the reply, keeping the connection open
// for the next request. Every read and write has a timeout; request bodies are bounded.
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <memory>
#include <string>

#include "common/error.h"

namespace kite {
template <typename Protocol>
class AcceptLoop;
}  // namespace kite

namespace kite::agent {

class Agent;

class ApiServer {
 public:
  explicit ApiServer(Agent& agent);
  ~ApiServer();
  // Binds `path` (mode 0600; a stale socket file is replaced) and starts accepting.
  Status Listen(const std::string& path);
  void Close();

 private:
  void DoAccept();
  Agent& agent_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<AcceptLoop<boost::asio::local::stream_protocol>> loop_;
  std::string path_;
};

}  // namespace kite::agent
