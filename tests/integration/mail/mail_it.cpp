// Job notifications through the real agent and a real SMTP server: which settings mail what, what
// the messages say, that nothing is mailed twice, and that an unreachable server neither loses mail
// nor slows the agent.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "credentials/ca.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/smtp/smtp_server.h"

namespace kite::testing {
namespace {

std::string Me() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : std::to_string(::geteuid());
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class MailIT : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(env_.home()); }
  void Config(const std::string& smtp_url, const std::string& extra = "") {
    WriteFile(env_.home() + "/config.toml",
              "[agent]\nperiodic_interval = 0.5\nkill_grace = 1\n"
              "[mail]\nsmtp_url = \"" +
                  smtp_url +
                  "\"\nfrom = \"kite@test.example\"\n"
                  "uid_domain = \"test.example\"\nadmin = \"admin@test.example\"\n"
                  "retry_interval = 1\ntimeout = 30\n" +
                  extra);
  }
  bool WaitMails(const SmtpServer& s, size_t n, double seconds = 20) {
    return WaitUntil([&] { return s.Messages().size() >= n; }, seconds);
  }
  int Submit(const std::string& body) {
    return env_.Submit("universe = local\nexecutable = /bin/sh\n" + body + "queue\n");
  }
  // Milliseconds a command takes.
  double Timed(const std::vector<std::string>& args, int* exit_code) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = env_.Kite(args);
    *exit_code = r.exit_code;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  KiteEnv env_{"mail"};
};

TEST_F(MailIT, NotificationSettingsMailWhatHTCondorMails) {
  SmtpServer smtp(env_.dir() + "/smtp");
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  Config(smtp.url());
  env_.StartAgent();
  int complete = Submit(
      "arguments = \"-c 'exit 0'\"\nnotification = Complete\nnotify_user = complete@test.example\n"
      "output = c.out\nerror = c.err\n");
  int error_ok = Submit(
      "arguments = \"-c 'exit 0'\"\nnotification = Error\nnotify_user = error-ok@test.example\n");
  int error_fail = Submit(
      "arguments = \"-c 'exit 3'\"\nnotification = Error\nnotify_user = error@test.example\n");
  int never = Submit(
      "arguments = \"-c 'exit 3'\"\nnotification = Never\nnotify_user = never@test.example\n");
  int always_signal = Submit("arguments = \"-c 'kill -9 $$'\"\nnotification = Always\n");
  int held = Submit(
      "arguments = \"-c 'exit 0'\"\nnotification = Error\nnotify_user = held@test.example\n"
      "on_exit_hold = true\n"
      "on_exit_hold_reason = \"results look wrong\\r\\nBcc: evil@test.example\"\n");
  int complete_held = Submit(
      "arguments = \"-c 'exit 0'\"\nnotification = Complete\nnotify_user = ch@test.example\n"
      "on_exit_hold = true\n");
  int user_held = Submit(
      "arguments = \"-c 'exec sleep 300'\"\nnotification = Always\n"
      "notify_user = userhold@test.example\n");
  for (int c : {complete, error_ok, error_fail, never, always_signal}) {
    auto r = env_.Kite({"wait", std::to_string(c), "--timeout", "30"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  for (int c : {held, complete_held}) {
    ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(std::to_string(c) + ".0") == 5; }, 20));
  }
  std::string uh = std::to_string(user_held) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(uh) == 2; }, 20));
  ASSERT_EQ(env_.Kite({"hold", uh}).exit_code, 0);

  ASSERT_TRUE(WaitMails(smtp, 4)) << smtp.Messages().size();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // nothing more comes
  auto mails = smtp.Messages();
  ASSERT_EQ(mails.size(), 4u);
  std::map<std::string, DeliveredMail> by_rcpt;
  for (auto& m : mails) {
    // Every message also goes to the admin, as a blind copy.
    EXPECT_TRUE(Has(m.rcpt, "admin@test.example")) << m.raw;
    EXPECT_EQ(m.header("to").find("admin@"), std::string::npos) << m.raw;
    EXPECT_EQ(m.mail_from, "kite@test.example");
    EXPECT_EQ(m.header("from"), "kite@test.example");
    EXPECT_FALSE(m.header("date").empty());
    EXPECT_FALSE(m.header("message-id").empty());
    for (auto& r : m.rcpt) {
      if (r != "admin@test.example") by_rcpt[r] = m;
    }
  }
  ASSERT_EQ(by_rcpt.size(), 4u);
  auto& c = by_rcpt["complete@test.example"];
  EXPECT_EQ(c.header("subject"), "Kite job " + std::to_string(complete) + ".0 exited with code 0");
  EXPECT_NE(c.body.find("Output:       " + env_.dir() + "/c.out"), std::string::npos) << c.body;
  EXPECT_NE(c.body.find("Error:        " + env_.dir() + "/c.err"), std::string::npos) << c.body;
  EXPECT_NE(c.body.find("Exit code:    0"), std::string::npos) << c.body;
  auto& e = by_rcpt["error@test.example"];
  EXPECT_EQ(e.header("subject"),
            "Kite job " + std::to_string(error_fail) + ".0 exited with code 3");
  auto& a = by_rcpt[Me() + "@test.example"];  // no notify_user: Owner@uid_domain
  EXPECT_EQ(a.header("subject"),
            "Kite job " + std::to_string(always_signal) + ".0 was killed by signal 9");
  auto& h = by_rcpt["held@test.example"];
  EXPECT_NE(h.header("subject").find("Kite job " + std::to_string(held) +
                                     ".0 is held: results "
                                     "look wrong"),
            std::string::npos)
      << h.raw;
  EXPECT_NE(h.body.find("Hold reason:  results look wrong"), std::string::npos) << h.body;
  EXPECT_NE(h.body.find("kite release " + std::to_string(held) + ".0"), std::string::npos);
  // The reason's CR/LF did not make a header of its own or a recipient.
  EXPECT_EQ(h.raw.find("\nBcc:"), std::string::npos) << h.raw;
  EXPECT_NE(h.body.find("results look wrong  Bcc: evil@test.example"), std::string::npos);
  for (auto& m : mails) EXPECT_FALSE(Has(m.rcpt, "evil@test.example"));
  EXPECT_EQ(by_rcpt.count("never@test.example") + by_rcpt.count("error-ok@test.example") +
                by_rcpt.count("ch@test.example") + by_rcpt.count("userhold@test.example"),
            0u);

  // A restarted agent does not mail the same changes again.
  env_.StopAgent();
  env_.StartAgent();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(smtp.Messages().size(), 4u);
  EXPECT_TRUE(std::filesystem::is_empty(env_.home() + "/mail/outbox"));
  env_.Kite({"rm", uh});
}

// A port that accepts connections (the kernel completes them) and never says a word.
class BlackHole {
 public:
  explicit BlackHole(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 64) == 0;
  }
  ~BlackHole() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool ok() const { return ok_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

TEST_F(MailIT, UnreachableServerLosesNothingAndSlowsNothing) {
  int port = FreePort();
  auto hole = std::make_unique<BlackHole>(port);
  ASSERT_TRUE(hole->ok());
  Config("smtp://127.0.0.1:" + std::to_string(port));
  env_.StartAgent();
  // The mailer is stuck in a conversation with a server that never answers; the agent is not.
  std::vector<int> clusters;
  for (int i = 0; i < 3; ++i) {
    clusters.push_back(Submit("arguments = \"-c 'exit " + std::to_string(i) +
                              "'\"\nnotification = Always\nnotify_user = u" + std::to_string(i) +
                              "@test.example\n"));
  }
  for (int c : clusters) {
    auto r = env_.Kite({"wait", std::to_string(c), "--timeout", "30"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        size_t n = 0;
        for (auto& f : std::filesystem::directory_iterator(env_.home() + "/mail/outbox"))
          n += f.path().extension() == ".eml";
        return n == 3;
      },
      10));
  for (int i = 0; i < 5; ++i) {
    int rc = 0;
    double q = Timed({"q"}, &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_LT(q, 1000) << "kite q took " << q << " ms while the SMTP server hangs";
    double s = Timed(
        {"submit", env_.Write("quick.sub", "universe = local\nexecutable = /bin/true\nqueue\n")},
        &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_LT(s, 1500) << "kite submit took " << s << " ms while the SMTP server hangs";
  }
  for (auto& f : std::filesystem::directory_iterator(env_.home() + "/mail/outbox")) {
    struct stat st {};
    ASSERT_EQ(::stat(f.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f.path();
  }

  // The agent dies with the mail unsent; nothing listens any more: the next agent keeps trying.
  env_.KillAgent();
  hole->Close();
  env_.StartAgent();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/agent.log").find("mail: cannot send") !=
               std::string::npos;
      },
      10))
      << ReadFileOr(env_.home() + "/agent.log");
  int rc = 0;
  EXPECT_LT(Timed({"q"}, &rc), 1000);

  // The server comes up: everything from before the crash arrives, once.
  SmtpServer smtp(env_.dir() + "/smtp", port);
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  ASSERT_TRUE(WaitMails(smtp, 3, 30)) << smtp.Messages().size() << "\n"
                                      << ReadFileOr(env_.home() + "/agent.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto mails = smtp.Messages();
  EXPECT_EQ(mails.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    int n = 0;
    for (auto& m : mails) n += Has(m.rcpt, "u" + std::to_string(i) + "@test.example");
    EXPECT_EQ(n, 1) << i;
  }
  EXPECT_TRUE(std::filesystem::is_empty(env_.home() + "/mail/outbox"));
}

TEST_F(MailIT, StartTlsIsUsedAndRequired) {
  auto ca = kite::credentials::TestCa::Init(env_.dir() + "/ca");
  ASSERT_TRUE(ca) << ca.error().ToString();
  auto host = ca->IssueHost("localhost", env_.dir() + "/host");
  ASSERT_TRUE(host) << host.error().ToString();
  // The server takes mail only after STARTTLS, with a certificate for "localhost" from our CA.
  SmtpServer smtp(env_.dir() + "/smtp", 0, host->cert_path, host->key_path);
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  Config("smtp://localhost:" + std::to_string(smtp.port()),
         "starttls = true\nca_file = \"" + env_.dir() + "/ca/cacert.pem\"\n");
  env_.StartAgent();
  int c = Submit(
      "arguments = \"-c 'exit 0'\"\nnotification = Complete\nnotify_user = tls@test.example\n");
  ASSERT_TRUE(WaitMails(smtp, 1)) << ReadFileOr(env_.home() + "/agent.log");
  auto mails = smtp.Messages();
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_EQ(mails[0].header("subject"), "Kite job " + std::to_string(c) + ".0 exited with code 0");
  env_.StopAgent();

  // A server without STARTTLS gets nothing when starttls = true; the mail waits in the outbox.
  SmtpServer plain(env_.dir() + "/plain");
  ASSERT_TRUE(plain.Start()) << plain.error();
  Config(plain.url(), "starttls = true\n");
  env_.StartAgent();
  Submit("arguments = \"-c 'exit 0'\"\nnotification = Complete\nnotify_user = tls@test.example\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/agent.log").find("mail: cannot send") !=
               std::string::npos;
      },
      20))
      << ReadFileOr(env_.home() + "/agent.log");
  EXPECT_EQ(plain.Messages().size(), 0u);
  EXPECT_FALSE(std::filesystem::is_empty(env_.home() + "/mail/outbox"));
}

TEST_F(MailIT, SmtpsSpeaksTlsFromTheStart) {
  auto ca = kite::credentials::TestCa::Init(env_.dir() + "/ca");
  ASSERT_TRUE(ca) << ca.error().ToString();
  auto host = ca->IssueHost("localhost", env_.dir() + "/host");
  ASSERT_TRUE(host) << host.error().ToString();
  SmtpServer smtp(env_.dir() + "/smtp", 0, host->cert_path, host->key_path);
  smtp.UseImplicitTls();
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  Config("smtps://localhost:" + std::to_string(smtp.port()),
         "ca_file = \"" + env_.dir() + "/ca/cacert.pem\"\n");
  env_.StartAgent();
  int c =
      Submit("arguments = \"-c 'exit 4'\"\nnotification = Error\nnotify_user = tls@test.example\n");
  ASSERT_TRUE(WaitMails(smtp, 1)) << ReadFileOr(env_.home() + "/agent.log");
  EXPECT_EQ(smtp.Messages()[0].header("subject"),
            "Kite job " + std::to_string(c) + ".0 exited with code 4");
}

TEST_F(MailIT, LogsInWithThePasswordFile) {
  std::string pw = env_.Write("smtp.password", "s3cret pass\n", 0600);
  SmtpServer smtp(env_.dir() + "/smtp");
  smtp.RequireLogin("jane", pw);
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  // A wrong password: nothing is delivered, the failure is logged, the mail waits.
  std::string wrong = env_.Write("wrong.password", "guess\n", 0600);
  Config(smtp.url(), "username = \"jane\"\npassword_file = \"" + wrong + "\"\n");
  env_.StartAgent();
  int c = Submit(
      "arguments = \"-c 'exit 0'\"\nnotification = Complete\nnotify_user = pw@test.example\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/agent.log").find("server said 535") != std::string::npos;
      },
      20))
      << ReadFileOr(env_.home() + "/agent.log");
  EXPECT_EQ(smtp.Messages().size(), 0u);
  env_.StopAgent();
  // The right one: the waiting mail goes out.
  Config(smtp.url(), "username = \"jane\"\npassword_file = \"" + pw + "\"\n");
  env_.StartAgent();
  ASSERT_TRUE(WaitMails(smtp, 1)) << ReadFileOr(env_.home() + "/agent.log");
  EXPECT_EQ(smtp.Messages()[0].header("subject"),
            "Kite job " + std::to_string(c) + ".0 exited with code 0");
}

TEST_F(MailIT, MalformedMailOrCredentialSettingsStopTheAgentWithKeyAndLine) {
  struct Case {
    std::string config, message;
  };
  std::string pw = env_.Write("pw", "secret\n", 0644);
  const Case cases[] = {
      {"[mail]\nsmtp_url = \"http://mail.example.org\"\n", "config.toml:2: mail.smtp_url"},
      {"[mail]\nsmtp_url = \"smtp://h:25\"\nfrom = \"not an address\"\n",
       "config.toml:3: mail.from"},
      {"[mail]\nusername = \"u\"\npassword_file = \"" + pw + "\"\n",
       "config.toml:3: mail.password_file"},
      {"[credentials]\n\ncredential_alarm = \"2h, later\"\n",
       "config.toml:3: credentials.credential_alarm"},
      {"[credentials]\ncheck_interval = \"often\"\n", "config.toml:2: credentials.check_interval"},
  };
  for (auto& c : cases) {
    WriteFile(env_.home() + "/config.toml", c.config);
    auto r = env_.Kite({"agent", "start"});
    EXPECT_NE(r.exit_code, 0) << c.config;
    EXPECT_NE((r.out + r.err).find(c.message), std::string::npos) << c.config << r.out << r.err;
  }
}

// condor_submit_dag -notification: the DAG's job mails when the DAG ends, saying how its nodes
// ended; its node jobs (notification not set) mail nothing.
TEST_F(MailIT, ADagSubmittedWithNotificationMailsWhenItEnds) {
  SmtpServer smtp(env_.dir() + "/smtp");
  ASSERT_TRUE(smtp.Start()) << smtp.error();
  Config(smtp.url());
  env_.StartAgent();
  env_.Write("ok.sub", "universe = local\nexecutable = /bin/true\nqueue\n");
  env_.Write("bad.sub", "universe = local\nexecutable = /bin/false\nqueue\n");
  env_.Write("d.dag", "JOB A ok.sub\nJOB B bad.sub\nJOB C ok.sub\nPARENT A CHILD B\n");
  auto r = env_.Kite({"dag", "submit", "-notification", "complete", "d.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("submitted to cluster ([0-9]+)"))) << r.out;
  std::string id = m[1].str() + ".0";
  ASSERT_TRUE(WaitMails(smtp, 1)) << ReadFileOr(env_.home() + "/agent.log");
  ASSERT_EQ(env_.Kite({"wait", id, "--timeout", "20"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // nothing more comes
  auto mails = smtp.Messages();
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_EQ(mails[0].header("subject"), "Kite job " + id + " exited with code 1");
  EXPECT_NE(mails[0].body.find("DAG nodes:    2 done, 1 failed, of 3"), std::string::npos)
      << mails[0].body;
  EXPECT_NE(mails[0].body.find("DAG log:      " + env_.dir() + "/d.dag.dagman.out"),
            std::string::npos)
      << mails[0].body;
  // A value condor_submit_dag would refuse is refused, naming the values.
  auto bad = env_.Kite({"dag", "submit", "-notification", "sometimes", "d.dag"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("notification must be Never, Always, Complete or Error"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace kite::testing
