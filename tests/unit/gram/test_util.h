// Shared by the gram unit tests: a temporary directory removed at the end.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include "tests/fixtures/temp_dir.h"

namespace kite::gram::testing {

using kite::testing::TempDir;

inline std::string ExecPath() {
  return std::string(KITE_BIN_DIR) + "/kite-exec";
}

}  // namespace kite::gram::testing
