// One connection as frames of the pool protocol (pool/protocol.h): a read loop that cuts frames
// and a write queue sending one frame at a time. Every connection of the pool rides on it: the
// agent's to each startd (agent/pool.cpp), the startd's to its agent, and each starter's to its
// startd (glidein/).
//
// Threads: runs on the io_context's thread. After Close() no handler runs.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "common/error.h"
#include "pool/protocol.h"
#include "pool/stream.h"

namespace kite::pool {

class Link : public std::enable_shared_from_this<Link> {
 public:
  struct Handlers {
    std::function<void(Frame)> frame;          // a whole frame arrived
    std::function<void(const Error&)> closed;  // the connection is gone (read, write, parse)
    std::function<void()> sent;                // a frame was written (queued_bytes() went down)
    std::function<void()> drained;             // the write queue just became empty
  };
  // `peer` names the other end in errors ("the agent", "the starter of run R").
  Link(std::unique_ptr<ByteStream> stream, Handlers handlers, std::string peer = "the agent");

  void Start();  // begins reading
  void Send(const Message& m, std::string_view body = {});
  size_t queued() const { return queue_.size(); }
  size_t queued_bytes() const { return queued_bytes_; }
  // The steady clock (common/clock.h) when bytes last arrived; when Start() was called before.
  double heard_at() const { return heard_at_; }
  // No frame is handed over while paused (and no more is read than the frames already read):
  // how a reader that cannot pass frames on yet pushes back on the sender.
  void Pause() { paused_ = true; }
  void Resume();
  // Ends the connection; no handler runs after it (`closed` is only for what the link noticed).
  void Close();
  // Ends it once every frame queued so far is written (a refusal, then the hang-up); at once when
  // none is. Nothing more is read or handed over meanwhile; a failed write ends it too.
  void CloseWhenSent();
  bool is_closed() const { return closed_; }

 private:
  void DoRead();
  void OnRead(boost::system::error_code ec, size_t n);
  void Deliver();  // the frames read, while not paused; then reads more
  void DoWrite();
  void OnWrite(boost::system::error_code ec);
  void Abort(const Error& e);

  std::unique_ptr<ByteStream> stream_;
  Handlers handlers_;
  std::string peer_;
  FrameReader reader_;
  std::string read_buf_ = std::string(64 << 10, '\0');
  std::deque<std::string> queue_;  // front() is being written
  size_t queued_bytes_ = 0;
  double heard_at_ = 0;
  bool writing_ = false, reading_ = false, paused_ = false;
  bool closed_ = false;
  bool close_when_sent_ = false;
};

}  // namespace kite::pool
