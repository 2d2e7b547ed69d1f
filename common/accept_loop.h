// One accept loop for every Kite listener: pauses after resource errors instead of spinning,
// logs quietly under a flood, and bounds each peer's open connections (common/accept_guard.h).
//
// Usage: make it with std::make_shared over an open, listening acceptor, call Start(); call
// Stop() before closing the acceptor. The acceptor must outlive the loop's pending operations
// (close it, or stop its io_context, before destroying it).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "common/accept_guard.h"

namespace kite {

template <typename Protocol>
class AcceptLoop : public std::enable_shared_from_this<AcceptLoop<Protocol>> {
 public:
  using Acceptor = typename Protocol::acceptor;
  using Socket = typename Protocol::socket;
  // Called (on the loop's executor) with each admitted connection and its slot of the peer limit,
  // which the connection's session should hold for as long as it lives.
  using OnAccept = std::function<void(Socket, PeerLimit::Slot)>;
  // The executor each new connection gets (a strand of its own, say); null: the acceptor's.
  using SocketExecutor = std::function<boost::asio::any_io_executor()>;

  struct Limits {
    // Open connections one client address may hold; more are closed at once (0: no limit). Unix
    // sockets have one peer, the user, and are not limited.
    size_t per_peer = 0;
    // Open connections in all; more wait in the kernel's backlog until one closes (0: no limit).
    size_t total = 0;
  };

  AcceptLoop(Acceptor& acceptor, std::string name, Limits limits, OnAccept on_accept,
             SocketExecutor socket_executor = nullptr)
      : acceptor_(acceptor),
        pause_(acceptor.get_executor()),
        pacer_(std::move(name)),
        peers_(limits.per_peer),
        total_(limits.total),
        on_accept_(std::move(on_accept)),
        socket_executor_(std::move(socket_executor)) {}

  void Start() { DoAccept(); }
  // Called when accepting fails for want of descriptors (EMFILE, ENFILE): true when it freed one
  // (closed an idle connection), and the loop then accepts again at once instead of pausing. So
  // a listener with such a reserve keeps serving new clients while idle ones hold the rest.
  void OnExhausted(std::function<bool()> free_one) { free_one_ = std::move(free_one); }
  // Stops accepting (a pending pause is cancelled). Call on the acceptor's executor.
  void Stop() {
    stopped_ = true;
    pause_.cancel();
  }
  const PeerLimit& peers() const { return peers_; }

 private:
  void DoAccept() {
    if (stopped_) return;
    if (total_ > 0 && open_ >= total_) {
      waiting_ = true;  // resumed by the next connection that closes
      return;
    }
    auto next = [self = this->shared_from_this()](boost::system::error_code ec, Socket s) {
      self->OnAccepted(ec, std::move(s));
    };
    if (socket_executor_) {
      acceptor_.async_accept(socket_executor_(), std::move(next));
    } else {
      acceptor_.async_accept(std::move(next));
    }
  }

  void OnAccepted(boost::system::error_code ec, Socket socket) {
    if (stopped_ || ec == boost::asio::error::operation_aborted) return;
    if (ec) {
      if ((ec == boost::asio::error::no_descriptors || ec.value() == ENFILE) && free_one_ &&
          free_one_())
        return DoAccept();
      auto pause = pacer_.Failed(ec);
      if (pause.count() == 0) return DoAccept();
      pause_.expires_after(pause);
      pause_.async_wait([self = this->shared_from_this()](boost::system::error_code e) {
        if (!e) self->DoAccept();
      });
      return;
    }
    pacer_.Succeeded();
    PeerLimit::Slot slot = Admit(socket);
    if (slot) {
      on_accept_(std::move(socket), Counted(std::move(slot)));
    } else {
      boost::system::error_code ignored;
      socket.close(ignored);
    }
    DoAccept();
  }

  PeerLimit::Slot Admit(Socket& socket) {
    if constexpr (std::is_same_v<Protocol, boost::asio::ip::tcp>) {
      boost::system::error_code ec;
      auto peer = socket.remote_endpoint(ec);
      if (ec) return nullptr;  // reset before we looked
      std::string who = peer.address().to_string();
      auto slot = peers_.Admit(who);
      if (!slot) pacer_.Refused(who, peers_.per_peer());
      return slot;
    } else {
      return PeerLimit::Slot(static_cast<void*>(this), [](void*) {});
    }
  }

  // Wraps a peer slot so that its release also counts toward `total`. Released on any thread:
  // the resumed accept is posted to the acceptor's executor.
  PeerLimit::Slot Counted(PeerLimit::Slot slot) {
    if (total_ == 0) return slot;
    ++open_;
    auto weak = this->weak_from_this();
    return PeerLimit::Slot(slot.get(), [slot, weak](void*) mutable {
      slot.reset();
      auto self = weak.lock();
      if (!self) return;
      boost::asio::post(self->acceptor_.get_executor(), [self] {
        --self->open_;
        if (self->waiting_ && self->open_ < self->total_) {
          self->waiting_ = false;
          self->DoAccept();
        }
      });
    });
  }

  Acceptor& acceptor_;
  boost::asio::steady_timer pause_;
  AcceptPacer pacer_;
  PeerLimit peers_;
  size_t total_;
  size_t open_ = 0;       // on the acceptor's executor
  bool waiting_ = false;  // on the acceptor's executor: an accept is due once one closes
  std::function<bool()> free_one_;
  OnAccept on_accept_;
  SocketExecutor socket_executor_;
  std::atomic<bool> stopped_{false};
};

}  // namespace kite
