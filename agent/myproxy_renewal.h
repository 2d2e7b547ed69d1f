// Renewing a user's proxy from a MyProxy server before it runs out, with no user action
// (Condor-G's MyProxy refresh): a new proxy is retrieved with the pass phrase the user keeps in a
// 0600 file and replaces the proxy file in place. Everyone who watches the file — the agent's
// credential monitor, the gridmanager that re-delegates it to the sites — then sees a new proxy,
// just as after `kite proxy init`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "agent/config.h"
#include "common/error.h"

namespace kite::agent {

// What is wrong with a "HOST[:PORT]" / a pass phrase file (missing, readable by others, too
// short); "" when usable.
std::string CheckMyProxyServer(const std::string& server);
std::string CheckPassphraseFile(const std::string& path);

// Blocking: retrieves a proxy for the identity of `proxy_path` and replaces that file atomically
// (mode 0600). Refuses a retrieved proxy for another identity than the one in the file. Returns
// the new proxy's expiry (Unix seconds).
Result<double> RenewFromMyProxy(const MyProxySettings& s, const std::string& proxy_path);

// Runs renewals on a worker thread, at most one at a time per proxy file, and reports each
// outcome on `io` (the agent's thread).
class ProxyRenewer {
 public:
  using Done = std::function<void(const std::string& proxy, const Result<double>& expiry)>;
  ProxyRenewer(boost::asio::io_context& io, MyProxySettings settings, Done done);
  ~ProxyRenewer();  // waits for a renewal under way

  // Called with a proxy's time left; starts a renewal when it is below renew_before, none is
  // under way for it and the last failure is older than retry_after. True when one started.
  bool Consider(const std::string& proxy, double seconds_left);
  // A renewal of `proxy` is under way.
  bool Busy(const std::string& proxy) const {
    auto it = busy_.find(proxy);
    return it != busy_.end() && it->second;
  }
  const MyProxySettings& settings() const { return settings_; }

 private:
  boost::asio::io_context& io_;
  MyProxySettings settings_;
  Done done_;
  boost::asio::thread_pool worker_{1};
  std::map<std::string, bool> busy_;         // proxy -> a renewal is under way
  std::map<std::string, double> failed_at_;  // proxy -> steady seconds of the last failure
};

}  // namespace kite::agent
