// The byte stream the pool protocol runs over, whatever carries it: a Unix socket (the local
// startd), or a mutual-TLS stream after its handshake (glide-ins). The startd (glidein/stream.h)
// and the agent (agent/pool.h) both talk through it.
//
// Threads: everything runs on the io_context's thread; handlers never run inside the call.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <memory>

namespace kite::pool {

class ByteStream {
 public:
  using Handler = std::function<void(boost::system::error_code, size_t)>;
  virtual ~ByteStream() = default;
  // Reads what is there (at least one byte) into buf[0, size).
  virtual void AsyncReadSome(char* buf, size_t size, Handler done) = 0;
  // Writes all of data[0, size); the bytes must stay valid until `done`.
  virtual void AsyncWrite(const char* data, size_t size, Handler done) = 0;
  virtual void Close() = 0;
};

// A ByteStream over any Asio stream (a socket, an ssl::stream).
template <class Stream>
class AsioByteStream : public ByteStream {
 public:
  explicit AsioByteStream(Stream s) : s_(std::move(s)) {}
  void AsyncReadSome(char* buf, size_t size, Handler done) override {
    s_.async_read_some(boost::asio::buffer(buf, size), std::move(done));
  }
  void AsyncWrite(const char* data, size_t size, Handler done) override {
    boost::asio::async_write(s_, boost::asio::buffer(data, size), std::move(done));
  }
  void Close() override {
    boost::system::error_code ec;
    s_.lowest_layer().close(ec);
  }

 private:
  Stream s_;
};

}  // namespace kite::pool
