// Delegation by certificate request, and the requests a delegator refuses.
#include "credentials/delegation.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include "common/files.h"
#include "test_util.h"

namespace kite::credentials {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;
using testing::World;

// A CSR for a key the library would never make, signed with `md` (to test what it refuses).
std::string CsrFor(EVP_PKEY* key, const EVP_MD* md) {
  X509_REQ* req = X509_REQ_new();
  X509_REQ_set_pubkey(req, key);
  X509_REQ_sign(req, key, md);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509_REQ(bio, req);
  char* p = nullptr;
  long n = BIO_get_mem_data(bio, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(bio);
  X509_REQ_free(req);
  return out;
}

TEST(DelegationTest, RoundTripGivesTheReceiverAVerifiableProxy) {
  auto w = World::Make();
  ProxyOptions mine;
  auto delegator = CreateProxy(w->user, mine);
  ASSERT_TRUE(delegator);
  auto request = DelegationRequest::Create();
  ASSERT_TRUE(request);
  EXPECT_NE(request->csr_pem().find("BEGIN CERTIFICATE REQUEST"), std::string::npos);
  EXPECT_EQ(request->csr_pem().find("PRIVATE KEY"), std::string::npos);
  ProxyOptions o;
  o.lifetime = 2h;
  o.limited = true;
  auto signed_pem = SignDelegation(request->csr_pem(), delegator->credential, o);
  ASSERT_TRUE(signed_pem) << signed_pem.error().ToString();
  EXPECT_EQ(signed_pem->find("PRIVATE KEY"), std::string::npos);
  auto cred = request->Complete(*signed_pem);
  ASSERT_TRUE(cred) << cred.error().ToString();
  auto id = w->verifier->Verify(cred->chain);
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->subject, "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_EQ(id->proxy_depth, 2);
  EXPECT_TRUE(id->limited);
  EXPECT_LE(cred->leaf().NotAfter() - Clock::now(), 2h);
}

TEST(DelegationTest, LifetimeNeverExceedsTheDelegators) {
  auto w = World::Make();
  ProxyOptions shortlived;
  shortlived.lifetime = 30min;
  auto delegator = CreateProxy(w->user, shortlived);
  ASSERT_TRUE(delegator);
  auto request = DelegationRequest::Create();
  ProxyOptions o;
  o.lifetime = 48h;
  auto cred = request->Complete(*SignDelegation(request->csr_pem(), delegator->credential, o));
  ASSERT_TRUE(cred);
  EXPECT_LE(cred->leaf().NotAfter(), delegator->credential.leaf().NotAfter());
}

TEST(DelegationTest, CompletingWithSomeoneElsesCertificateFails) {
  auto w = World::Make();
  auto delegator = CreateProxy(w->user, {});
  auto a = DelegationRequest::Create();
  auto b = DelegationRequest::Create();
  auto for_b = SignDelegation(b->csr_pem(), delegator->credential, {});
  ASSERT_TRUE(for_b);
  auto r = a->Complete(*for_b);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("not for this request's key"), std::string::npos);
}

TEST(DelegationTest, WeakOrUnsupportedRequestsAreRefused) {
  auto w = World::Make();
  auto delegator = CreateProxy(w->user, {});
  ASSERT_TRUE(delegator);
  EVP_PKEY* rsa1024 = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{1024});
  EVP_PKEY* k256 = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "secp256k1");
  EVP_PKEY* ed = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  EVP_PKEY* rsa2048 = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
  struct Case {
    std::string csr;
    std::string message;
  } cases[] = {
      {CsrFor(rsa1024, EVP_sha256()), "weak RSA key (1024 bits"},
      {CsrFor(k256, EVP_sha256()), "unsupported EC curve"},
      {CsrFor(ed, nullptr), "unsupported key algorithm"},
      {CsrFor(rsa2048, EVP_md5()), "refused digest"},
      {"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
       "malformed certificate request"},
  };
  for (const auto& c : cases) {
    auto r = SignDelegation(c.csr, delegator->credential, {});
    ASSERT_FALSE(r) << c.message;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << r.error().message();
  }
  for (EVP_PKEY* k : {rsa1024, k256, ed, rsa2048}) EVP_PKEY_free(k);
}

TEST(DelegationTest, RsaRequestsOf2048BitsAreAccepted) {
  auto w = World::Make();
  auto delegator = CreateProxy(w->user, {});
  auto request = DelegationRequest::Create({KeyAlgorithm::kRsa, 2048});
  ASSERT_TRUE(request);
  auto pem = SignDelegation(request->csr_pem(), delegator->credential, {});
  ASSERT_TRUE(pem) << pem.error().ToString();
  auto cred = request->Complete(*pem);
  ASSERT_TRUE(cred);
  EXPECT_EQ(cred->leaf().KeyBits(), 2048);
}

TEST(DelegationTest, RedelegationReplacesTheCredentialInPlace) {
  auto w = World::Make();
  TempDir tmp;
  std::string path = tmp / "delegated";
  auto delegator = CreateProxy(w->user, {});
  std::string first_serial;
  for (int round = 0; round < 2; ++round) {
    auto request = DelegationRequest::Create();
    auto cred = request->Complete(*SignDelegation(request->csr_pem(), delegator->credential, {}));
    ASSERT_TRUE(cred);
    ASSERT_TRUE(SaveProxyFile(path, *cred));
    auto back = LoadProxyFile(path);
    ASSERT_TRUE(back) << back.error().ToString();
    EXPECT_EQ(back->leaf().SerialHex(), cred->leaf().SerialHex());
    if (round == 0)
      first_serial = cred->leaf().SerialHex();
    else
      EXPECT_NE(back->leaf().SerialHex(), first_serial);
  }
  struct stat sb;
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace kite::credentials
