// Reading "TYPE CONTACT" through the grid-type registry, and the host:port syntax most types share.
#include "grid/resource.h"

#include <charconv>

#include "common/strings.h"
#include "grid/grid_type.h"

namespace kite::grid {

std::string GridResource::HostPort() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string GridResource::Contact() const {
  return batch.empty() ? HostPort() : HostPort() + "/" + batch;
}

std::string GridResource::Text() const {
  return type + " " + Contact();
}

Result<GridResource> ParseHostPortContact(std::string_view contact, bool (*rest_char)(char)) {
  auto bad = [](const char* why) { return Fail(ErrorCode::kInvalidInput, why); };
  std::string_view rest = contact;
  GridResource r;
  if (rest.find_first_of(" \t") != std::string_view::npos) return bad("a space in the contact");
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    r.batch = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
    if (r.batch.empty()) return bad("nothing after '/'");
    for (char ch : r.batch) {
      if (!rest_char(ch)) return bad("a character not allowed after '/'");
    }
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
  if (r.host.empty() || r.host.find('/') != std::string::npos) return bad("bad host");
  r.port = static_cast<uint16_t>(value);
  return r;
}

Result<GridResource> ParseGridResource(std::string_view text) {
  text = Trim(text);
  auto space = text.find_first_of(" \t");
  std::string_view word = text.substr(0, space);
  std::string_view contact = space == std::string_view::npos ? "" : Trim(text.substr(space));
  const GridType* type = FindGridType(word);
  if (type == nullptr) {
    return Fail(ErrorCode::kInvalidInput,
                "GridResource '" + std::string(text) + "': grid type '" + std::string(word) +
                    "' is not one Kite runs (it runs: " + GridTypeNames() + ")");
  }
  auto r = type->parse(contact);
  if (!r) {
    return Fail(ErrorCode::kInvalidInput, "GridResource '" + std::string(text) +
                                              "': " + r.error().message() + " (expected \"" +
                                              type->name + " " + type->syntax + "\")");
  }
  r->type = type->name;
  return r;
}

std::string SiteOf(std::string_view text) {
  if (auto r = ParseGridResource(text)) return r->HostPort();
  text = Trim(text);
  auto space = text.find_first_of(" \t");
  std::string_view rest = space == std::string_view::npos ? text : Trim(text.substr(space));
  return std::string(rest.substr(0, rest.find('/')));
}

}  // namespace kite::grid
