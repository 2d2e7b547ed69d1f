// HttpsConnection: Beast over an Asio SSL stream, each operation bounded by run_for.
#include "gram/https_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <charconv>

#include "gram/protocol.h"

namespace kite::gram {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Why a TLS-level failure happened, as an error a caller can branch on.
Error TlsError(const boost::system::error_code& ec, const std::string& what) {
  std::string m = ec.message();
  if (m.find("expired") != std::string::npos) {
    return Error(ErrorCode::kProxyExpired,
                 what + ": the peer refused an expired credential (" + m + ")");
  }
  return Error(ErrorCode::kAuthFailed, what + ": TLS refused (" + m + ")");
}

bool IsTlsRefusal(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() &&
         ec != asio::ssl::error::stream_truncated &&
         ec.message().find("alert") != std::string::npos;
}

}  // namespace

Result<HttpsUrl> ParseHttpsUrl(const std::string& url) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) return Fail(ErrorCode::kInvalidInput, "not https://: " + url);
  std::string rest = url.substr(kScheme.size());
  HttpsUrl u;
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.target = rest.substr(slash);
  auto colon = authority.rfind(':');
  u.host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    std::string_view p = std::string_view(authority).substr(colon + 1);
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
    if (ec != std::errc() || ptr != p.data() + p.size() || port == 0 || port > 65535) {
      return Fail(ErrorCode::kInvalidInput, "bad port in " + url);
    }
    u.port = static_cast<uint16_t>(port);
  }
  if (u.host.empty()) return Fail(ErrorCode::kInvalidInput, "no host in " + url);
  return u;
}

struct HttpsConnection::Impl {
  explicit Impl(credentials::SslContextPtr c) : ctx(std::move(c)), stream(io, *ctx) {}

  // Runs the io_context until `done` or the deadline; on timeout closes the socket so the pending
  // operation completes with operation_aborted. Returns false on timeout.
  bool Run(std::chrono::milliseconds timeout, const bool& done) {
    io.restart();
    io.run_for(timeout);
    if (done) return true;
    boost::system::error_code ignored;
    stream.lowest_layer().close(ignored);
    open = false;
    io.restart();
    io.run();
    return false;
  }

  credentials::SslContextPtr ctx;
  asio::io_context io;
  asio::ssl::stream<tcp::socket> stream;
  boost::beast::flat_buffer buffer;
  bool open = false;
};

HttpsConnection::HttpsConnection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpsConnection::~HttpsConnection() = default;

bool HttpsConnection::reusable() const {
  return impl_->open;
}

Result<std::unique_ptr<HttpsConnection>> HttpsConnection::Open(credentials::SslContextPtr ctx,
                                                               const std::string& host,
                                                               uint16_t port,
                                                               std::chrono::milliseconds timeout,
                                                               const PeerCheck& check) {
  auto impl = std::make_unique<Impl>(std::move(ctx));
  std::string where = host + ":" + std::to_string(port);
  boost::system::error_code ec;
  tcp::resolver resolver(impl->io);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return Fail(ErrorCode::kUnavailable, "resolve " + host + ": " + ec.message());
  bool done = false;
  asio::async_connect(impl->stream.lowest_layer(), endpoints, [&](auto e, const auto&) {
    ec = e;
    done = true;
  });
  if (!impl->Run(timeout, done)) return Fail(ErrorCode::kTimeout, "connect " + where);
  if (ec) return Fail(ErrorCode::kUnavailable, "connect " + where + ": " + ec.message());
  impl->stream.lowest_layer().set_option(tcp::no_delay(true), ec);
  // With a PeerCheck the caller decides who the peer must be (a user's proxy names no host).
  if (auto st = credentials::SetPeerHost(impl->stream.native_handle(), check ? "" : host); !st) {
    return Fail(st.error());
  }
  done = false;
  impl->stream.async_handshake(asio::ssl::stream_base::client, [&](auto e) {
    ec = e;
    done = true;
  });
  if (!impl->Run(timeout, done)) return Fail(ErrorCode::kTimeout, "TLS handshake with " + where);
  if (ec) {
    std::string why = credentials::PeerVerifyError(impl->stream.native_handle());
    if (!why.empty()) return Fail(ErrorCode::kAuthFailed, where + " not trusted: " + why);
    // An alert is the peer's refusal; an end of stream or a reset is a peer that went away.
    if (IsTlsRefusal(ec)) return Fail(TlsError(ec, where));
    return Fail(ErrorCode::kUnavailable, "TLS handshake with " + where + ": " + ec.message());
  }
  if (check) {
    auto id = credentials::PeerIdentity(impl->stream.native_handle());
    if (!id) return Fail(id.error());
    if (auto st = check(*id); !st) return Fail(st.error());
  }
  impl->open = true;
  return std::unique_ptr<HttpsConnection>(new HttpsConnection(std::move(impl)));
}

Result<HttpReply> HttpsConnection::RoundTrip(
    const std::string& method, const std::string& target, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers,
    std::chrono::milliseconds timeout, bool* nothing_received) {
  *nothing_received = true;
  if (!impl_->open) return Fail(ErrorCode::kUnavailable, "connection closed");
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "kite");
  req.set(kProtocolHeader, std::to_string(kProtocolVersion));
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.keep_alive(true);
  req.prepare_payload();
  boost::system::error_code ec;
  bool done = false;
  http::async_write(impl_->stream, req, [&](auto e, size_t) {
    ec = e;
    done = true;
  });
  if (!impl_->Run(timeout, done)) return Fail(ErrorCode::kTimeout, "sending " + target);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  if (!ec) {
    done = false;
    http::async_read(impl_->stream, impl_->buffer, parser, [&](auto e, size_t) {
      ec = e;
      done = true;
    });
    if (!impl_->Run(timeout, done)) {
      *nothing_received = false;  // the peer may have acted on it: do not blindly resend
      return Fail(ErrorCode::kTimeout, "no reply to " + target + " within the timeout");
    }
  }
  if (ec) {
    impl_->open = false;
    *nothing_received = !parser.got_some();
    if (IsTlsRefusal(ec)) return Fail(TlsError(ec, target));
    return Fail(ErrorCode::kUnavailable, "connection lost during " + target + ": " + ec.message());
  }
  auto res = parser.release();
  if (!res.keep_alive()) impl_->open = false;
  HttpReply out;
  out.status = res.result_int();
  out.body = std::move(res.body());
  if (auto it = res.find(kProtocolHeader); it != res.end()) out.protocol = std::string(it->value());
  return out;
}

}  // namespace kite::gram
