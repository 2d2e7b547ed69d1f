// The test CA: its directory layout, the certificates it issues, and its namespace rule.
#include "credentials/ca.h"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/files.h"
#include "test_util.h"

namespace kite::credentials {
namespace {

using testing::TempDir;
using testing::World;

mode_t ModeOf(const std::string& path) {
  struct stat sb {};
  ::stat(path.c_str(), &sb);
  return sb.st_mode & 0777;
}

TEST(TestCaTest, InitWritesTheGridSecurityLayout) {
  auto w = World::Make();
  std::string tdir = w->ca.trusted_dir();
  char hash[16];
  std::snprintf(hash, sizeof hash, "%08lx",
                X509_NAME_hash_ex(X509_get_subject_name(w->ca.certificate().get()), nullptr,
                                  nullptr, nullptr));
  EXPECT_TRUE(FileExists(tdir + "/" + hash + ".0"));
  EXPECT_TRUE(FileExists(tdir + "/" + hash + ".r0"));
  auto policy = ReadFile(tdir + "/" + hash + ".signing_policy");
  ASSERT_TRUE(policy);
  EXPECT_NE(policy->find("access_id_CA      X509         '/O=Grid/OU=Kite/CN=Test CA'"),
            std::string::npos);
  EXPECT_NE(policy->find("'\"/O=Grid/OU=Kite/*\"'"), std::string::npos);
  EXPECT_EQ(ModeOf(w->ca.dir() + "/private/cakey.pem"), 0600u);
  EXPECT_EQ(ModeOf(w->ca.dir() + "/private"), 0700u);
  auto again = TestCa::Init(w->ca.dir());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kAlreadyExists);
  auto reopened = TestCa::Open(w->ca.dir());
  ASSERT_TRUE(reopened) << reopened.error().ToString();
  EXPECT_EQ(reopened->certificate().Subject(), "/O=Grid/OU=Kite/CN=Test CA");
}

TEST(TestCaTest, HostCertificateNamesTheHost) {
  auto w = World::Make();
  auto host = w->ca.IssueHostCredential("localhost", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(host) << host.error().ToString();
  EXPECT_EQ(host->leaf().Subject(), "/O=Grid/OU=Kite/CN=host/localhost");
  X509* x = host->leaf().get();
  EXPECT_EQ(X509_check_host(x, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(x, "example.org", 0, 0, nullptr), 1);
  auto id = w->verifier->Verify(host->chain);
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(id->type, ProxyType::kEndEntity);
  EXPECT_FALSE(w->ca.IssueHostCredential("bad name"));
}

TEST(TestCaTest, UserFilesHaveTheUsualModes) {
  auto w = World::Make();
  TempDir tmp;
  auto f = w->ca.IssueUser("OU=Lab/CN=Jim", tmp / ".globus", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->subject, "/O=Grid/OU=Kite/OU=Lab/CN=Jim");
  EXPECT_EQ(BaseName(f->cert_path), "usercert.pem");
  EXPECT_EQ(ModeOf(f->key_path), 0600u);
  EXPECT_EQ(ModeOf(f->cert_path), 0644u);
  auto again = w->ca.IssueUser("CN=Jim", tmp / ".globus", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kAlreadyExists);
}

TEST(TestCaTest, SubjectsOutsideTheNamespaceAreRefused) {
  auto w = World::Make();
  auto ok =
      w->ca.IssueUserCredential("/O=Grid/OU=Kite/CN=Full Form", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(ok) << ok.error().ToString();
  auto bad = w->ca.IssueUserCredential("/O=Elsewhere/CN=Eve", {.key = {KeyAlgorithm::kEcP256}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("outside this CA's namespace"), std::string::npos);
}

TEST(TestCaTest, OpenWithoutACaSaysWhatToRun) {
  TempDir tmp;
  auto ca = TestCa::Open(tmp / "nothing");
  ASSERT_FALSE(ca);
  EXPECT_NE(ca.error().message().find("kite ca init"), std::string::npos);
}

}  // namespace
}  // namespace kite::credentials
