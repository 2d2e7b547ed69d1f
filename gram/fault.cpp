// Fault points read from $KITE_FAULT_DIR (tests arm a fault by creating a file there).
#include "gram/fault.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace kite::gram {

bool FaultFires(std::string_view point) {
  static const char* dir = std::getenv("KITE_FAULT_DIR");
  if (dir == nullptr || *dir == '\0') return false;
  std::string path = std::string(dir) + "/" + std::string(point);
  return ::unlink(path.c_str()) == 0;  // only one process or thread wins a given arming
}

}  // namespace kite::gram
