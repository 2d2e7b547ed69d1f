// libFuzzer target: arbitrary bytes as a submit file. Must never crash, hang or grow without
// bound; every outcome is either a cluster or a "file:line: message" error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "submit/submit_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kite::submit::SubmitOptions options;
  options.cluster_id = 1;
  options.owner = "fuzz";
  // A directory that does not exist: `from FILE` and `matching` find nothing, and no check
  // touches the file system.
  options.cwd = "/nonexistent/kite-submit-fuzz";
  options.check_files = false;
  options.max_procs = 1000;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cluster = kite::submit::ParseSubmitText(text, "fuzz.sub", options);
  if (!cluster && cluster.error().message().rfind("fuzz.sub:", 0) != 0) __builtin_trap();
  return 0;
}
