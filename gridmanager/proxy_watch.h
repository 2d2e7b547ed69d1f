// The proxy watch: notices a new proxy in the gridmanager's proxy file (kite proxy init again, a
// MyProxy renewal) and hands it over once it is whole, valid and speaks for the same identity.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <optional>
#include <string>

#include "credentials/certificate.h"
#include "credentials/verify.h"

namespace kite::gridmanager {

class ProxyWatch {
 public:
  // `loaded` is the stat of the file when the proxy in use was read.
  ProxyWatch(std::string path, std::shared_ptr<const credentials::Verifier> verifier,
             std::string identity, struct stat loaded);

  // A new usable proxy, or nullopt: unchanged, gone for now, half-written, not (yet) valid, or
  // for another identity (each logged; the old proxy stays in use and the file is looked at
  // again at the next call).
  struct Refreshed {
    credentials::Credential credential;
    credentials::Identity identity;
  };
  std::optional<Refreshed> Check();

 private:
  std::string path_;
  std::shared_ptr<const credentials::Verifier> verifier_;
  std::string identity_;
  struct stat loaded_ {};
};

}  // namespace kite::gridmanager
