// Transparent checkpoints inside libkite_rsc.so (docs/checkpoints.md): the seam between the
// checkpoint code (checkpoint.cpp) and the remote-call code (preload.cpp) of the one library.
#pragma once

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

// The library's own connection to the starter: not one of the program's descriptors.
extern int g_socket_fd;

}  // namespace kite::rsc::ckpt

namespace kite::rsc {

// Called (from a signal handler: async-signal-safe) when the process has just been restored:
// the starter's socket, the stand-ins' folder and the sandbox may be new, the connection is gone
// and the shadow knows none of the program's remote files yet.
void AfterRestore(const char* socket, const char* state, const char* sandbox);

}  // namespace kite::rsc
