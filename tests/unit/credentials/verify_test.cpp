// Proxy creation and chain verification: what a gatekeeper accepts and refuses, and why.
#include "credentials/verify.h"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include "credentials/proxy.h"
#include "test_util.h"

namespace kite::credentials {
namespace {

using namespace std::chrono_literals;
using testing::Resign;
using testing::World;

ProxyOptions Opts(std::chrono::seconds lifetime = 12h, bool limited = false) {
  ProxyOptions o;
  o.lifetime = lifetime;
  o.limited = limited;
  return o;
}

TEST(ProxyTest, ProxyOfAUserVerifiesToTheUser) {
  auto w = World::Make();
  auto p = CreateProxy(w->user, Opts());
  ASSERT_TRUE(p) << p.error().ToString();
  const auto& leaf = p->credential.leaf();
  EXPECT_TRUE(leaf.IsProxy());
  EXPECT_EQ(leaf.Issuer(), "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_TRUE(leaf.Subject().starts_with("/O=Grid/OU=Kite/CN=Jane Doe/CN="));
  EXPECT_EQ(ProxyTypeOf(leaf), ProxyType::kImpersonation);
  auto id = w->verifier->Verify(p->credential.chain);
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->subject, "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_EQ(id->ca, "/O=Grid/OU=Kite/CN=Test CA");
  EXPECT_EQ(id->proxy_depth, 1);
  EXPECT_FALSE(id->limited);
  auto left = id->not_after - Clock::now();
  EXPECT_GT(left, 11h + 59min);
  EXPECT_LE(left, 12h);
}

TEST(ProxyTest, ProxyOfAProxyAndLimitedProxies) {
  auto w = World::Make();
  auto p1 = CreateProxy(w->user, Opts(12h, true));
  ASSERT_TRUE(p1);
  auto p2 = CreateProxy(p1->credential, Opts(1h));  // asks for full rights: forced limited
  ASSERT_TRUE(p2);
  EXPECT_EQ(ProxyTypeOf(p2->credential.leaf()), ProxyType::kLimited);
  auto id = w->verifier->Verify(p2->credential.chain);
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->subject, "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_EQ(id->proxy_depth, 2);
  EXPECT_TRUE(id->limited);
  auto strict = Verifier::Create({.ca_dir = w->ca.trusted_dir(), .reject_limited = true});
  ASSERT_TRUE(strict);
  auto refused = (*strict)->Verify(p2->credential.chain);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("limited"), std::string::npos);
}

TEST(ProxyTest, LifetimeIsClippedToTheIssuer) {
  auto w = World::Make();
  auto p1 = CreateProxy(w->user, Opts(1h));
  ASSERT_TRUE(p1);
  auto p2 = CreateProxy(p1->credential, Opts(24h));
  ASSERT_TRUE(p2);
  EXPECT_TRUE(p2->clipped);
  EXPECT_LE(p2->credential.leaf().NotAfter(), p1->credential.leaf().NotAfter());
}

TEST(ProxyTest, PathLengthZeroStopsFurtherProxies) {
  auto w = World::Make();
  ProxyOptions o = Opts();
  o.path_length = 0;
  auto p1 = CreateProxy(w->user, o);
  ASSERT_TRUE(p1);
  EXPECT_EQ(ProxyPathLength(p1->credential.leaf()), 0);
  auto p2 = CreateProxy(p1->credential, Opts());
  ASSERT_FALSE(p2);
  EXPECT_NE(p2.error().message().find("path length"), std::string::npos);
  // A second proxy forged below it is refused by the verifier.
  auto other = CreateProxy(w->user, Opts());
  ASSERT_TRUE(other);
  auto below = CreateProxy(other->credential, Opts());
  ASSERT_TRUE(below);
  const Certificate& p1_leaf = p1->credential.leaf();
  auto forged = Resign(below->credential.leaf(), p1->credential.key, [&](X509* x) {
    X509_NAME* n = X509_NAME_dup(X509_get_subject_name(p1_leaf.get()));
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("12345"), -1, -1, 0);
    X509_set_subject_name(x, n);
    X509_set_issuer_name(x, X509_get_subject_name(p1_leaf.get()));
    X509_NAME_free(n);
  });
  auto id = w->verifier->Verify({forged, p1_leaf, w->user.leaf()});
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("path length"), std::string::npos) << id.error().message();
}

TEST(VerifyTest, ExpiredAndNotYetValidAreRefused) {
  auto w = World::Make();
  auto p = CreateProxy(w->user, Opts(1h));
  ASSERT_TRUE(p);
  auto later = w->verifier->Verify(p->credential.chain, Clock::now() + 2h);
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code(), ErrorCode::kProxyExpired);
  EXPECT_NE(later.error().message().find("expired"), std::string::npos) << later.error().message();
  // A user certificate whose validity starts later (a CA clock ahead of ours).
  IssueOptions io{.key = {KeyAlgorithm::kEcP256}};
  io.not_before = Clock::now() + 1h;
  auto future_user = w->ca.IssueUserCredential("CN=Future", io);
  ASSERT_TRUE(future_user);
  auto earlier = w->verifier->Verify(future_user->chain);
  ASSERT_FALSE(earlier);
  EXPECT_EQ(earlier.error().code(), ErrorCode::kProxyExpired);
  EXPECT_NE(earlier.error().message().find("not valid until"), std::string::npos);
}

TEST(VerifyTest, ExpiredUserCertificateCannotMakeAProxy) {
  auto w = World::Make();
  IssueOptions io{.key = {KeyAlgorithm::kEcP256}};
  io.not_before = Clock::now() - 48h;
  io.not_after = Clock::now() - 24h;
  auto old = w->ca.IssueUserCredential("CN=Old", io);
  ASSERT_TRUE(old);
  auto p = CreateProxy(*old, Opts());
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kProxyExpired);
  EXPECT_FALSE(w->verifier->Verify(old->chain));
}

TEST(VerifyTest, ChainToAnUntrustedCaIsRefused) {
  auto w = World::Make();
  auto other = World::Make("/O=Grid/OU=Kite/CN=Other CA");
  auto p = CreateProxy(other->user, Opts());
  ASSERT_TRUE(p);
  auto id = w->verifier->Verify(p->credential.chain);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code(), ErrorCode::kAuthFailed);
  EXPECT_NE(id.error().message().find("not a CA trusted"), std::string::npos)
      << id.error().message();
}

TEST(VerifyTest, TamperedSignatureIsRefused) {
  auto w = World::Make();
  auto p = CreateProxy(w->user, Opts());
  ASSERT_TRUE(p);
  std::string der = p->credential.leaf().ToDer();
  der[der.size() - 5] ^= 0x5a;  // inside the signature value
  auto bad = Certificate::FromDer(der);
  ASSERT_TRUE(bad);
  CertChain chain = p->credential.chain;
  chain[0] = *bad;
  auto id = w->verifier->Verify(chain);
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("does not verify"), std::string::npos)
      << id.error().message();
}

TEST(VerifyTest, ProxyOutlastingItsIssuerIsRefused) {
  auto w = World::Make();
  auto p = CreateProxy(w->user, Opts());
  ASSERT_TRUE(p);
  auto beyond = Clock::to_time_t(w->user.leaf().NotAfter() + 24h);
  auto forged = Resign(p->credential.leaf(), w->user.key,
                       [&](X509* x) { ASN1_TIME_set(X509_getm_notAfter(x), beyond); });
  CertChain chain = {forged, w->user.leaf()};
  auto id = w->verifier->Verify(chain);
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("beyond its issuer"), std::string::npos)
      << id.error().message();
}

TEST(VerifyTest, ProxySubjectMustExtendItsIssuer) {
  auto w = World::Make();
  auto p = CreateProxy(w->user, Opts());
  ASSERT_TRUE(p);
  auto forged = Resign(p->credential.leaf(), w->user.key, [](X509* x) {
    X509_NAME* n = X509_NAME_new();
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("Mallory"), -1, -1, 0);
    X509_set_subject_name(x, n);
    X509_NAME_free(n);
  });
  auto id = w->verifier->Verify({forged, w->user.leaf()});
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code(), ErrorCode::kAuthFailed);
}

TEST(VerifyTest, FullProxyUnderALimitedOneIsRefused) {
  auto w = World::Make();
  auto limited = CreateProxy(w->user, Opts(12h, true));
  ASSERT_TRUE(limited);
  auto full = CreateProxy(limited->credential, Opts());
  ASSERT_TRUE(full);
  // Forge: rewrite the policy to inheritAll and re-sign with the limited proxy's key.
  auto forged = Resign(full->credential.leaf(), limited->credential.key, [](X509* x) {
    int idx = X509_get_ext_by_NID(x, NID_proxyCertInfo, -1);
    X509_EXTENSION_free(X509_delete_ext(x, idx));
    PROXY_CERT_INFO_EXTENSION* pci = PROXY_CERT_INFO_EXTENSION_new();
    pci->proxyPolicy->policyLanguage = OBJ_nid2obj(NID_id_ppl_inheritAll);
    X509_add1_ext_i2d(x, NID_proxyCertInfo, pci, 1, 0);
    PROXY_CERT_INFO_EXTENSION_free(pci);
  });
  CertChain chain = full->credential.chain;
  chain[0] = forged;
  auto id = w->verifier->Verify(chain);
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("signed by a limited proxy"), std::string::npos)
      << id.error().message();
}

TEST(VerifyTest, RevokedUserIsRefusedAfterTheCrlIsWritten) {
  auto w = World::Make();
  auto p = CreateProxy(w->user, Opts());
  ASSERT_TRUE(p);
  ASSERT_TRUE(w->verifier->Verify(p->credential.chain));
  ASSERT_TRUE(w->ca.Revoke(w->user.leaf()));
  // A verifier reads CRLs when built (OpenSSL caches them), as a restarted gatekeeper would.
  auto fresh = Verifier::Create({.ca_dir = w->ca.trusted_dir()});
  ASSERT_TRUE(fresh);
  auto id = (*fresh)->Verify(p->credential.chain);
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("revoked"), std::string::npos) << id.error().message();
}

TEST(VerifyTest, MissingCaDirectoryIsReported) {
  auto v = Verifier::Create({.ca_dir = "/nonexistent/certificates"});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code(), ErrorCode::kNotFound);
}

TEST(ProxyInfoTest, DescribesTypeStrengthAndTimeLeft) {
  auto w = World::Make();
  ProxyOptions o = Opts(2h, true);
  o.key = {KeyAlgorithm::kRsa, 2048};
  auto p = CreateProxy(w->user, o);
  ASSERT_TRUE(p);
  auto info = DescribeCredential(p->credential.chain);
  EXPECT_EQ(info.identity, "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_EQ(info.type, ProxyType::kLimited);
  EXPECT_EQ(ProxyTypeName(info.type), "RFC 3820 compliant limited proxy");
  EXPECT_EQ(info.bits, 2048);
  EXPECT_EQ(info.key_algorithm, "RSA");
  EXPECT_GT(info.time_left, 1h + 59min);
  auto expired = DescribeCredential(p->credential.chain, Clock::now() + 3h);
  EXPECT_EQ(expired.time_left.count(), 0);
}

TEST(DurationTest, ParsesGridProxyInitForms) {
  EXPECT_EQ(*ParseDuration("12:00"), 12h);
  EXPECT_EQ(*ParseDuration("0:30"), 30min);
  EXPECT_EQ(*ParseDuration("90m"), 90min);
  EXPECT_EQ(*ParseDuration("2h"), 2h);
  EXPECT_FALSE(ParseDuration("12"));
  EXPECT_FALSE(ParseDuration("1:75"));
  EXPECT_FALSE(ParseDuration("abc"));
  EXPECT_EQ(FormatDuration(43199s), "11:59:59");
}

}  // namespace
}  // namespace kite::credentials
