// Shared by the gram unit tests: a temporary directory removed at the end.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace kite::gram::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kite-gram-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline std::string ExecPath() {
  return std::string(KITE_BIN_DIR) + "/kite-exec";
}

}  // namespace kite::gram::testing
