// One connection to the agent, as frames of the pool protocol (pool/protocol.h): a read loop that
// cuts frames and a write queue sending one frame at a time.
//
// Threads: runs on the io_context's thread. After Close() no handler runs.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "glidein/stream.h"
#include "pool/protocol.h"

namespace kite::glidein {

class Link : public std::enable_shared_from_this<Link> {
 public:
  struct Handlers {
    std::function<void(pool::Frame)> frame;    // a whole frame arrived
    std::function<void(const Error&)> closed;  // the connection is gone (read, write, parse)
    std::function<void()> drained;             // the write queue just became empty
  };
  Link(std::unique_ptr<ByteStream> stream, Handlers handlers);

  void Start();  // begins reading
  void Send(const pool::Message& m, std::string_view body = {});
  size_t queued() const { return queue_.size(); }
  void Close();

 private:
  void DoRead();
  void OnRead(boost::system::error_code ec, size_t n);
  void DoWrite();
  void OnWrite(boost::system::error_code ec);
  void Abort(const Error& e);

  std::unique_ptr<ByteStream> stream_;
  Handlers handlers_;
  pool::FrameReader reader_;
  std::string read_buf_ = std::string(64 << 10, '\0');
  std::deque<std::string> queue_;  // front() is being written
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace kite::glidein
