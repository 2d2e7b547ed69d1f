// Fuzz target: PEM chain and credential (proxy file) parsing must reject bad input without
// crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "credentials/certificate.h"
#include "credentials/proxy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto chain = kite::credentials::ParseChainPem(text)) {
    (void)kite::credentials::DescribeCredential(*chain);
    for (const auto& c : *chain) (void)c.Subject();
  }
  (void)kite::credentials::ParseCredentialPem(text);
  (void)kite::credentials::Certificate::FromDer(text);
  (void)kite::credentials::ParseDistinguishedName(text);
  return 0;
}
