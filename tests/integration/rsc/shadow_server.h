// The shadow's side of remote system calls for the rsc integration tests: rsc::ShadowIo served on
// a Unix socket, as the agent serves one run (through its starter's relay).
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rsc/shadow_io.h"
#include "rsc/wire.h"

namespace kite::testing {

// The shadow's side on a Unix socket: each connection's requests, one at a time, answered by one
// ShadowIo (as the agent does for one run).
class Shadow {
 public:
  Shadow(const std::string& socket, std::vector<std::string> roots) : io_(std::move(roots)) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket.c_str());
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << socket;
    EXPECT_EQ(::listen(listener_, 16), 0);
    accepter_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        conns_.push_back(c);
        workers_.emplace_back([this, c] { Serve(c); });
      }
    });
  }
  ~Shadow() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    accepter_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int c : conns_) ::shutdown(c, SHUT_RDWR);
    }
    for (auto& w : workers_) w.join();
    for (int c : conns_) ::close(c);
  }
  rsc::ShadowIo::Counts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return io_.counts();
  }
  std::vector<std::string> refusals() {
    std::lock_guard<std::mutex> lock(mu_);
    return io_.TakeRefusals();
  }

 private:
  static bool ReadAll(int fd, char* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::read(fd, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  void Serve(int c) {
    for (;;) {
      char len[4];
      if (!ReadAll(c, len, 4)) return;
      size_t n = rsc::wire::Get(std::string_view(len, 4), 0, 4);
      if (n > rsc::kMaxMessage) return;
      std::string req(n, '\0');
      if (!ReadAll(c, req.data(), n)) return;
      std::string reply;
      {
        std::lock_guard<std::mutex> lock(mu_);
        reply = io_.Handle(req);
      }
      std::string frame;
      rsc::wire::Put(frame, reply.size(), 4);
      frame += reply;
      // A program may exit without reading an answer (a read-ahead block asked for early).
      if (::send(c, frame.data(), frame.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size()))
        return;
    }
  }

  rsc::ShadowIo io_;
  int listener_ = -1;
  std::mutex mu_;
  std::thread accepter_;
  std::vector<std::thread> workers_;
  std::vector<int> conns_;
};

}  // namespace kite::testing
