// The shadow's side of remote system calls (docs/remote-io.md): performs a job's file calls on the
// submit host, as the user, confined to the paths the job may use. One per run; pure file system
// work, no I/O of its own, so the unit tests and the fuzz target drive it directly.
//
// Confinement: a path must be absolute and plain (no "." or ".." component, no empty one) and lie
// inside one of the roots (a folder: anything under it; a file: that file only). It is opened from
// the root with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so no symbolic link leads out.
// Anything else is answered EACCES and noted (`refusals`), for the agent's log. A root's folder
// that is really a system folder (a link to /etc) is no root; a file root is never followed
// through a symbolic link. Created files and folders get permission bits only (no setuid).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rsc/wire.h"

namespace kite::rsc {

struct ShadowIoLimits {
  size_t max_handles = 1024;  // files the run may have open at once
  // Files all runs have open, shared by their ShadowIo (single-threaded), and its cap.
  std::shared_ptr<size_t> shared_open;
  size_t max_shared = 0;
};

class ShadowIo {
 public:
  using Limits = ShadowIoLimits;
  // `roots`: absolute paths; a folder root is written with a trailing '/'.
  explicit ShadowIo(std::vector<std::string> roots, Limits limits = {});
  ~ShadowIo();
  ShadowIo(const ShadowIo&) = delete;
  ShadowIo& operator=(const ShadowIo&) = delete;

  // One request's bytes in, the reply's bytes out. A request that does not decode is answered
  // EINVAL (seq 0). A request with the seq of the last one answered gets that answer again,
  // without being done twice.
  std::string Handle(std::string_view request);

  struct Counts {
    uint64_t calls = 0, bytes_read = 0, bytes_written = 0;
  };
  const Counts& counts() const { return counts_; }
  // What was refused since the last call (one line each), for the agent's log.
  std::vector<std::string> TakeRefusals();
  // The remote files the program wrote to through calls its library could not forward (kUnseen),
  // since the last call, as written to a log: what it wrote there is not on this machine.
  std::vector<std::string> TakeUnseen();

 private:
  Reply Do(const Request& r);
  // The root holding `path` and the path relative to it ("" for the root itself), or an errno.
  // `file_root` (when given) says whether the root is a file rather than a folder.
  int Resolve(const std::string& path, int* root_fd, std::string* rel, bool* file_root);
  int OpenBeneath(const std::string& path, int flags, uint32_t mode, int* fd);
  // The folder holding `path`'s last component, opened O_PATH beneath its root, and that name.
  int Parent(const std::string& path, int* dir_fd, std::string* name);
  // As Parent, and a folder root itself too (its own folder, name ".").
  int Entry(const std::string& path, int* dir_fd, std::string* name);
  int Refuse(const std::string& path, const std::string& why);

  std::vector<std::string> roots_;
  Limits limits_;
  bool emfile_noted_ = false;            // the first EMFILE is logged, not the ones after
  std::map<std::string, int> root_fds_;  // opened when first used
  std::map<int64_t, int> handles_;       // handle -> fd
  int64_t next_handle_ = 1;
  uint64_t last_seq_ = 0;
  std::string last_reply_;
  Counts counts_;
  std::vector<std::string> refusals_;
  std::vector<std::string> unseen_;
};

}  // namespace kite::rsc
