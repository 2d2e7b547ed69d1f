// One TLS connection of the GASS server (internal): handshake, then requests one after another on
// the kept-alive connection, each planned by PlanRequest and carried out in bounded chunks.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/accept_guard.h"
#include "credentials/tls.h"
#include "gass/request.h"
#include "gass/server.h"

namespace kite::gass {

class Session;
class Listener;

// Shared by the GassServer handle, its listener and every session, so a session that outlives
// the handle still has what it needs.
struct GassServer::State {
  GassServerOptions options;
  JobTable jobs;
  std::string host;  // as listened on, for url()
  uint16_t port = 0;
  std::atomic<uint64_t> connections{0}, requests{0}, refused{0};
  std::shared_ptr<Listener> listener;

  std::mutex mu;
  credentials::SslContextPtr ssl_now;            // guarded by mu; what new connections use
  bool closed = false;                           // guarded by mu
  std::vector<std::weak_ptr<Session>> sessions;  // guarded by mu; for Close()
};

// Every member except Start and Stop runs on the session's strand (the socket's executor).
class Session : public std::enable_shared_from_this<Session> {
 public:
  // `slot`: this connection's share of its peer's connection limit, held while the session lives.
  Session(boost::asio::ip::tcp::socket socket, std::shared_ptr<GassServer::State> state,
          PeerLimit::Slot slot = nullptr);
  void Start();  // any thread
  void Stop();   // any thread: closes the connection on the strand

 private:
  using Stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using Response = boost::beast::http::response<boost::beast::http::buffer_body>;

  void Expire(std::chrono::milliseconds d);
  void OnHandshake(boost::system::error_code ec);
  void DoReadHeader();
  void OnReadHeader(boost::system::error_code ec);
  void Dispatch();
  void DoReadBody();
  void OnReadBody(boost::system::error_code ec);
  void OnBodyDone();
  void DoSendFile();
  void OnSendChunk(boost::system::error_code ec);
  void FillChunk();
  // Sends an in-memory JSON body (with Kite-File-Size when `file_size` is given).
  void Reply(boost::beast::http::status status, std::string body, bool close,
             std::optional<uint64_t> file_size = std::nullopt);
  void BeginResponse(boost::beast::http::status status);
  void OnSent(boost::system::error_code ec);
  void DoShutdown();
  void Fail(const char* what, boost::system::error_code ec);

  credentials::SslContextPtr ssl_;  // kept while the connection lives (SetCredential may swap)
  Stream stream_;
  std::shared_ptr<GassServer::State> state_;
  PeerLimit::Slot slot_;
  std::string identity_;  // the peer's end-entity subject, set after the handshake
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::buffer_body>> parser_;
  boost::beast::http::response<boost::beast::http::empty_body> continue_;
  Response res_;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::buffer_body>> sr_;
  RequestPlan plan_;
  std::string reply_body_;            // an in-memory response body (errors, PUT results)
  std::vector<char> chunk_;           // file data in flight, kChunkSize
  uint64_t done_ = 0;                 // bytes of the current body received or sent
  std::optional<Error> write_error_;  // a pwrite failed; the rest of the body is dropped
  bool close_ = false;                // close after the current response
};

}  // namespace kite::gass
