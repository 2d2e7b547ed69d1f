// Certificates, keys and credential files: PEM round trips and the errors a user sees.
#include "credentials/certificate.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/files.h"
#include "test_util.h"

namespace kite::credentials {
namespace {

using testing::TempDir;
using testing::World;

TEST(CertificateTest, ChainRoundTripsThroughPem) {
  auto w = World::Make();
  CertChain chain = {w->user.leaf(), w->ca.certificate()};
  auto parsed = ParseChainPem(ChainToPem(chain));
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].Subject(), "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_EQ((*parsed)[1].Subject(), "/O=Grid/OU=Kite/CN=Test CA");
  EXPECT_EQ((*parsed)[0].Issuer(), "/O=Grid/OU=Kite/CN=Test CA");
  auto der = Certificate::FromDer(chain[0].ToDer());
  ASSERT_TRUE(der);
  EXPECT_EQ(der->SerialHex(), chain[0].SerialHex());
}

TEST(CertificateTest, MalformedPemIsAClearError) {
  struct Case {
    std::string pem;
    std::string message;
  } cases[] = {
      {"", "no PEM certificate found"},
      {"hello world", "no PEM certificate found"},
      {"-----BEGIN CERTIFICATE-----\nAAAA\n", "has no END line"},
      {"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
       "malformed PEM certificate #1"},
  };
  for (const auto& c : cases) {
    auto r = ParseChainPem(c.pem);
    ASSERT_FALSE(r) << c.pem;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << r.error().message();
  }
}

TEST(CertificateTest, CredentialFileRoundTripIsPrivate) {
  auto w = World::Make();
  TempDir tmp;
  std::string path = tmp / "x509up";
  ASSERT_TRUE(SaveProxyFile(path, w->user));
  struct stat sb;
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  auto back = LoadProxyFile(path);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->leaf().Subject(), w->user.leaf().Subject());
  EXPECT_TRUE(back->key.Matches(back->leaf()));
}

TEST(CertificateTest, ProxyFileReadableByOthersIsRefused) {
  auto w = World::Make();
  TempDir tmp;
  std::string path = tmp / "x509up";
  ASSERT_TRUE(SaveProxyFile(path, w->user));
  ::chmod(path.c_str(), 0644);
  auto r = LoadProxyFile(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermission);
  EXPECT_NE(r.error().message().find("0644"), std::string::npos) << r.error().message();
}

TEST(CertificateTest, KeyFileReadableByOthersIsRefused) {
  auto w = World::Make();
  TempDir tmp;
  auto files = w->ca.IssueUser("CN=Bob", tmp / "globus", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(files) << files.error().ToString();
  ::chmod(files->key_path.c_str(), 0640);
  auto r = LoadCertificateAndKey(files->cert_path, files->key_path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermission);
}

TEST(CertificateTest, KeyNotMatchingCertificateIsRefused) {
  auto w = World::Make();
  TempDir tmp;
  auto a = w->ca.IssueUser("CN=A", tmp / "a", {.key = {KeyAlgorithm::kEcP256}});
  auto b = w->ca.IssueUser("CN=B", tmp / "b", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(a && b);
  auto r = LoadCertificateAndKey(a->cert_path, b->key_path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("does not match"), std::string::npos);
  // The same check guards proxy files.
  std::string mixed = w->user.leaf().ToPem() + PrivateKey::Generate({})->ToPem();
  auto p = ParseCredentialPem(mixed);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("does not match"), std::string::npos);
}

TEST(CertificateTest, EncryptedKeyAsksForThePassphrase) {
  auto w = World::Make();
  TempDir tmp;
  IssueOptions io{.key = {KeyAlgorithm::kEcP256}};
  io.passphrase = "correct horse";
  auto f = w->ca.IssueUser("CN=Carol", tmp / "g", io);
  ASSERT_TRUE(f) << f.error().ToString();
  int asked = 0;
  auto good = LoadCertificateAndKey(f->cert_path, f->key_path, [&]() -> Result<std::string> {
    ++asked;
    return std::string("correct horse");
  });
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(asked, 1);
  auto wrong = LoadCertificateAndKey(f->cert_path, f->key_path,
                                     []() -> Result<std::string> { return std::string("nope"); });
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), ErrorCode::kAuthFailed);
  auto none = LoadCertificateAndKey(f->cert_path, f->key_path);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("passphrase is needed"), std::string::npos);
}

TEST(CertificateTest, DistinguishedNamesParseInBothForms) {
  auto g = ParseDistinguishedName("/O=Grid/OU=Kite/CN=host/example.org");
  ASSERT_TRUE(g) << g.error().ToString();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ((*g)[2].value, "host/example.org");
  auto c = ParseDistinguishedName("O=Grid, OU=Kite, CN=Jane Doe");
  ASSERT_TRUE(c);
  EXPECT_EQ(FormatDistinguishedName(*c), "/O=Grid/OU=Kite/CN=Jane Doe");
  EXPECT_FALSE(ParseDistinguishedName("CN"));
  EXPECT_FALSE(ParseDistinguishedName("XYZZY=1"));
  EXPECT_FALSE(ParseDistinguishedName("CN="));
}

}  // namespace
}  // namespace kite::credentials
