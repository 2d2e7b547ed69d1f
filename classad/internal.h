// Small library-internal helpers shared across classad/*.cpp.
#pragma once

#include <string>

namespace kite::classad {
class ClassAd;
namespace internal {

// Appends "[ a = 1; b = 2 ]" for the ad's own attributes ("[]" when empty).
void AppendNewSyntax(std::string& out, const ClassAd& ad);

}  // namespace internal
}  // namespace kite::classad
