// The personal pool's TCP listener for glide-ins (docs/pool.md, "Trust"): mutual TLS with the
// user's proxy as the agent's credential. A startd is accepted only when its chain verifies
// against the trusted CAs and speaks for the user (the end entity of the proxy the agent presents)
// or for an identity of [pool] allow_identities; its connection then goes to Pool::Adopt. Every
// refusal is logged as "agent: pool: refused a startd from ADDR: REASON".
//
// Without a usable proxy the listener stays off (the local slots work anyway) and looks again
// every `recheck`; a proxy that changes (renewed) is presented to the startds that connect after.
//
// Used only on the agent's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/listen_address.h"
#include "agent/pool_settings.h"
#include "common/error.h"

namespace kite {
template <typename Protocol>
class AcceptLoop;
}  // namespace kite

namespace kite::agent {

class Pool;

// Who may offer slots: "" when `peer` (an Identity subject) is the agent's own identity or one of
// `allowed`, otherwise why not.
std::string PoolPeerRefusal(const std::string& peer, const std::string& own,
                            const std::vector<std::string>& allowed);

struct PoolTlsLimits {
  size_t per_peer = 64;  // open connections (and handshakes) from one address
  size_t total = 4096;   // in all; more wait in the backlog
};

class PoolTlsListener {
 public:
  using Limits = PoolTlsLimits;
  // Where the bound address goes ($KITE_HOME/pool.address, and its port alone in pool.port).
  struct Paths {
    std::string address, port;
  };
  PoolTlsListener(boost::asio::io_context& io, const PoolSettings& settings, Paths paths,
                  Pool& pool, std::chrono::milliseconds recheck = std::chrono::seconds(30),
                  Limits limits = {});
  ~PoolTlsListener();

  // Listens when [pool] listen is set and the proxy is usable; otherwise logs why once and
  // tries again every `recheck`.
  void Start();
  // Stops accepting, ends pending handshakes, removes $KITE_HOME/pool.address. Adopted startds
  // are the Pool's.
  void Stop();
  bool listening() const;

  // What `kite glidein submit`, `kite status` and `-analyze` say of it: where glide-ins dial, or
  // why they cannot (what is wrong with the proxy and how to point the agent at another).
  struct View {
    bool configured = false;  // [pool] listen is set
    bool listening = false;
    std::string address;  // HOST:PORT while listening
    std::string problem;  // why not (or why the proxy cannot be renewed); "" when none
  };
  View Describe() const;
  // Looks at the proxy again now (a new or renewed one), rather than at the next recheck.
  void Recheck();

 private:
  struct State;
  class Handshake;
  void Check();
  Status Refresh();
  void ArmRecheck();
  Status Listen();
  boost::system::error_code Bind(const boost::asio::ip::tcp::endpoint& ep);
  std::shared_ptr<State> state_;
};

}  // namespace kite::agent
