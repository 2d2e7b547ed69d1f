// The GASS server's access rules: which identity may read or write which file of which job.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "gass/protocol.h"

namespace kite::gass {

// A file a job's remote side may download: served as /jobs/<job_id>/<name>.
struct ReadableFile {
  std::string name;  // IsValidName()
  std::string path;  // absolute local path, no "." or ".." components
};
// A file a job's remote side may upload into at byte offsets (created when missing).
struct WritableFile {
  std::string name;
  std::string path;
  // The name may also be a folder: the remote side then writes "NAME/a/b", which lands at
  // "PATH/a/b", the folders between made as they are needed (a job's output directory).
  bool tree = false;
};

// Where a name resolves to. For a name beneath a tree, `root` is the tree's folder and `rel` the
// rest of the name: the server walks from the folder itself, never through a symbolic link.
struct ResolvedFile {
  std::string path;  // the whole local path
  std::string root;  // empty unless beneath a tree
  std::string rel;
  bool tree = false;  // a tree's own name or one beneath it: it may be made a folder
};

enum class Access { kRead, kWrite };

// Thread-safe: every member locks mu_, so sessions on any thread may call Resolve while the
// gridmanager adds and removes jobs.
class JobTable {
 public:
  // Registers (or replaces) what `job_id` exposes to `allowed_identity` (an end-entity subject in
  // Globus form, as Identity::subject). kInvalidInput for a bad id, name or path, or a name
  // listed twice in one list; nothing changes then. A name may be both readable and writable.
  Status Add(std::string job_id, std::string allowed_identity, std::vector<ReadableFile> readable,
             std::vector<WritableFile> writable);
  // Forgets a job; false when it was not registered.
  bool Remove(const std::string& job_id);
  size_t size() const;

  // The local file `identity` may access as `target`, or why not: kNotFound (no such job, or the
  // job exposes no such name in that direction), kAuthFailed (the job belongs to another
  // identity; checked before the name, so names of other users' jobs are not revealed).
  Result<ResolvedFile> Resolve(const std::string& identity, const Target& target,
                               Access access) const;

 private:
  struct Job {
    std::string identity;
    std::map<std::string, std::string, std::less<>> readable;  // name -> path
    std::map<std::string, std::string, std::less<>> writable;
    std::map<std::string, std::string, std::less<>> trees;  // writable names that may be folders
  };

  mutable std::mutex mu_;
  std::map<std::string, Job, std::less<>> jobs_;  // guarded by mu_
};

// True for an absolute path with no empty, "." or ".." components (a trailing '/' is refused).
bool IsCleanAbsolutePath(std::string_view path);

}  // namespace kite::gass
