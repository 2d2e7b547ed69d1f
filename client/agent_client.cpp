// The CLI's agent client.
#include "client/agent_client.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "common/unix_socket_path.h"

namespace kite::client {

namespace http = boost::beast::http;
namespace json = boost::json;

Result<std::unique_ptr<AgentClient>> AgentClient::Connect(const std::string& home) {
  std::unique_ptr<AgentClient> c(new AgentClient());
  c->path_ = home + "/agent.sock";
  c->socket_ = std::make_unique<boost::asio::local::stream_protocol::socket>(c->io_);
  auto addr = UnixSocketPath::For(c->path_);
  if (!addr) return Fail(addr.error());
  boost::system::error_code ec;
  c->socket_->connect(boost::asio::local::stream_protocol::endpoint(addr->address()), ec);
  if (ec) {
    return Fail(ErrorCode::kUnavailable,
                "no kite-agent is running for " + home + " (start it with: kite agent start)");
  }
  return c;
}

Result<Reply> AgentClient::Call(bool post, const std::string& target, const std::string& body) {
  http::request<http::string_body> req{post ? http::verb::post : http::verb::get, target, 11};
  req.set(http::field::host, "kite-agent");
  req.set(http::field::content_type, "application/json");
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  boost::system::error_code ec;
  http::write(*socket_, req, ec);
  if (ec) return Fail(ErrorCode::kUnavailable, "lost the connection to the agent: " + ec.message());
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read(*socket_, buf, parser, ec);
  if (ec) return Fail(ErrorCode::kUnavailable, "lost the connection to the agent: " + ec.message());
  auto res = parser.release();
  Reply r;
  r.status = static_cast<int>(res.result_int());
  r.content_type = std::string(res[http::field::content_type]);
  r.body = std::move(res.body());
  return r;
}

Result<Reply> AgentClient::Get(const std::string& target) {
  return Call(false, target, "");
}

Result<Reply> AgentClient::Post(const std::string& target, const json::object& body) {
  return Call(true, target, json::serialize(body));
}

Result<json::object> AgentClient::PostJson(const std::string& target, const json::object& body) {
  auto r = Post(target, body);
  if (!r) return Fail(r.error());
  if (r->status != 200) return Fail(ErrorCode::kInvalidInput, AgentError(*r));
  boost::system::error_code ec;
  auto v = json::parse(r->body, ec);
  if (ec || !v.is_object()) return Fail(ErrorCode::kProtocol, "the agent sent a malformed reply");
  return std::move(v.as_object());
}

std::string AgentError(const Reply& r) {
  boost::system::error_code ec;
  auto v = json::parse(r.body, ec);
  if (!ec && v.is_object() && v.as_object().contains("error") &&
      v.as_object().at("error").is_string())
    return std::string(v.as_object().at("error").as_string());
  return "agent answered " + std::to_string(r.status) + ": " + r.body;
}

}  // namespace kite::client
