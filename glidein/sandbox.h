// A run's sandbox: the directory work/<job>-<run>/ where its input lands, its program runs and
// its output is read from. Every path from the agent (already checked relative by the protocol's
// parser) is opened one component at a time below the sandbox's directory descriptor with
// O_NOFOLLOW, so neither a path nor a symbolic link the job planted can reach outside.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::glidein {

inline constexpr std::string_view kStdoutName = "_kite_stdout";
inline constexpr std::string_view kStderrName = "_kite_stderr";
inline constexpr std::string_view kControlDir = ".kite";  // kite-exec's lock and status

// "<job>-<run>" when both are safe as one file name (letters, digits, '.', '_', '-'), else
// kInvalidInput.
Result<std::string> SandboxName(std::string_view job, std::string_view run);

// Opens `rel` below the directory `dir_fd` without following any symbolic link: every directory
// component with O_DIRECTORY|O_NOFOLLOW (made 0700 first when `make_dirs` and missing), the last
// with `flags`|O_NOFOLLOW. A last component that is not a regular file is refused. Returns an
// O_CLOEXEC descriptor the caller closes.
Result<int> OpenBeneath(int dir_fd, std::string_view rel, int flags, mode_t mode = 0600,
                        bool make_dirs = false);

// Removes `name` in `dir_fd` and all below it, never following a symbolic link.
Status RemoveBeneath(int dir_fd, const std::string& name);

// A regular file's identity at the top of the sandbox, to tell what a run created or changed.
struct FileStamp {
  int64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};
using Snapshot = std::map<std::string, FileStamp>;

// The top level of a sandbox: regular files (symbolic links are not followed: they are listed in
// `links` when given, and never in the snapshot).
Snapshot TopLevelFiles(int dir_fd, std::vector<std::string>* links = nullptr);

// One output file: where it is in the sandbox, and the name it is sent under.
struct OutputFile {
  std::string path;  // relative to the sandbox
  std::string name;  // sent as (HTCondor: a path's last component)
  bool operator==(const OutputFile&) const = default;
};

// Which files go back after a run: stdout and stderr first, then the job's TransferOutput
// (comma-separated; `transfer_output` nullopt when the job names none) or, when it names none,
// every top-level file in `after` that is not in `before` or changed since, except kite's own
// (.kite, _kite_stdout, _kite_stderr). Names that cannot be used are described in `skipped`.
std::vector<OutputFile> SelectOutputs(const std::optional<std::string>& transfer_output,
                                      const Snapshot& before, const Snapshot& after,
                                      std::vector<std::string>* skipped);

class Sandbox {
 public:
  // Makes work/name (0700) with its control directory; a leftover of the same name (a startd that
  // died) is removed first.
  static Result<Sandbox> Create(const std::string& work, const std::string& name);
  Sandbox() = default;  // empty: no directory
  Sandbox(Sandbox&& o) noexcept;
  Sandbox& operator=(Sandbox&& o) noexcept;
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  ~Sandbox();

  const std::string& path() const { return path_; }
  std::string control_dir() const { return path_ + "/" + std::string(kControlDir); }
  int fd() const { return fd_; }

  // Writes `bytes` at `offset` of `rel` (made with `mode` & 0777, parents 0700). offset 0
  // truncates what was there; `last` cuts the file at the end of these bytes.
  Status Write(std::string_view rel, uint64_t offset, std::string_view bytes, uint32_t mode,
               bool last);
  // Whether `rel` is a regular file in the sandbox (not through a link).
  bool HasFile(std::string_view rel) const;
  // Removes the sandbox and everything in it; the object is empty afterwards.
  Status Remove();

 private:
  Sandbox(std::string work, std::string name, std::string path, int work_fd, int fd);
  void Close();

  std::string work_, name_, path_;
  int work_fd_ = -1, fd_ = -1;
};

// Reads an output file piece by piece, from a descriptor opened once without following links.
class FileReader {
 public:
  static Result<FileReader> Open(int dir_fd, std::string_view rel);
  FileReader(FileReader&& o) noexcept;
  FileReader& operator=(FileReader&&) = delete;
  FileReader(const FileReader&) = delete;
  ~FileReader();

  struct Piece {
    uint64_t offset = 0;
    std::string bytes;
    bool last = false;  // the file ends after these bytes
  };
  // The next piece of at most `max` bytes. An empty file is one empty last piece.
  Result<Piece> Next(size_t max);
  // The next piece starts at `offset` (what was sent before it is not read again).
  void SkipTo(uint64_t offset) { next_ = offset; }
  uint32_t mode() const { return mode_; }

 private:
  FileReader(int fd, uint32_t mode) : fd_(fd), mode_(mode) {}
  int fd_ = -1;
  uint32_t mode_ = 0644;
  uint64_t next_ = 0;  // where the next piece starts
};

}  // namespace kite::glidein
