// The process-wide attribute name table.
#include "classad/names.h"

#include <array>
#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace kite::classad {
namespace {

struct ExactHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

inline unsigned char Fold(char c) {
  return static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(c)));
}

// FNV-1a over the lower-cased bytes, so differently-cased spellings hash alike.
struct FoldedHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    uint64_t h = 1469598103934665603ull;
    for (char c : s) h = (h ^ Fold(c)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

struct FoldedEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (Fold(a[i]) != Fold(b[i])) return false;
    }
    return true;
  }
};

struct Record {
  std::string text;
};

// Spellings live in fixed-size chunks that never move, so NameText reads them without a lock:
// an id only reaches another thread after the record it names was written.
constexpr uint32_t kChunkBits = 12;
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kMaxChunks = 1u << 14;

class NameTable {
 public:
  NameId Intern(std::string_view name) {
    {
      std::shared_lock lock(mu_);
      auto it = exact_.find(name);
      if (it != exact_.end()) return it->second;
    }
    std::unique_lock lock(mu_);
    auto it = exact_.find(name);
    if (it != exact_.end()) return it->second;
    NameId id;
    auto kit = folded_.find(name);
    if (kit != folded_.end()) {
      id.key = kit->second;
    } else {
      id.key = static_cast<uint32_t>(folded_.size());
      folded_.emplace(std::string(name), id.key);
    }
    id.spelling = count_;
    Store(count_, name);
    ++count_;
    exact_.emplace(std::string(name), id);
    return id;
  }

  std::optional<uint32_t> FindKey(std::string_view name) {
    std::shared_lock lock(mu_);
    auto it = folded_.find(name);
    if (it == folded_.end()) return std::nullopt;
    return it->second;
  }

  std::string_view Text(uint32_t spelling) const {
    Record* chunk = chunks_[spelling >> kChunkBits].load(std::memory_order_acquire);
    return chunk[spelling & (kChunkSize - 1)].text;
  }

 private:
  // REQUIRES: mu_ held exclusively.
  void Store(uint32_t index, std::string_view name) {
    uint32_t c = index >> kChunkBits;
    if (c >= kMaxChunks) std::abort();  // 67 million distinct names: a runaway caller
    Record* chunk = chunks_[c].load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunk = new Record[kChunkSize];
      chunks_[c].store(chunk, std::memory_order_release);
    }
    chunk[index & (kChunkSize - 1)].text.assign(name);
  }

  std::shared_mutex mu_;
  std::unordered_map<std::string, NameId, ExactHash, std::equal_to<>> exact_;
  std::unordered_map<std::string, uint32_t, FoldedHash, FoldedEq> folded_;
  uint32_t count_ = 0;
  std::array<std::atomic<Record*>, kMaxChunks> chunks_{};
};

NameTable& Table() {
  static NameTable* table = new NameTable();  // never destroyed: ids outlive static teardown
  return *table;
}

}  // namespace

NameId InternName(std::string_view name) {
  return Table().Intern(name);
}

std::optional<uint32_t> FindNameKey(std::string_view name) {
  return Table().FindKey(name);
}

std::string_view NameText(NameId id) {
  return Table().Text(id.spelling);
}

}  // namespace kite::classad
