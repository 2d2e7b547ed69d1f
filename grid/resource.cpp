// Reading "kite HOST:PORT[/BATCH]".
#include "grid/resource.h"

#include <charconv>

#include "common/strings.h"

namespace kite::grid {

std::string GridResource::HostPort() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<GridResource> ParseGridResource(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Fail(ErrorCode::kInvalidInput, "GridResource '" + std::string(text) + "': " + why +
                                              " (expected \"kite HOST:PORT[/BATCH]\")");
  };
  text = Trim(text);
  if (!text.starts_with("kite ")) return bad("not a kite resource");
  std::string_view rest = Trim(text.substr(5));
  GridResource r;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    r.batch = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
    if (r.batch.empty()) return bad("empty batch system name");
  }
  std::string_view port;
  if (rest.starts_with('[')) {
    auto close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return bad("malformed IPv6 address");
    }
    r.host = std::string(rest.substr(1, close - 1));
    port = rest.substr(close + 2);
  } else {
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) return bad("no port");
    r.host = std::string(rest.substr(0, colon));
    port = rest.substr(colon + 1);
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return bad("bad port");
  }
  if (r.host.empty() || r.host.find_first_of(" \t/") != std::string::npos) return bad("bad host");
  r.port = static_cast<uint16_t>(value);
  return r;
}

}  // namespace kite::grid
