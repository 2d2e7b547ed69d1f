// The listen addresses of config.toml ([rest] listen, [pool] listen), parsed and checked. Apart
// from the servers that bind them, so that reading a configuration (the CLI does) needs no
// server code.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string_view>

#include "common/error.h"

namespace kite::agent {

// "127.0.0.1:8080", "[::1]:8080", "localhost:8080" (port 0: any free port). A host that is not a
// loopback address fails unless `allow_remote`; host names other than localhost are refused.
Result<boost::asio::ip::tcp::endpoint> ParseListenAddress(std::string_view text, bool allow_remote);

// [pool] listen: as [rest] listen ("127.0.0.1:0", "[::1]:9618", "localhost:9618"; port 0 = any
// free port); a host that is not a loopback address needs `allow_remote`.
Result<boost::asio::ip::tcp::endpoint> ParsePoolListen(std::string_view text, bool allow_remote);

}  // namespace kite::agent
