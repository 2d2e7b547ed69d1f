// Which paths a job with `want_remote_io` reaches through the shadow (docs/remote-io.md): its Iwd,
// the files its submit file names (In, Out, Err, and absolute paths among its arguments, in
// Arguments or the old syntax's Args), and
// its `remote_io_paths`. System paths are never remote. Computed from the job's ad the same way
// by the starter (to tell the job's library) and by the agent (to confine the shadow).
#pragma once

#include <string>
#include <vector>

#include "classad/classad.h"

namespace kite::rsc {

// Absolute, lexically normal paths (no trailing '/'), without duplicates, in a stable order.
std::vector<std::string> RemoteRoots(const classad::ClassAd& job);

// `path` made absolute against `cwd` and lexically normal ("." and ".." folded, no repeated or
// trailing '/'); "" when it climbs above "/".
std::string NormalPath(const std::string& cwd, const std::string& path);

// A system path (/usr, /lib, /proc, /dev, /etc, ...): never remote.
bool IsSystemPath(const std::string& normal);

}  // namespace kite::rsc
