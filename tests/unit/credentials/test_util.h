// Shared by the credentials unit tests: a temporary directory and a test CA made in it.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "credentials/ca.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::credentials::testing {

using kite::testing::TempDir;

// A CA with EC keys (fast), a user credential and its verifier.
struct World {
  TempDir dir;
  TestCa ca;
  Credential user;
  std::shared_ptr<const Verifier> verifier;

  static std::unique_ptr<World> Make(const std::string& ca_subject = "/O=Grid/OU=Kite/CN=Test CA") {
    auto w = std::make_unique<World>();
    CaOptions o;
    o.subject = ca_subject;
    o.key = {KeyAlgorithm::kEcP256};
    auto ca = TestCa::Init(w->dir / "ca", o);
    EXPECT_TRUE(ca.has_value()) << ca.error().ToString();
    w->ca = std::move(*ca);
    IssueOptions io;
    io.key = {KeyAlgorithm::kEcP256};
    auto user = w->ca.IssueUserCredential("CN=Jane Doe", io);
    EXPECT_TRUE(user.has_value()) << user.error().ToString();
    w->user = std::move(*user);
    auto v = Verifier::Create({.ca_dir = w->ca.trusted_dir()});
    EXPECT_TRUE(v.has_value()) << v.error().ToString();
    w->verifier = *v;
    return w;
  }
};

// Re-signs `cert` with `key` after `edit` changes it (to forge certificates the library would
// never make).
template <typename Edit>
Certificate Resign(const Certificate& cert, const PrivateKey& key, Edit edit) {
  X509* x = X509_dup(cert.get());
  edit(x);
  X509_sign(x, key.get(), EVP_sha256());
  return Certificate(x);
}

}  // namespace kite::credentials::testing
