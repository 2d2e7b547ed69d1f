// Test-only fault injection: a named point fires once when the file $KITE_FAULT_DIR/<name> exists
// (the file is removed as it fires). Without KITE_FAULT_DIR nothing ever fires.
#pragma once

#include <string_view>

namespace kite::gram {

bool FaultFires(std::string_view point);

}  // namespace kite::gram
