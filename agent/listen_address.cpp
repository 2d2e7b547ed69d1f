// Listen addresses.
#include "agent/listen_address.h"

#include <string>

#include "common/strings.h"

namespace kite::agent {

using boost::asio::ip::tcp;

Result<tcp::endpoint> ParseListenAddress(std::string_view text, bool allow_remote) {
  auto split = SplitHostPort(text);
  if (!split) return Fail(ErrorCode::kInvalidInput, "expected HOST:PORT, e.g. 127.0.0.1:8080");
  auto [host, port] = *split;
  auto p = ParsePort(port);
  if (!p) return Fail(ErrorCode::kInvalidInput, "bad port '" + std::string(port) + "'");
  boost::system::error_code bad;
  auto addr = host == "localhost" ? boost::asio::ip::make_address("127.0.0.1")
                                  : boost::asio::ip::make_address(std::string(host), bad);
  if (bad)
    return Fail(ErrorCode::kInvalidInput,
                "'" + std::string(host) + "' is not an IP address (or localhost)");
  if (!addr.is_loopback() && !allow_remote)
    return Fail(ErrorCode::kInvalidInput,
                std::string(host) +
                    " is not a loopback address; the endpoint speaks plain HTTP, so serving other "
                    "hosts needs [rest] allow_remote = true");
  return tcp::endpoint(addr, static_cast<unsigned short>(*p));
}

Result<tcp::endpoint> ParsePoolListen(std::string_view text, bool allow_remote) {
  auto ep = ParseListenAddress(text, true);
  if (!ep) return ep;
  if (!ep->address().is_loopback() && !allow_remote)
    return Fail(ErrorCode::kInvalidInput,
                std::string(text) +
                    " is not a loopback address; letting glide-ins on other hosts dial in needs "
                    "[pool] allow_remote = true");
  return ep;
}

}  // namespace kite::agent
