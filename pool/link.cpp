// The frame connection.
#include "pool/link.h"

#include <boost/asio/error.hpp>

#include "common/clock.h"

namespace kite::pool {

Link::Link(std::unique_ptr<ByteStream> stream, Handlers handlers, std::string peer)
    : stream_(std::move(stream)), handlers_(std::move(handlers)), peer_(std::move(peer)) {}

void Link::Start() {
  heard_at_ = SteadyNow();
  DoRead();
}

void Link::Send(const Message& m, std::string_view body) {
  if (closed_) return;
  queue_.push_back(EncodeFrame(m, body));
  queued_bytes_ += queue_.back().size();
  if (!writing_) DoWrite();
}

void Link::Close() {
  if (closed_) return;
  closed_ = true;
  stream_->Close();
}

void Link::CloseWhenSent() {
  if (closed_) return;
  if (queue_.empty()) return Close();
  close_when_sent_ = true;
  paused_ = true;  // nothing more is handed over
}

void Link::Resume() {
  if (!paused_ || closed_ || close_when_sent_) return;
  paused_ = false;
  Deliver();
}

void Link::DoRead() {
  reading_ = true;
  stream_->AsyncReadSome(read_buf_.data(), read_buf_.size(),
                         [self = shared_from_this()](auto ec, size_t n) { self->OnRead(ec, n); });
}

void Link::OnRead(boost::system::error_code ec, size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec == boost::asio::error::eof)
    return Abort(Error(ErrorCode::kUnavailable, peer_ + " closed the connection"));
  if (ec) return Abort(Error(ErrorCode::kUnavailable, peer_ + ": " + ec.message()));
  heard_at_ = SteadyNow();
  reader_.Feed(std::string_view(read_buf_.data(), n));
  Deliver();
}

void Link::Deliver() {
  while (!paused_) {
    auto f = reader_.Next();
    if (!f) return Abort(f.error().Wrap("a frame from " + peer_));
    if (!*f) {
      if (!reading_) DoRead();
      return;
    }
    handlers_.frame(std::move(**f));
    if (closed_) return;
  }
}

void Link::DoWrite() {
  writing_ = true;
  const std::string& front = queue_.front();
  stream_->AsyncWrite(front.data(), front.size(),
                      [self = shared_from_this()](auto ec, size_t) { self->OnWrite(ec); });
}

void Link::OnWrite(boost::system::error_code ec) {
  writing_ = false;
  if (closed_) return;
  if (ec) return Abort(Error(ErrorCode::kUnavailable, "writing to " + peer_ + ": " + ec.message()));
  queued_bytes_ -= queue_.front().size();
  queue_.pop_front();
  if (close_when_sent_) {
    if (queue_.empty()) return Close();
    return DoWrite();
  }
  if (handlers_.sent) {
    handlers_.sent();
    if (closed_) return;
  }
  if (!queue_.empty()) {
    if (!writing_) DoWrite();
    return;
  }
  if (handlers_.drained) handlers_.drained();
}

void Link::Abort(const Error& e) {
  Close();
  handlers_.closed(e);
}

}  // namespace kite::pool
