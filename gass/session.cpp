// The GASS server's connections: TLS handshake, request headers, bodies streamed in chunks.
#include "gass/session.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace kite::gass {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Kind = RequestPlan::Kind;

constexpr size_t kChunkSize = 256u << 10;
constexpr size_t kHeaderLimit = 16u << 10;
constexpr auto kShutdownTimeout = std::chrono::seconds(2);

bool IsHttpError(boost::system::error_code ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

// Ends of a connection that are not worth a log line above debug.
bool IsQuietEnd(boost::system::error_code ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::ssl::error::stream_truncated || ec == asio::error::operation_aborted ||
         ec == asio::error::connection_reset || ec == http::error::partial_message;
}

// Writes all of `data` at `offset`, retrying short writes.
Status WriteAt(int fd, const char* data, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return FailErrno("pwrite", errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return {};
}

}  // namespace

Session::Session(asio::ip::tcp::socket socket, std::shared_ptr<GassServer::State> state,
                 PeerLimit::Slot slot)
    : ssl_([&] {
        std::lock_guard lock(state->mu);
        return state->ssl_now;
      }()),
      stream_(std::move(socket), *ssl_),
      state_(std::move(state)),
      slot_(std::move(slot)) {}

void Session::Start() {
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->Expire(self->state_->options.handshake_timeout);
    self->stream_.async_handshake(asio::ssl::stream_base::server,
                                  [self](auto ec) { self->OnHandshake(ec); });
  });
}

void Session::Stop() {
  asio::post(stream_.get_executor(),
             [self = shared_from_this()] { beast::get_lowest_layer(self->stream_).close(); });
}

void Session::Expire(std::chrono::milliseconds d) {
  beast::get_lowest_layer(stream_).expires_after(d);
}

void Session::OnHandshake(boost::system::error_code ec) {
  if (ec) {
    std::string why = credentials::PeerVerifyError(stream_.native_handle());
    spdlog::info("gass: TLS handshake failed: {}", why.empty() ? ec.message() : why);
    return;
  }
  auto id = credentials::PeerIdentity(stream_.native_handle());
  if (!id) {
    spdlog::warn("gass: peer without a verified identity: {}", id.error().message());
    return;
  }
  identity_ = id->subject;
  chunk_.resize(kChunkSize);
  DoReadHeader();
}

void Session::DoReadHeader() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(kMaxPutBody);
  plan_ = RequestPlan();
  write_error_.reset();
  done_ = 0;
  Expire(state_->options.idle_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](auto ec, size_t) { self->OnReadHeader(ec); });
}

void Session::OnReadHeader(boost::system::error_code ec) {
  if (ec == http::error::body_limit) {
    return Reply(http::status::payload_too_large,
                 ErrorBody(http::status::payload_too_large, "body larger than 16 MiB"), true);
  }
  if (ec == http::error::header_limit) {
    auto st = http::status::request_header_fields_too_large;
    return Reply(st, ErrorBody(st, "request header larger than 16 KiB"), true);
  }
  if (ec && IsHttpError(ec) && !IsQuietEnd(ec)) {
    spdlog::info("gass: malformed request from {}: {}", identity_, ec.message());
    return Reply(http::status::bad_request,
                 ErrorBody(http::status::bad_request, "malformed request: " + ec.message()), true);
  }
  if (ec) return Fail("read", ec);
  Dispatch();
}

void Session::Dispatch() {
  const auto& req = parser_->get();
  plan_ = PlanRequest(state_->jobs, identity_, req);
  close_ = !req.keep_alive() || plan_.close;
  if (plan_.kind == Kind::kError) {
    spdlog::warn("gass: refused {} {} from {}: {} {}", std::string(req.method_string()),
                 std::string(req.target()), identity_, static_cast<int>(plan_.status),
                 plan_.message);
    if (close_ || parser_->is_done()) {
      return Reply(plan_.status, ErrorBody(plan_.status, plan_.message), close_);
    }
    return DoReadBody();  // drop the (bounded) body, then reply and keep the connection
  }
  if (plan_.kind == Kind::kSend) return DoSendFile();
  if (!plan_.expect_continue) return DoReadBody();
  continue_ = {http::status::continue_, 11};
  Expire(state_->options.io_timeout);
  http::async_write(stream_, continue_, [self = shared_from_this()](auto ec, size_t) {
    if (ec) return self->Fail("write 100", ec);
    self->DoReadBody();
  });
}

void Session::DoReadBody() {
  if (parser_->is_done()) return OnBodyDone();
  auto& body = parser_->get().body();
  body.data = chunk_.data();
  body.size = chunk_.size();
  Expire(state_->options.io_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](auto ec, size_t) { self->OnReadBody(ec); });
}

void Session::OnReadBody(boost::system::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  // Bytes that arrived are written even when the body is then cut short: they sit at their own
  // offsets, and a resend of the same PUT rewrites them with the same bytes (nothing is
  // duplicated or lost).
  size_t got = chunk_.size() - parser_->get().body().size;
  if (got > 0 && plan_.kind == Kind::kReceive && !write_error_) {
    if (auto st = WriteAt(plan_.fd.get(), chunk_.data(), got, plan_.range.first + done_); !st) {
      write_error_ = st.error();
    }
  }
  done_ += got;
  if (ec) return Fail("read body", ec);
  DoReadBody();
}

void Session::OnBodyDone() {
  if (plan_.kind == Kind::kError) {
    return Reply(plan_.status, ErrorBody(plan_.status, plan_.message), close_);
  }
  int fd = plan_.fd.get();
  if (!write_error_ && plan_.truncate &&
      ::ftruncate(fd, static_cast<off_t>(*plan_.truncate)) != 0) {
    write_error_ = FailErrno("ftruncate", errno).error();
  }
  if (!write_error_ && state_->options.sync_writes && ::fdatasync(fd) != 0) {
    write_error_ = FailErrno("fdatasync", errno).error();
  }
  struct stat st {};
  if (!write_error_ && ::fstat(fd, &st) != 0) write_error_ = FailErrno("fstat", errno).error();
  if (write_error_) {
    spdlog::error("gass: writing {}: {}", plan_.path, write_error_->message());
    auto s = http::status::internal_server_error;
    return Reply(s, ErrorBody(s, "write failed: " + write_error_->message()), close_);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  plan_.fd = UniqueFd();
  Reply(http::status::ok, "{\"size\":" + std::to_string(size) + "}", close_, size);
}

// Counted before the response is written, so a client that has the reply sees it counted.
void Session::BeginResponse(http::status status) {
  state_->requests.fetch_add(1, std::memory_order_relaxed);
  if (static_cast<int>(status) >= 400 && static_cast<int>(status) < 500) {
    state_->refused.fetch_add(1, std::memory_order_relaxed);
  }
  res_ = Response(status, 11);
  res_.set(http::field::server, "kite-gass");
  res_.set(kVersionHeader, kVersion);
}

void Session::Reply(http::status status, std::string body, bool close,
                    std::optional<uint64_t> file_size) {
  BeginResponse(status);
  if (file_size) res_.set(kFileSizeHeader, std::to_string(*file_size));
  if (status == http::status::range_not_satisfiable) {
    res_.set(http::field::content_range, FormatContentRange(std::nullopt, plan_.file_size));
  }
  if (status == http::status::method_not_allowed) res_.set(http::field::allow, "GET, HEAD, PUT");
  close_ = close;
  reply_body_ = std::move(body);
  res_.set(http::field::content_type, "application/json");
  res_.content_length(reply_body_.size());
  res_.keep_alive(!close);
  res_.body().data = reply_body_.data();
  res_.body().size = reply_body_.size();
  res_.body().more = false;
  sr_.emplace(res_);
  Expire(state_->options.io_timeout);
  http::async_write(stream_, *sr_,
                    [self = shared_from_this()](auto ec, size_t) { self->OnSent(ec); });
}

void Session::DoSendFile() {
  BeginResponse(plan_.status);
  res_.set(http::field::accept_ranges, "bytes");
  res_.set(http::field::content_type, "application/octet-stream");
  if (plan_.partial) {
    res_.set(http::field::content_range, FormatContentRange(plan_.range, plan_.file_size));
  }
  res_.content_length(plan_.head ? plan_.file_size : plan_.range.length);
  res_.keep_alive(!close_);
  bool body = !plan_.head && plan_.range.length > 0;
  res_.body().data = nullptr;
  res_.body().size = 0;
  res_.body().more = body;
  sr_.emplace(res_);
  Expire(state_->options.io_timeout);
  if (!body) {
    return http::async_write(stream_, *sr_,
                             [self = shared_from_this()](auto ec, size_t) { self->OnSent(ec); });
  }
  http::async_write_header(stream_, *sr_,
                           [self = shared_from_this()](auto ec, size_t) { self->OnSendChunk(ec); });
}

void Session::FillChunk() {
  uint64_t left = plan_.range.length - done_;
  size_t want = static_cast<size_t>(std::min<uint64_t>(left, chunk_.size()));
  ssize_t n;
  do {
    n = ::pread(plan_.fd.get(), chunk_.data(), want, static_cast<off_t>(plan_.range.first + done_));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    // The file shrank (or failed) under us after Content-Length went out: the only honest
    // signal left is to cut the connection, so the client sees a short body.
    res_.body().data = nullptr;
    res_.body().size = 0;
    res_.body().more = false;
    return;
  }
  done_ += static_cast<uint64_t>(n);
  res_.body().data = chunk_.data();
  res_.body().size = static_cast<size_t>(n);
  res_.body().more = done_ < plan_.range.length;
}

void Session::OnSendChunk(boost::system::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return Fail("write", ec);
  if (sr_->is_done()) return OnSent({});
  FillChunk();
  if (res_.body().size == 0 && done_ < plan_.range.length) {
    spdlog::warn("gass: {} shrank or failed while being sent; closing", plan_.path);
    return Fail("read file", asio::error::broken_pipe);
  }
  Expire(state_->options.io_timeout);
  http::async_write(stream_, *sr_,
                    [self = shared_from_this()](auto e, size_t) { self->OnSendChunk(e); });
}

void Session::OnSent(boost::system::error_code ec) {
  if (ec) return Fail("write", ec);
  plan_ = RequestPlan();  // closes the file
  if (close_) return DoShutdown();
  DoReadHeader();
}

void Session::DoShutdown() {
  beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
  stream_.async_shutdown(
      [self = shared_from_this()](auto) { beast::get_lowest_layer(self->stream_).close(); });
}

void Session::Fail(const char* what, boost::system::error_code ec) {
  if (IsQuietEnd(ec)) {
    spdlog::debug("gass: connection of {} ended ({}: {})", identity_, what, ec.message());
  } else {
    spdlog::info("gass: connection of {} failed: {}: {}", identity_, what, ec.message());
  }
  beast::get_lowest_layer(stream_).close();
}

}  // namespace kite::gass
