// The pool credential's parser and MAC check (pool/credential.h): any bytes give claims or an
// error, never a crash; what parses re-signs to a credential that parses to the same claims.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pool/credential.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string key(kite::pool::kCredentialKeyBytes, 'k');
  (void)kite::pool::VerifyCredential(text, key);
  auto claims = kite::pool::ParseCredential(text);
  if (claims) {
    auto again = kite::pool::VerifyCredential(kite::pool::SignCredential(*claims, key), key);
    if (!again || !(*again == *claims)) std::abort();
  }
  return 0;
}
