// Interned attribute names: a name is two small integers instead of a string.
//
// Every distinct spelling gets an id (kept for output: an ad prints names as they were written)
// and every case-folded form gets a key (used for lookup: ClassAd names are case-insensitive).
// Comparing keys is one integer compare, so attribute lookup neither allocates nor folds case.
// The table only grows; it is shared by all threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kite::classad {

struct NameId {
  uint32_t spelling = 0;  // exact spelling
  uint32_t key = 0;       // case-folded identity
};

// Returns the id of `name`, adding it to the table if new.
NameId InternName(std::string_view name);
// The key of `name` if any spelling of it was ever interned; never adds.
std::optional<uint32_t> FindNameKey(std::string_view name);
// The spelling of an interned name. The view stays valid for the life of the process.
std::string_view NameText(NameId id);

}  // namespace kite::classad
