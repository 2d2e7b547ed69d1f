// `kite testgrid`: the embedded default grid comes up, answers a real client with the proxy it
// made, survives a second `up`, and goes down.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "credentials/ca.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"
#include "gram/client.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

TEST(Testgrid, UpPingDown) {
  KiteEnv env("testgrid");
  std::string proxy = env.dir() + "/x509up";
  std::vector<std::string> extra = {"X509_USER_PROXY=" + proxy};
  auto kite = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {BinDir() + "/kite"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto e = env.Env();
    e.insert(e.end(), extra.begin(), extra.end());
    return RunCommand(argv, e, env.dir());
  };
  auto r = kite({"testgrid", "status"});
  EXPECT_EQ(r.exit_code, 3);
  r = kite({"testgrid", "up"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex("grid_resource = kite 127\\.0\\.0\\.1:([0-9]+)/fork")))
      << r.out;
  int port = std::stoi(m[1]);

  // A real client, with the proxy testgrid made, is authenticated and mapped to this account.
  auto cred = credentials::LoadProxyFile(proxy);
  ASSERT_TRUE(cred) << cred.error().ToString();
  auto verifier = credentials::Verifier::Create({.ca_dir = env.home() + "/ca/certificates"});
  ASSERT_TRUE(verifier) << verifier.error().ToString();
  gram::ClientOptions o;
  o.host = "localhost";
  o.port = static_cast<uint16_t>(port);
  o.credential = *cred;
  o.verifier = *verifier;
  auto client = gram::Client::Create(o);
  ASSERT_TRUE(client) << client.error().ToString();
  auto account = (*client)->Ping();
  ASSERT_TRUE(account) << account.error().ToString();
  EXPECT_FALSE(account->empty());

  r = kite({"testgrid", "up"});  // idempotent
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("already up"), std::string::npos) << r.out;
  r = kite({"testgrid", "status"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find(":" + std::to_string(port) + "/fork"), std::string::npos) << r.out;
  r = kite({"testgrid", "down"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = kite({"testgrid", "status"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE((*client)->Ping()) << "the gatekeeper still answers after down";
}

// A test-grid user has no ~/.globus certificate: `kite proxy init` (the command the expiry e-mail
// gives) then uses the test grid's, says so, and makes a proxy the test grid accepts.
TEST(Testgrid, ProxyInitWorksForATestGridUserWithNoCertificateOfTheirOwn) {
  KiteEnv env("testgrid-init");
  env.AddEnv("HOME=" + env.dir());  // no ~/.globus here
  env.AddEnv("X509_USER_PROXY=" + env.dir() + "/x509up");
  env.AddEnv("X509_CERT_DIR=" + env.home() + "/ca/certificates");
  auto r = env.Kite({"testgrid", "up"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string fresh = env.dir() + "/fresh.pem";
  r = env.Kite({"proxy", "init", "--out", fresh, "--valid", "12:00"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("test grid's certificate"), std::string::npos) << r.out;
  auto a = env.Kite({"proxy", "info", "-f", fresh, "--identity"});
  auto b = env.Kite({"proxy", "info", "-f", env.dir() + "/x509up", "--identity"});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(env.Kite({"proxy", "info", "-f", fresh, "--verify"}).exit_code, 0);
  env.Kite({"testgrid", "down"});
}

// A batch system the gatekeeper does not know is refused with its words; --batch slurm needs
// Slurm's commands; a grid that is up with one adapter is not silently reused for another.
TEST(Testgrid, BatchSystemsAreCheckedBeforeTheGridComesUp) {
  KiteEnv env("testgrid-batch");
  env.AddEnv("X509_USER_PROXY=" + env.dir() + "/x509up");
  auto r = env.Kite({"testgrid", "up", "--batch", "nosuch"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("kite-gatekeeper did not start"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no batch adapter named 'nosuch' (known: fork, slurm"), std::string::npos)
      << r.err;
  EXPECT_EQ(env.Kite({"testgrid", "status"}).exit_code, 3);

  std::vector<std::string> no_slurm = env.Env();
  no_slurm.push_back("PATH=/nonexistent");
  r = RunCommand({BinDir() + "/kite", "testgrid", "up", "--batch", "slurm"}, no_slurm, env.dir());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("sbatch is not in PATH"), std::string::npos) << r.err;
  std::vector<std::string> bad_conf = env.Env();
  bad_conf.push_back("SLURM_CONF=" + env.dir() + "/missing.conf");
  r = RunCommand({BinDir() + "/kite", "testgrid", "up", "--batch", "slurm"}, bad_conf, env.dir());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("missing.conf does not exist"), std::string::npos) << r.err;
  r = env.Kite({"testgrid", "up", "--batch-poll-interval", "0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--batch-poll-interval must be more than 0"), std::string::npos) << r.err;

  r = env.Kite({"testgrid", "up"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = env.Kite({"testgrid", "up", "--batch", "slurm"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("already up with the fork adapter; run `kite testgrid down` first"),
            std::string::npos)
      << r.err;
  r = env.Kite({"testgrid", "up", "--batch", "fork"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already up"), std::string::npos) << r.out;
  EXPECT_EQ(env.Kite({"testgrid", "down"}).exit_code, 0);
}

// A default proxy that the test CA trusts but that speaks for someone its grid-mapfile does not
// map is not reused: the test grid makes its own and says to name it, and the first grid job
// runs instead of being held "not in this site's grid-mapfile".
TEST(Testgrid, ADefaultProxyOfAnotherIdentityIsNotUsed) {
  KiteEnv env("testgrid-other");
  std::string def = env.dir() + "/x509up";
  env.AddEnv("X509_USER_PROXY=" + def);
  env.AddEnv("X509_CERT_DIR=" + env.home() + "/ca/certificates");
  ASSERT_EQ(env.Kite({"testgrid", "up"}).exit_code, 0);
  ASSERT_EQ(env.Kite({"testgrid", "down"}).exit_code, 0);
  auto ca = credentials::TestCa::Open(env.home() + "/ca");
  ASSERT_TRUE(ca) << ca.error().ToString();
  auto other =
      ca->IssueUserCredential("CN=Somebody Else", {.key = {credentials::KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(other);
  auto proxy = credentials::CreateProxy(*other, {});
  ASSERT_TRUE(proxy);
  ASSERT_TRUE(credentials::SaveProxyFile(def, proxy->credential));

  auto r = env.Kite({"testgrid", "up"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string own = env.home() + "/testgrid/proxy.pem";
  EXPECT_NE(r.out.find("x509userproxy = " + own), std::string::npos) << r.out;
  auto still = credentials::LoadProxyFile(def);  // the user's proxy is left as it was
  ASSERT_TRUE(still);
  EXPECT_EQ(still->chain.front().Subject(), proxy->credential.chain.front().Subject());

  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("grid_resource = [^\n]*")));
  env.StartAgent();
  int c = env.Submit("universe = grid\n" + m.str() + "\nx509userproxy = " + own +
                     "\nexecutable = /bin/true\nqueue\n");
  ASSERT_GT(c, 0);
  EXPECT_TRUE(WaitUntil([&] { return env.JobStatus(std::to_string(c) + ".0") == 4; }, 60))
      << env.Kite({"q", std::to_string(c), "-json"}).out;
  env.StopAgent();
  env.Kite({"testgrid", "down"});
}

}  // namespace
}  // namespace kite::testing
