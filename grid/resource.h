// A Kite grid resource, "kite HOST:PORT[/BATCH]": a gatekeeper and the batch system behind it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite::grid {

struct GridResource {
  std::string host;
  uint16_t port = 0;
  std::string batch;             // "" when not named
  std::string HostPort() const;  // "HOST:PORT" ("[::1]:PORT" for IPv6)
};
// kInvalidInput says what is wrong with `text`.
Result<GridResource> ParseGridResource(std::string_view text);

}  // namespace kite::grid
