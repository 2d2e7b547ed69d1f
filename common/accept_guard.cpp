// AcceptPacer, PeerLimit and the open-file limit.
#include "common/accept_guard.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <map>

namespace kite {

namespace {

bool IsShortage(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category() &&
      ec.category() != boost::system::generic_category())
    return false;
  int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

}  // namespace

std::chrono::milliseconds AcceptPacer::Failed(const boost::system::error_code& ec) {
  std::lock_guard lock(mu_);
  if (!IsShortage(ec)) {
    Log("accept: " + ec.message());
    return std::chrono::milliseconds(0);
  }
  pause_ = pause_.count() == 0 ? kFirstPause : std::min(pause_ * 2, kLongestPause);
  Log("accept: " + ec.message() + "; pausing new connections for " +
      std::to_string(pause_.count()) + " ms");
  return pause_;
}

void AcceptPacer::Succeeded() {
  std::lock_guard lock(mu_);
  pause_ = std::chrono::milliseconds(0);
}

void AcceptPacer::Refused(const std::string& peer, size_t cap) {
  std::lock_guard lock(mu_);
  Log("refused a connection from " + peer + ": it has " + std::to_string(cap) +
      " open already (the limit per peer)");
}

// REQUIRES: mu_ is held.
void AcceptPacer::Log(const std::string& what) {
  auto now = std::chrono::steady_clock::now();
  if (last_log_ != std::chrono::steady_clock::time_point{} && now - last_log_ < kLogInterval) {
    ++unlogged_;
    return;
  }
  if (unlogged_ > 0) {
    spdlog::warn("{}: {} ({} more such messages in the last {} s not logged)", name_, what,
                 unlogged_, kLogInterval.count());
  } else {
    spdlog::warn("{}: {}", name_, what);
  }
  unlogged_ = 0;
  last_log_ = now;
}

struct PeerLimit::Counts {
  std::mutex mu;
  std::map<std::string, size_t> open;  // guarded by mu
};

PeerLimit::PeerLimit(size_t per_peer) : per_peer_(per_peer), counts_(std::make_shared<Counts>()) {}

PeerLimit::Slot PeerLimit::Admit(const std::string& peer) {
  {
    std::lock_guard lock(counts_->mu);
    size_t& n = counts_->open[peer];
    if (per_peer_ > 0 && n >= per_peer_) return nullptr;
    ++n;
  }
  // The token's deleter gives the slot back; it holds the counts alive, not the PeerLimit.
  return Slot(static_cast<void*>(counts_.get()), [counts = counts_, peer](void*) {
    std::lock_guard lock(counts->mu);
    auto it = counts->open.find(peer);
    if (it != counts->open.end() && --it->second == 0) counts->open.erase(it);
  });
}

size_t PeerLimit::open(const std::string& peer) const {
  std::lock_guard lock(counts_->mu);
  auto it = counts_->open.find(peer);
  return it == counts_->open.end() ? 0 : it->second;
}

size_t RaiseOpenFileLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(lim.rlim_cur);
}

}  // namespace kite
