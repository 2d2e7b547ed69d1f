// The credential monitor on a real queue and real proxy files, with its own clock: attributes,
// alarms once per threshold (also after a restart), the renewal hook, the hold with one mail, and
// the release of only its own holds when the proxy is renewed.
#include "agent/cred_monitor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "agent/mailer.h"
#include "agent/notifier.h"
#include "agent/queue.h"
#include "credentials/ca.h"
#include "credentials/proxy.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

namespace cred = kite::credentials;

double Wall() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

struct CredMonitorTest : ::testing::Test {
  void SetUp() override {
    auto s = store::JobQueueStore::Open(dir / "queue.db");
    ASSERT_TRUE(s);
    store = std::move(*s);
    queue = std::make_unique<JobQueue>(store.get(), [this] { return t; });
    ASSERT_TRUE(queue->Load());
    auto ca = cred::TestCa::Init(dir / "ca");
    ASSERT_TRUE(ca) << ca.error().ToString();
    auto u = ca->IssueUserCredential("CN=Unit Tester");
    ASSERT_TRUE(u);
    user = *u;
    proxy = dir / "x509up";
    not_after = MakeProxy(std::chrono::hours(1));
    MailOptions mo;
    mo.smtp_url = "smtp://127.0.0.1:1";
    mailer = std::make_unique<Mailer>(mo, dir / "outbox");  // not started: mail stays there
    std::filesystem::create_directories(dir / "outbox");
    auto c = queue->NewCluster();
    ASSERT_TRUE(c);
    SubmitRequest r;
    r.cluster = *c;
    r.common = {{"Cmd", "\"/bin/sleep\""},
                {"JobUniverse", "12"},
                {"Owner", "\"jane\""},
                {"x509userproxy", "\"" + proxy + "\""}};
    r.procs = {
        {{"ProcId", "0"}, {"CredentialAlarm", "1200"}},
        {{"ProcId", "1"}},
        {{"ProcId", "2"}, {"JobStatus", "5"}, {"HoldReasonCode", "1"}, {"HoldReason", "\"mine\""}}};
    ASSERT_TRUE(queue->Submit(r));
    cluster = *c;
  }
  int64_t MakeProxy(std::chrono::seconds lifetime) {
    auto p = cred::CreateProxy(user, {.lifetime = lifetime});
    EXPECT_TRUE(p);
    EXPECT_TRUE(cred::SaveProxyFile(proxy, p->credential));
    return std::chrono::duration_cast<std::chrono::seconds>(
               p->credential.leaf().NotAfter().time_since_epoch())
        .count();
  }
  std::unique_ptr<CredentialMonitor> Monitor() {
    CredentialOptions o;
    o.min_lifetime = 600;
    o.alarms = {3600};
    CredentialMonitor::Actions a;
    a.hold = [this](Job& j, const std::string& why, int code, int sub) {
      queue->Hold(j, why, code, sub);
    };
    a.release = [this](Job& j, const std::string& why) { queue->Release(j, why); };
    a.commit = [this] { return static_cast<bool>(queue->Flush()); };
    auto m = std::make_unique<CredentialMonitor>(*queue, o, dir / "credentials.json", mailer.get(),
                                                 "test.example", a);
    m->SetClock([this] { return t; });
    m->LoadState();
    return m;
  }
  size_t Mails() {
    size_t n = 0;
    for (auto& f : std::filesystem::directory_iterator(dir / "outbox"))
      n += f.path().extension() == ".eml";
    return n;
  }
  Job& J(int proc) { return *queue->Find({cluster, proc}); }

  testing::TempDir dir{"credmon"};
  double t = Wall();
  std::unique_ptr<store::JobQueueStore> store;
  std::unique_ptr<JobQueue> queue;
  std::unique_ptr<Mailer> mailer;
  cred::Credential user;
  std::string proxy;
  int64_t not_after = 0;
  int cluster = 0;
};

TEST_F(CredMonitorTest, AlarmsHoldRenewalAndRelease) {
  auto m = Monitor();
  t = static_cast<double>(not_after - 3000);  // 50 minutes left: the 1 h alarm
  m->Check();
  EXPECT_EQ(J(0).ad.EvaluateInt("x509UserProxyExpiration").value_or(0), not_after);
  EXPECT_EQ(J(2).ad.EvaluateString("x509userproxysubject").value_or(""),
            "/O=Grid/OU=Kite/CN=Unit Tester");
  EXPECT_EQ(Mails(), 1u);
  m->Check();
  EXPECT_EQ(Mails(), 1u);
  t = static_cast<double>(not_after - 1000);  // the job's own 20 min alarm
  m->Check();
  EXPECT_EQ(Mails(), 2u);
  EXPECT_EQ(J(0).status, kIdle);

  // A new monitor (a restarted agent) knows what was mailed.
  m = Monitor();
  m->Check();
  EXPECT_EQ(Mails(), 2u);

  // Less than min_lifetime left: the renewal hook is asked first, for the jobs it would hold.
  std::vector<JobKey> asked;
  m->SetRenewalHook([&](const RenewalRequest& r) {
    EXPECT_EQ(r.path, proxy);
    EXPECT_EQ(r.not_after, not_after);
    asked = r.jobs;
    return RenewalAnswer::kRenewing;
  });
  t = static_cast<double>(not_after - 300);
  m->Check();
  EXPECT_EQ(asked, (std::vector<JobKey>{{cluster, 0}, {cluster, 1}}));
  EXPECT_EQ(J(0).status, kIdle);
  EXPECT_EQ(Mails(), 2u);

  // Expired: held whatever the hook says, with one mail for all of them.
  t = static_cast<double>(not_after + 10);
  m->Check();
  for (int p : {0, 1}) {
    EXPECT_EQ(J(p).status, kHeld);
    EXPECT_EQ(J(p).ad.EvaluateInt("HoldReasonCode").value_or(0), kHoldCorruptedCredential);
    EXPECT_NE(J(p).ad.EvaluateString("HoldReason").value_or("").find(proxy + " expired at"),
              std::string::npos);
  }
  EXPECT_EQ(Mails(), 3u);
  m->Check();
  m = Monitor();
  m->Check();
  EXPECT_EQ(Mails(), 3u);

  // Renewed: the monitor's holds are released, the user's is not; attributes follow the file.
  int64_t renewed = MakeProxy(std::chrono::hours(3));  // beyond every alarm at `t`
  ASSERT_GT(renewed, not_after);
  m->Check();
  EXPECT_EQ(J(0).status, kIdle);
  EXPECT_EQ(J(1).status, kIdle);
  EXPECT_EQ(J(2).status, kHeld);
  EXPECT_EQ(J(2).ad.EvaluateString("HoldReason").value_or(""), "mine");
  for (int p : {0, 1, 2})
    EXPECT_EQ(J(p).ad.EvaluateInt("x509UserProxyExpiration").value_or(0), renewed);
  EXPECT_FALSE(J(0).ad.LookupOwn(kCredentialHoldAttr));
  EXPECT_EQ(Mails(), 3u);
}

TEST_F(CredMonitorTest, UnreadableProxyHoldsNothing) {
  std::filesystem::remove(proxy);
  auto m = Monitor();
  m->Check();
  EXPECT_EQ(J(0).status, kIdle);
  ASSERT_EQ(m->proxies().count(proxy), 1u);
  EXPECT_FALSE(m->proxies().at(proxy).valid);
  EXPECT_NE(m->proxies().at(proxy).error.find("cannot read"), std::string::npos);
  EXPECT_EQ(Mails(), 0u);
}

}  // namespace
}  // namespace kite::agent
