// Small, careful file helpers: whole-file reads, atomic durable writes, mode checks.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/error.h"

namespace kite {

// Reads a whole regular file. Anything else (a FIFO, a device, a directory) is refused without
// blocking, so a daemon never hangs on a path a user named. `allow_pipe`: a FIFO or pipe is read
// to its end too (a CLI reading `kite submit <(generate)`; it may block until the writer ends).
// At most `max_bytes` are read; a longer file fails with kInvalidInput.
struct ReadFileOptions {
  bool allow_pipe = false;
  size_t max_bytes = size_t{1} << 30;
};
Result<std::string> ReadFile(const std::string& path, ReadFileOptions options = {});

// Writes `data` to `path` atomically: a temporary file in the same directory, fsync, rename,
// fsync of the directory. `mode` applies to the new file from its creation (never wider).
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode = 0644);

// mkdir -p with `mode` for the directories it creates.
Status MakeDirs(const std::string& path, mode_t mode = 0755);

// Fails with kPermission when the file is readable or writable by group or others
// (the rule Globus applies to private keys and proxies).
Status CheckPrivateFile(const std::string& path);

bool FileExists(const std::string& path);

// The directory part / last component of a path ("a/b/c" -> "a/b", "c").
std::string DirName(const std::string& path);
std::string BaseName(const std::string& path);
// Joins with exactly one '/', unless `rel` is absolute, in which case returns `rel`.
std::string JoinPath(const std::string& dir, const std::string& rel);
// Absolute form of `path` relative to the current directory (no symlink resolution).
std::string AbsolutePath(const std::string& path);

}  // namespace kite
