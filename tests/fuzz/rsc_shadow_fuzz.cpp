// libFuzzer target: arbitrary bytes as a remote system call, handed to the shadow's side
// (rsc::ShadowIo) serving a folder of its own. Must never crash or hang, must never touch a file
// outside that folder, and a request that decodes must encode back to the same bytes.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "rsc/shadow_io.h"
#include "rsc/wire.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

struct World {
  std::string root, outside;
  World() {
    char tmpl[] = "/tmp/kite-rsc-fuzz-XXXXXX";
    std::string base = ::mkdtemp(tmpl);
    root = base + "/root";
    outside = base + "/outside";
    ::mkdir(root.c_str(), 0700);
    ::mkdir(outside.c_str(), 0700);
    std::ofstream(root + "/a") << "some data\n";
    std::ofstream(outside + "/keep") << "kept\n";
    ::symlink((outside + "/keep").c_str(), (root + "/out").c_str());
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World w;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = kite::rsc::DecodeRequest(in)) Check(kite::rsc::Encode(*r) == in);
  kite::rsc::ShadowIo io({w.root + "/"});
  std::string reply = io.Handle(in);
  Check(kite::rsc::DecodeReply(reply).has_value());
  // The same bytes with the fuzzer's path rewritten under the root: real calls, confined.
  if (auto r = kite::rsc::DecodeRequest(in)) {
    r->path = w.root + "/" + r->path.substr(0, 64);
    r->path2 = w.root + "/" + r->path2.substr(0, 64);
    Check(kite::rsc::DecodeReply(io.Handle(kite::rsc::Encode(*r))).has_value());
  }
  std::ifstream keep(w.outside + "/keep");
  std::string text((std::istreambuf_iterator<char>(keep)), std::istreambuf_iterator<char>());
  Check(text == "kept\n");
  return 0;
}
