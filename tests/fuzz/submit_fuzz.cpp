// libFuzzer target: arbitrary bytes as a submit file. Must never crash, hang or grow without
// bound; every outcome is either a cluster or a "file:line: message" error.
//
// Macro functions ($F..., $INT, $CHOICE, $RANDOM_INTEGER, ...) and includes run as they do for
// users, except that no process is started: `include command : CMD` and `queue ... from CMD |`
// get CMD itself back as the command's output, with ';' standing for a line break, so the input
// can include submit text of its own (and nest includes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "submit/submit_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kite::submit::SubmitOptions options;
  options.cluster_id = 1;
  options.owner = "fuzz";
  // A directory that does not exist: `include : FILE`, `from FILE` and `matching` find nothing,
  // and no check touches the file system.
  options.cwd = "/nonexistent/kite-submit-fuzz";
  options.file_checks = kite::submit::FileChecks::kNone;
  options.max_procs = 1000;
  options.arch = "X86_64";
  options.opsys = "LINUX";
  options.filesystem_domain = "fuzz.example.org";
  options.submit_time = 1767225600;
  uint32_t state = 1;
  options.random = [&state] { return state = state * 1103515245u + 12345u; };
  options.run_command = [](const std::string& command, const std::string&) {
    std::string out = command;
    for (auto& c : out) c = c == ';' ? '\n' : c;
    return kite::Result<std::string>(out);
  };
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cluster = kite::submit::ParseSubmitText(text, "fuzz.sub", options);
  if (!cluster) {
    const std::string& m = cluster.error().message();
    // "file:line: ..." where the file is the submit file or an included command's output.
    if (m.rfind("fuzz.sub:", 0) != 0 && m.rfind("output of '", 0) != 0) __builtin_trap();
  }
  return 0;
}
