// Transparent checkpoints inside libkite_rsc.so (docs/checkpoints.md): the seam between the
// checkpoint code (checkpoint.cpp) and the remote-call code (preload.cpp) of the one library.
#pragma once

#include <string>
#include <vector>

namespace kite::rsc::ckpt {

// Called first by the library's constructor. With KITE_CKPT_IMAGE set: when that image exists,
// the process becomes the one it holds and this never returns (or, when it cannot, the program
// exits 1 having said why on standard error and in KITE_CKPT_IMAGE.failed); otherwise the
// checkpoint signal's handler is installed.
void Init();

// Around each remote call: a checkpoint signal that comes during one is taken when it ends, so
// that no image holds a call half made on a connection the restored program will not have.
void EnterCall();
void LeaveCall();

// After a restore of a process tree the processes have new ids; the programs keep seeing the ones
// they knew (getpid, getppid, the wait calls, kill). Renamed(): whether this process is such a
// one; KnownPid and RealPid translate an id either way (an id of no restored process is itself).
bool Renamed();
long KnownPid(long real);
long RealPid(long known);
// The environment for a program a restored process of a tree starts (execve's `envp`): Kite's
// variables as this run launched it, the program's own with the first run's sandbox made this
// run's.
std::vector<std::string> EnvironmentFor(char* const* envp);

// The library's own connection to the starter: not one of the program's descriptors.
extern int g_socket_fd;

}  // namespace kite::rsc::ckpt

namespace kite::rsc {

// Called (from a signal handler: async-signal-safe) when the process has just been restored:
// the starter's socket, the stand-ins' folder and the sandbox may be new, the connection is gone
// and the shadow knows none of the program's remote files yet.
void AfterRestore(const char* socket, const char* state, const char* sandbox);

}  // namespace kite::rsc
