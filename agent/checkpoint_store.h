// A pool job's checkpoints on the desktop (docs/pool.md, "Checkpoints"; docs/checkpoints.md):
// what a startd may send as one, the digest that binds a stored checkpoint to its job, and the
// files that go back with the job's input when it starts again.
//
// The desktop decides what runs on it, not the site: only a job that checkpoints may have a
// checkpoint, only under the names its submit file allows, never under the name of its
// executable or of an input (a checkpoint is stored apart and never takes an input's place), and
// a stored checkpoint goes back only when its files are byte for byte what was stored
// (CheckpointDigest, recorded in the job when the checkpoint is committed).
#pragma once

#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"
#include "common/error.h"

namespace kite::agent {

// What a job's checkpoint may hold, from its ad and its input files' sandbox paths.
struct CheckpointPolicy {
  bool checkpoints = false;         // CheckpointExitCode is set, or TransparentCheckpoint
  bool transparent = false;         // TransparentCheckpoint: its image is one of the files
  std::vector<std::string> names;   // transfer_checkpoint_files (empty: any name but inputs')
  std::vector<std::string> inputs;  // the executable's and every input's path in the sandbox
};
CheckpointPolicy CheckpointPolicyOf(const classad::ClassAd& job, std::vector<std::string> inputs);

// "" when `path` (relative, checked by the protocol) may be a file of the job's checkpoint;
// otherwise why not.
std::string CheckpointFileRefusal(const CheckpointPolicy& policy, std::string_view path);

// SHA-256 of a file that arrives in pieces, in order from offset 0.
class StreamHash {
 public:
  StreamHash();
  ~StreamHash();
  StreamHash(StreamHash&&) noexcept;
  StreamHash& operator=(StreamHash&&) noexcept;
  // False when `offset` is not where the bytes so far end (offset 0 starts over).
  bool Update(uint64_t offset, std::string_view bytes);
  uint64_t size() const { return size_; }
  std::string Hex() const;  // of the bytes so far

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
  uint64_t size_ = 0;
};

// The digest of a whole checkpoint: SHA-256 over each file's path, size and SHA-256, in path
// order, so the same files give the same digest however they were listed or sent.
struct CheckpointFileSum {
  std::string path;
  uint64_t size = 0;
  std::string sha256;  // hex
};
std::string CheckpointDigest(std::vector<CheckpointFileSum> files);

// A file of a stored checkpoint, to go back with the job's input.
struct StoredCheckpointFile {
  std::string local;  // its path in the spool
  std::string path;   // its path in the sandbox
  uint32_t mode = 0644;
  uint64_t size = 0;
};
// The files of the committed checkpoint in `dir` (spool/checkpoints/C.P/ckpt.N), each a regular
// file: anything else there (a symbolic link, a device) fails with the reason, and nothing is
// followed out of `dir`.
Result<std::vector<StoredCheckpointFile>> StoredCheckpointFiles(const std::string& dir);

// fsync of `dir`, everything below it, and the directories themselves.
Status SyncTree(const std::string& dir);
// fsync of one path (a file or a directory), not following a last symbolic link.
Status SyncPath(const std::string& path);
// Bytes of the regular files below `dir`.
uint64_t TreeBytes(const std::string& dir);

}  // namespace kite::agent
