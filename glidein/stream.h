// The byte stream a startd talks to its agent over, and how it is dialled. The pool protocol
// runs over any stream: a Unix socket for the local startd today, mutual TLS for glide-ins later
// (a TlsDialer making AsioByteStream<ssl::stream<tcp::socket>> after its handshake).
//
// Threads: everything runs on the io_context's thread; handlers never run inside the call.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/error.h"

namespace kite::glidein {

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

class Dialer {
 public:
  using Done = std::function<void(Result<std::unique_ptr<ByteStream>>)>;
  virtual ~Dialer() = default;
  // Connects to the agent; `done` gets the stream or why not (kUnavailable: try again later).
  virtual void Dial(Done done) = 0;
};

// The dialer for an --agent address: "unix:/path/to/pool.sock". kInvalidInput for any other
// (tls:HOST:PORT is not there yet).
Result<std::unique_ptr<Dialer>> MakeDialer(boost::asio::io_context& io, const std::string& agent);

}  // namespace kite::glidein
