// The credential monitor through the real agent, `kite proxy init` and a real SMTP server: a
// proxy of 80 seconds, its alarms, the hold of its jobs with one e-mail, and their release by
// itself once `kite proxy init` makes a new one.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "credentials/ca.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/smtp/smtp_server.h"

namespace kite::testing {
namespace {

namespace cred = kite::credentials;

class CredentialsIT : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(env_.home());
    auto ca = cred::TestCa::Init(env_.dir() + "/ca");
    ASSERT_TRUE(ca) << ca.error().ToString();
    auto user = ca->IssueUser("CN=Mail Tester", env_.dir() + "/globus");
    ASSERT_TRUE(user) << user.error().ToString();
    cert_ = user->cert_path;
    key_ = user->key_path;
    proxy_ = env_.dir() + "/x509up";
  }
  void ProxyInit(const std::string& valid) {
    auto r = env_.Kite({"proxy", "init", "--cert", cert_, "--key", key_, "--out", proxy_, "--valid",
                        valid, "--no-verify", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  int64_t ProxyNotAfter() {
    auto r = env_.Kite({"proxy", "info", "-f", proxy_, "--json"});
    auto v = boost::json::parse(r.out);
    return v.as_object().at("not_after").to_number<int64_t>();
  }
  std::string Attr(const std::string& id, const std::string& attr) {
    auto r = env_.Kite({"q", "-json", id});
    std::smatch m;
    std::regex re("\"" + attr + "\": ([^,\n]+)");
    return std::regex_search(r.out, m, re) ? std::string(m[1]) : "";
  }
  KiteEnv env_{"creds"};
  std::string cert_, key_, proxy_;
};

TEST_F(CredentialsIT, AlarmsThenHoldWithOneMailThenReleaseOnRenewal) {
  SmtpServer smtp(env_.dir() + "/smtp");
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  WriteFile(env_.home() + "/config.toml",
            "[agent]\nkill_grace = 1\n"
            "[mail]\nsmtp_url = \"" +
                smtp.url() +
                "\"\nuid_domain = \"test.example\"\n"
                "retry_interval = 1\n"
                "[credentials]\ncheck_interval = 0.5\nmin_lifetime = \"30s\"\n"
                "credential_alarm = \"60s\"\n");
  ProxyInit("80s");
  int64_t first_expiry = ProxyNotAfter();
  env_.StartAgent();
  std::string sub =
      "universe = local\nexecutable = /bin/sleep\narguments = 300\nx509userproxy = " + proxy_ +
      "\nnotify_user = jane@test.example\nnotification = Error\n";
  // Two running jobs with their own alarm at 45 s; a third the user holds.
  int a = env_.Submit(sub + "credential_alarm = 45s\nqueue 2\n");
  int b = env_.Submit(sub + "queue\n", "b.sub");
  std::string a0 = std::to_string(a) + ".0", a1 = std::to_string(a) + ".1";
  std::string b0 = std::to_string(b) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(a0) == 2 && env_.JobStatus(b0) == 2; }, 20));
  ASSERT_EQ(env_.Kite({"hold", b0, "-reason", "mine"}).exit_code, 0);
  // The proxy's attributes are on the jobs from the start.
  ASSERT_TRUE(WaitUntil(
      [&] { return Attr(a0, "x509UserProxyExpiration") == std::to_string(first_expiry); }, 5))
      << env_.Kite({"q", "-json", a0}).out;
  EXPECT_EQ(Attr(a1, "x509userproxysubject"), "\"/O=Grid/OU=Kite/CN=Mail Tester\"");

  // 60 s left: the first reminder; 45 s left: the second; 30 s left: the hold, with one mail.
  ASSERT_TRUE(WaitUntil([&] { return smtp.Messages().size() >= 1; }, 30));
  auto mails = smtp.Messages();
  EXPECT_NE(mails[0].header("subject").find("Kite: your proxy " + proxy_ + " expires in"),
            std::string::npos)
      << mails[0].raw;
  EXPECT_EQ(mails[0].rcpt, std::vector<std::string>{"jane@test.example"});
  ASSERT_TRUE(WaitUntil([&] { return smtp.Messages().size() >= 2; }, 20));
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(a0) == 5 && env_.JobStatus(a1) == 5; }, 20));
  ASSERT_TRUE(WaitUntil([&] { return smtp.Messages().size() >= 3; }, 10));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  mails = smtp.Messages();
  ASSERT_EQ(mails.size(), 3u) << mails.back().raw;
  EXPECT_NE(mails[1].header("subject").find("expires in"), std::string::npos);
  auto& held = mails[2];
  EXPECT_EQ(held.header("subject"), "Kite: 2 job(s) held: proxy " + proxy_ + " expiring");
  EXPECT_NE(held.body.find("    " + a0 + "  /bin/sleep"), std::string::npos) << held.body;
  EXPECT_NE(held.body.find("    " + a1 + "  /bin/sleep"), std::string::npos) << held.body;
  EXPECT_EQ(held.body.find(b0 + "  "), std::string::npos) << held.body;
  EXPECT_NE(held.body.find("kite proxy init --out " + proxy_ + " --valid 12:00"), std::string::npos)
      << held.body;
  std::string reason = Attr(a0, "HoldReason");
  EXPECT_NE(reason.find("The proxy " + proxy_ + " expires at "), std::string::npos) << reason;
  EXPECT_EQ(Attr(a0, "HoldReasonCode"), "4");
  EXPECT_NE(held.body.find("Hold reason: The proxy " + proxy_), std::string::npos);
  EXPECT_EQ(env_.JobStatus(b0), 5);

  // A restarted agent mails none of it again.
  env_.StopAgent();
  env_.StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(smtp.Messages().size(), 3u);

  // A new proxy: the jobs held for the old one run again by themselves; the user's hold stays.
  ProxyInit("0:10");
  int64_t second_expiry = ProxyNotAfter();
  ASSERT_GT(second_expiry, first_expiry);
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(a0) == 2 && env_.JobStatus(a1) == 2; }, 10))
      << env_.Kite({"q", "-nobatch"}).out;
  EXPECT_EQ(Attr(a0, "x509UserProxyExpiration"), std::to_string(second_expiry));
  EXPECT_EQ(Attr(a1, "x509UserProxyExpiration"), std::to_string(second_expiry));
  EXPECT_EQ(Attr(b0, "x509UserProxyExpiration"), std::to_string(second_expiry));
  EXPECT_EQ(env_.JobStatus(b0), 5);
  EXPECT_EQ(Attr(b0, "HoldReason"), "\"mine\"");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(smtp.Messages().size(), 3u);
  env_.Kite({"rm", std::to_string(a), std::to_string(b)});
}

}  // namespace
}  // namespace kite::testing
