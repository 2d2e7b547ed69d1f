// The starter's end of remote system calls (docs/remote-io.md): a Unix socket in the sandbox that
// the job's preloaded library connects to (one connection, a "channel", per process that makes a
// remote call). Each request is passed on to the agent as an `rsc` frame naming its channel, and
// the agent's `rsc_reply` is written back to that channel. A request not yet answered is kept, so
// that after the agent's connection comes back (`rewind`) it is sent again; the shadow answers a
// repeated request from its last reply, so it is never done twice.
//
// Threads: the starter's io_context only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/error.h"

namespace kite::glidein {

class RscRelay {
 public:
  using Forward = std::function<void(int64_t chan, const std::string& request)>;
  RscRelay(boost::asio::io_context& io, Forward forward);
  ~RscRelay();

  // Listens on `path` (made anew; a long path is reached through its folder).
  Status Listen(const std::string& path);
  void Reply(int64_t chan, const std::string& reply);
  void Resend();  // every request still waiting for its reply, again
  void Close();

 private:
  struct Chan;
  void Accept();
  void Read(const std::shared_ptr<Chan>& c);
  void Write(const std::shared_ptr<Chan>& c);

  boost::asio::io_context& io_;
  Forward forward_;
  std::unique_ptr<boost::asio::local::stream_protocol::acceptor> acceptor_;
  std::map<int64_t, std::shared_ptr<Chan>> chans_;
  int64_t next_ = 1;
};

// True for an ELF executable with no program interpreter (statically linked): a preloaded
// library cannot reach it. False for anything else (a dynamic ELF, a script, unreadable).
bool IsStaticExecutable(const std::string& path);

}  // namespace kite::glidein
