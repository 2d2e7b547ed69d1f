// A grid resource as grid_resource names it, "TYPE CONTACT": the grid type (grid/grid_type.h
// reads the contact) and the site it names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite::grid {

struct GridResource {
  std::string type;  // the grid type's registry name, lower case ("kite")
  std::string host;
  uint16_t port = 0;
  std::string batch;             // what follows HOST:PORT ("" when nothing): for kite, the batch
                                 // system behind the gatekeeper
  std::string HostPort() const;  // "HOST:PORT" ("[::1]:PORT" for IPv6): the site's name in reports
  std::string Contact() const;   // "HOST:PORT[/BATCH]"
  std::string Text() const;      // "TYPE HOST:PORT[/BATCH]", as the job ad records it
};
// Reads "TYPE CONTACT" through the registry row of TYPE. kInvalidInput says what is wrong with
// `text` (an unknown type names the types Kite runs).
Result<GridResource> ParseGridResource(std::string_view text);

// The site part of a resource: HOST:PORT when some grid type reads `text`; otherwise the text
// after the first word up to a '/', so that a resource Kite cannot run is still shown by where
// it points.
std::string SiteOf(std::string_view text);

// Reads "HOST:PORT[/REST]" (HOST may be a bracketed IPv6 address): the shared part of grid types
// whose contact starts with a host and port. `rest_char` says which characters REST may hold.
Result<GridResource> ParseHostPortContact(std::string_view contact, bool (*rest_char)(char));

}  // namespace kite::grid
