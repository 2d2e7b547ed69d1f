// Secrets kept in private files: the REST endpoint's token, the pool's signing key.
#pragma once

#include <string>

#include "common/error.h"

namespace kite {

// A secret of 32 random bytes kept as 64 hex digits in `path` (mode 0600): read when the file is
// there, made (whole, durably, never replacing one made meanwhile) when it is not. A file readable
// by others, or not holding such a secret, is refused with `what` and how to mend it.
Result<std::string> LoadOrCreateSecret(const std::string& path, const std::string& what);

}  // namespace kite
