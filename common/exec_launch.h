// Starting a job under kite-exec: the one launch sequence shared by Kite's starters (the agent's
// local universe and the fork batch adapter).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace kite {

struct ExecLaunch {
  std::string exec_path;  // the kite-exec program
  std::string dir;        // the job's control directory (exists): lock, status
  std::string cwd;        // the job's working directory
  std::string in = "/dev/null";
  std::string out, err;  // empty: kite-exec's own (/dev/null)
  bool append = false;   // out and err are appended to, not truncated
  bool no_aslr = false;  // the program runs without address-space randomisation
  std::string program;   // absolute path
  std::vector<std::string> args;
  std::vector<std::string> env;  // the job's whole environment
  // Written into DIR/lock as "owner OWNER" before the spawn, so that a starter that reuses
  // directories can tell, after a restart, whose wrapper holds (or held) one. Empty: none.
  std::string owner;
  // Remote I/O through the kernel (docs/remote-io.md): set, the job runs in a mount namespace of
  // its own where each of `fuse.roots` is the desktop's, served by `fuse.server` (kite-rsc-fuse)
  // over the starter's socket `fuse.socket`.
  struct Fuse {
    std::string server, socket, mount, log;  // mount: an empty folder of the job's control dir
    std::vector<std::string> roots;          // outermost first: each is mounted over its path
    std::string keep;  // the job's sandbox when it lies inside a root: put back over the mount
  } fuse;
};

// Takes DIR/lock, then spawns kite-exec holding it as fd 3, in a new session, with the stop
// signals blocked (common/exec_status.h) and no other descriptor of the caller. The lock is never
// free between the decision to start and the wrapper's life, so "lock free and no status" always
// means "never ran to an end". Fails with kConflict when a live wrapper already holds the lock.
// DIR/lock is emptied and given the owner line first; the wrapper appends its pid ("pid N") and,
// when the job ends, how it ended (common/exec_status.h). Only the wrapper writes to it once it
// is spawned, so a job that ends at once cannot have its record overwritten. No file of its own
// for either, so a start creates no file but the lock (and none at all where the starter reuses
// the directory).
Result<pid_t> LaunchUnderExec(const ExecLaunch& l);

}  // namespace kite
