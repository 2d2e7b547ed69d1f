// Accept loops under pressure: pauses after resource errors, quiet logs, per-peer caps.
//
// A server that retries a failed accept at once spins when the process is out of file
// descriptors (the pending connection stays queued, so the next accept fails the same way) and
// floods its log. Every Kite listener (gatekeeper, GASS, callback server, the agent's API and REST
// endpoint, the job manager) paces its loop with an AcceptPacer and bounds each peer's share of
// its descriptors with a PeerLimit.
#pragma once

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace kite {

// Says how long an accept loop pauses after a failed accept, and logs failures at most once per
// kLogInterval (with a count of those not logged). Thread-safe.
class AcceptPacer {
 public:
  static constexpr std::chrono::milliseconds kFirstPause{50};
  static constexpr std::chrono::milliseconds kLongestPause{1000};
  static constexpr std::chrono::seconds kLogInterval{10};

  explicit AcceptPacer(std::string name) : name_(std::move(name)) {}

  // After a failed accept: the pause before the next accept. Resource errors (EMFILE, ENFILE,
  // ENOBUFS, ENOMEM) pause from kFirstPause doubling to kLongestPause; other errors (a peer
  // that reset before it was accepted) do not pause.
  std::chrono::milliseconds Failed(const boost::system::error_code& ec);
  // After a successful accept: the next resource error pauses from kFirstPause again.
  void Succeeded();
  // A refusal by a PeerLimit, logged as rarely as failures.
  void Refused(const std::string& peer, size_t cap);

 private:
  void Log(const std::string& what);

  std::mutex mu_;
  std::string name_;
  std::chrono::milliseconds pause_{0};                // guarded by mu_
  std::chrono::steady_clock::time_point last_log_{};  // guarded by mu_
  uint64_t unlogged_ = 0;                             // guarded by mu_
};

// Counts each peer's open connections and refuses those past a cap. Thread-safe. A slot is held
// by the token Admit returns and given back when the last copy of the token is destroyed (keep
// it in the connection's session object); tokens may outlive the PeerLimit.
class PeerLimit {
 public:
  using Slot = std::shared_ptr<void>;

  explicit PeerLimit(size_t per_peer);
  // A slot for one more connection of `peer` (an address, a uid), or null when it has `per_peer`
  // open already. A cap of 0 admits everyone.
  Slot Admit(const std::string& peer);
  size_t per_peer() const { return per_peer_; }
  size_t open(const std::string& peer) const;

 private:
  struct Counts;
  size_t per_peer_;
  std::shared_ptr<Counts> counts_;
};

// Raises the soft limit on open files to the hard limit, so a server that may hold many
// connections does not stop at the default 1,024. Returns the soft limit in force afterwards.
size_t RaiseOpenFileLimit();

}  // namespace kite
