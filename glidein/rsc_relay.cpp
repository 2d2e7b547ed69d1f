#include "glidein/rsc_relay.h"

#include <elf.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <vector>

#include "common/unix_socket_path.h"
#include "rsc/wire.h"

namespace kite::glidein {

namespace local = boost::asio::local;

struct RscRelay::Chan {
  explicit Chan(boost::asio::io_context& io) : sock(io) {}
  int64_t id = 0;
  local::stream_protocol::socket sock;
  char buf[64 * 1024];
  std::string in;
  std::deque<std::string> pending;  // requests sent on, not yet answered
  std::deque<std::string> out;      // replies to write
  bool writing = false;
};

RscRelay::RscRelay(boost::asio::io_context& io, Forward forward)
    : io_(io), forward_(std::move(forward)) {}

RscRelay::~RscRelay() {
  Close();
}

Status RscRelay::Listen(const std::string& path) {
  acceptor_ = std::make_unique<local::stream_protocol::acceptor>(io_);
  if (auto st = ListenPrivate(*acceptor_, path, 64); !st) return st;
  Accept();
  return {};
}

void RscRelay::Accept() {
  if (!acceptor_) return;
  auto c = std::make_shared<Chan>(io_);
  acceptor_->async_accept(c->sock, [this, c](const boost::system::error_code& ec) {
    if (ec) return;
    c->id = next_++;
    chans_[c->id] = c;
    Read(c);
    Accept();
  });
}

void RscRelay::Read(const std::shared_ptr<Chan>& c) {
  c->sock.async_read_some(
      boost::asio::buffer(c->buf), [this, c](const boost::system::error_code& ec, size_t n) {
        if (ec) {
          chans_.erase(c->id);  // the process is gone (or exec'd): its channel with it
          return;
        }
        c->in.append(c->buf, n);
        for (;;) {
          if (c->in.size() < 4) break;
          size_t len = rsc::wire::Get(c->in, 0, 4);
          if (len > rsc::kMaxMessage) {
            spdlog::warn("starter: remote I/O: a request of {} bytes; channel closed", len);
            chans_.erase(c->id);
            return;
          }
          if (c->in.size() < 4 + len) break;
          std::string req = c->in.substr(4, len);
          c->in.erase(0, 4 + len);
          c->pending.push_back(req);
          forward_(c->id, req);
        }
        Read(c);
      });
}

void RscRelay::Reply(int64_t chan, const std::string& reply) {
  auto it = chans_.find(chan);
  if (it == chans_.end()) return;  // the process went away meanwhile
  auto& c = it->second;
  if (!c->pending.empty()) c->pending.pop_front();
  std::string frame;
  rsc::wire::Put(frame, reply.size(), 4);
  frame += reply;
  c->out.push_back(std::move(frame));
  if (!c->writing) Write(c);
}

void RscRelay::Write(const std::shared_ptr<Chan>& c) {
  if (c->out.empty()) {
    c->writing = false;
    return;
  }
  c->writing = true;
  boost::asio::async_write(c->sock, boost::asio::buffer(c->out.front()),
                           [this, c](const boost::system::error_code& ec, size_t) {
                             if (ec) {
                               chans_.erase(c->id);
                               return;
                             }
                             c->out.pop_front();
                             Write(c);
                           });
}

void RscRelay::Resend() {
  for (auto& [id, c] : chans_) {
    for (const auto& req : c->pending) forward_(id, req);
  }
}

void RscRelay::Close() {
  if (acceptor_) {
    boost::system::error_code ec;
    acceptor_->close(ec);
    acceptor_.reset();
  }
  for (auto& [id, c] : chans_) {
    boost::system::error_code ec;
    c->sock.close(ec);
  }
  chans_.clear();
}

bool IsStaticExecutable(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh{};
  bool is_static = false;
  if (::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 4096) {
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    size_t size = ph.size() * sizeof(Elf64_Phdr);
    if (::pread(fd, ph.data(), size, static_cast<off_t>(eh.e_phoff)) ==
        static_cast<ssize_t>(size)) {
      is_static = true;
      for (const auto& p : ph) {
        if (p.p_type == PT_INTERP) is_static = false;
      }
    }
  }
  ::close(fd);
  return is_static;
}

}  // namespace kite::glidein
