// A connection to the agent: HTTP/JSON over the agent's Unix socket, kept open across calls. The
// agent's clients share it: the CLI and kite-gridmanager (library kite_agent_client).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/json.hpp>
#include <memory>
#include <string>

#include "common/error.h"

namespace kite::client {

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
};

class AgentClient {
 public:
  // Connects to the agent of `home`. kUnavailable, with a hint, when no agent answers.
  static Result<std::unique_ptr<AgentClient>> Connect(const std::string& home);

  Result<Reply> Get(const std::string& target);
  Result<Reply> Post(const std::string& target, const boost::json::object& body);
  // Post and expect a 200 JSON object; anything else becomes an Error carrying the agent's message.
  Result<boost::json::object> PostJson(const std::string& target, const boost::json::object& body);

 private:
  AgentClient() = default;
  Result<Reply> Call(bool post, const std::string& target, const std::string& body);
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::local::stream_protocol::socket> socket_;
  std::string path_;
};

// The error text the agent put in a non-200 reply (or the body itself).
std::string AgentError(const Reply& r);

}  // namespace kite::client
