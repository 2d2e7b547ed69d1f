// The mailer's parsers and message format, job notification rules, and [mail]/[credentials]
// config errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent/config.h"
#include "agent/cred_monitor.h"
#include "agent/mail_options.h"
#include "agent/mailer.h"
#include "agent/notifier.h"
#include "classad/io.h"

namespace kite::agent {
namespace {

TEST(SmtpUrl, AcceptsHostsPortsAndSchemes) {
  auto u = ParseSmtpUrl("smtp://mail.example.org:2525");
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_EQ(u->host, "mail.example.org");
  EXPECT_EQ(u->port, 2525);
  EXPECT_FALSE(u->implicit_tls);
  u = ParseSmtpUrl("smtps://127.0.0.1");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 465);
  EXPECT_TRUE(u->implicit_tls);
  u = ParseSmtpUrl("smtp://[::1]:25/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "[::1]");
  EXPECT_EQ(ParseSmtpUrl("smtp://localhost")->port, 25);
}

TEST(SmtpUrl, RejectsMalformed) {
  for (const char* bad :
       {"", "http://host", "smtp://", "smtp://:25", "smtp://host:", "smtp://host:0",
        "smtp://host:65536", "smtp://host:25x", "smtp://ho st", "smtp://user@host",
        "smtp://host/path", "smtp://[::1", "smtp://[::1]x", "smtp://-host", "smtp://a..b",
        "SMTP://host", "smtp://host\r\n:25", "smtp://[zz::1]"}) {
    EXPECT_FALSE(ParseSmtpUrl(bad)) << bad;
  }
}

TEST(MailAddress, AcceptsPlainAddresses) {
  for (const char* good : {"jane@example.org", "j.doe+kite@mail.example.org", "root@localhost",
                           "x@[127.0.0.1]", "x@[IPv6:::1]", "a_b-c@x-y.z"}) {
    EXPECT_TRUE(ParseMailAddress(good)) << good;
  }
}

TEST(MailAddress, RejectsMalformedAndInjection) {
  for (const char* bad :
       {"", "jane", "@example.org", "jane@", "jane@@example.org", "Jane <jane@example.org>",
        "jane doe@example.org", "jane@example.org\r\nBcc: evil@example.org", ".jane@example.org",
        "jane.@example.org", "ja..ne@example.org", "jane@exa mple.org", "jane@-example.org",
        "jane@example..org", "jane@[1.2.3]", "jane@[::1]", "jane@example.org,",
        "ja\"ne@example.org", "jane@ex_ample.org"}) {
    EXPECT_FALSE(ParseMailAddress(bad)) << bad;
  }
  EXPECT_FALSE(ParseMailAddress(std::string(300, 'a') + "@example.org"));
  // A NUL inside an address literal: the address check must see past it (found by the fuzzer:
  // "[127.0.0.1\0..." was taken as the literal before the NUL, blanks and all).
  using namespace std::string_literals;
  EXPECT_FALSE(ParseMailAddress("ab@[127.0.0.1\0\0a \x01]"s));
  EXPECT_FALSE(ParseMailAddress("ab@[IPv6:::1\0 x]"s));
  EXPECT_FALSE(ParseSmtpUrl("smtp://[::1\0 x]:25"s));
}

TEST(MailAddress, Lists) {
  auto l = ParseAddressList("a@x.org, b@y.org,a@x.org");
  ASSERT_TRUE(l);
  EXPECT_EQ(*l, (std::vector<std::string>{"a@x.org", "b@y.org"}));
  EXPECT_FALSE(ParseAddressList("a@x.org,,b@y.org"));
  EXPECT_FALSE(ParseAddressList(""));
  EXPECT_FALSE(ParseAddressList("a@x.org, nobody"));
}

TEST(Durations, ParsesUnitsAndLists) {
  EXPECT_EQ(*ParseDurationText("90"), 90);
  EXPECT_EQ(*ParseDurationText("90s"), 90);
  EXPECT_EQ(*ParseDurationText("30m"), 1800);
  EXPECT_EQ(*ParseDurationText(" 2H "), 7200);
  EXPECT_EQ(*ParseDurationText("1d"), 86400);
  EXPECT_EQ(*ParseDurationText("1h30m"), 5400);
  EXPECT_EQ(*ParseDurationList("30m, 2h, 30m"), (std::vector<int64_t>{7200, 1800}));
}

TEST(Durations, RejectsMalformed) {
  for (const char* bad : {"", " ", "h", "2x", "-5m", "0", "0s", "2h30", "1.5h", "2 h", "m2",
                          "99999999999999h", "1h 30m"}) {
    EXPECT_FALSE(ParseDurationText(bad)) << bad;
  }
  for (const char* bad : {"", "2h,", ",2h", "2h,,30m", "2h, soon", "2h; 30m"}) {
    EXPECT_FALSE(ParseDurationList(bad)) << bad;
  }
  EXPECT_EQ(FormatSeconds(45), "45s");
  EXPECT_EQ(FormatSeconds(7260), "2h 1m");
  EXPECT_EQ(FormatSeconds(90000), "1d 1h");
}

TEST(MailMessage, HeadersAreSafeAndComplete) {
  MailMessage m;
  m.to = {"jane@example.org", "joe@example.org"};
  m.subject = "Job 1.0 held: bad\r\nBcc: evil@example.org";
  m.body = "line one\nline two\n";
  std::string text = FormatMessage(m, "kite@example.org", 1.7e9, "id.1@example.org");
  EXPECT_NE(text.find("Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Message-ID: <id.1@example.org>\r\n"), std::string::npos);
  EXPECT_NE(text.find("From: kite@example.org\r\n"), std::string::npos);
  EXPECT_NE(text.find("To: jane@example.org, joe@example.org\r\n"), std::string::npos);
  EXPECT_NE(text.find("Subject: Job 1.0 held: bad  Bcc: evil@example.org\r\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("\r\nBcc:"), std::string::npos);
  EXPECT_NE(text.find("\r\n\r\nline one\r\nline two\r\n"), std::string::npos);
  // No bare LF anywhere.
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      EXPECT_EQ(text[i - 1], '\r') << i;
    }
  }
}

TEST(MailMessage, NonAsciiSubjectIsEncodedAndLongLinesBroken) {
  EXPECT_EQ(HeaderText("plain"), "plain");
  EXPECT_EQ(HeaderText("caf\xc3\xa9"), "=?UTF-8?B?Y2Fmw6k=?=");
  EXPECT_EQ(HeaderText("a=?b").rfind("=?UTF-8?B?", 0), 0u);
  // Bytes that are not UTF-8 (stray continuation bytes, found by the fuzzer) still end.
  std::string junk = "9," + std::string(8, '\x88') + std::string(90, '\xb7');
  std::string enc = HeaderText(junk);
  EXPECT_EQ(enc.rfind("=?UTF-8?B?", 0), 0u);
  EXPECT_EQ(enc.find_first_of("\x88\xb7"), std::string::npos);
  MailMessage m;
  m.to = {"a@b.org"};
  m.body = std::string(3000, 'x');
  std::string text = FormatMessage(m, "k@b.org", 0, "i@b.org");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\r\n", start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LE(end - start, 998u);
    start = end + 2;
  }
}

TEST(Outbox, RoundTripsAndRejectsDamage) {
  OutboxEntry e{"kite@x.org", {"a@x.org", "b@y.org"}, "Subject: s\r\n\r\nbody\r\n"};
  auto back = ParseOutboxEntry(FormatOutboxEntry(e));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->from, e.from);
  EXPECT_EQ(back->rcpt, e.rcpt);
  EXPECT_EQ(back->message, e.message);
  for (const char* bad :
       {"", "kite-outbox 2\nfrom a@b.org\nrcpt c@d.org\n\nx", "kite-outbox 1\nfrom a@b.org\n",
        "kite-outbox 1\nrcpt c@d.org\n\nx", "kite-outbox 1\nfrom a@b.org\n\nx",
        "kite-outbox 1\nfrom a@b.org\nrcpt bad\n\nx",
        "kite-outbox 1\nfrom a@b.org\nrcpt c@d.org\nhelo x\n\nx"}) {
    EXPECT_FALSE(ParseOutboxEntry(bad)) << bad;
  }
}

classad::ClassAd Ad(const std::string& text) {
  auto ad = classad::ParseOldAd(text);
  EXPECT_TRUE(ad) << text;
  return ad ? *ad : classad::ClassAd();
}

TEST(Notification, FollowsHTCondorsChoices) {
  struct Case {
    const char* ad;
    int status;
    const char* want;
  };
  const Case cases[] = {
      {"JobNotification = 2\nExitCode = 0", kCompleted, "completed"},
      {"JobNotification = 2\nExitCode = 3", kCompleted, "completed"},
      {"JobNotification = 3\nExitCode = 0", kCompleted, ""},
      {"JobNotification = 3\nExitCode = 3", kCompleted, "completed"},
      {"JobNotification = 3\nExitBySignal = true\nExitSignal = 9", kCompleted, "completed"},
      {"JobNotification = 1\nExitCode = 0", kCompleted, "completed"},
      {"JobNotification = 0\nExitCode = 3", kCompleted, ""},
      {"ExitCode = 3", kCompleted, ""},
      {"JobNotification = 3\nHoldReasonCode = 3", kHeld, "held"},
      {"JobNotification = 1\nHoldReasonCode = 6", kHeld, "held"},
      {"JobNotification = 2\nHoldReasonCode = 3", kHeld, ""},
      {"JobNotification = 3\nHoldReasonCode = 1", kHeld, ""},
      {"JobNotification = 1\nHoldReasonCode = 15", kHeld, ""},
      {"JobNotification = 3\nHoldReasonCode = 4\nCredentialHoldFile = \"/p\"", kHeld, ""},
      {"JobNotification = 3\nHoldReasonCode = 4", kHeld, "held"},
      {"JobNotification = 1", kRunning, ""},
      {"JobNotification = 1", kRemoved, ""},
  };
  for (auto& c : cases) {
    EXPECT_EQ(NotificationReason(Ad(c.ad), c.status), c.want) << c.ad << " / " << c.status;
  }
}

TEST(Notification, RecipientsAndMessage) {
  auto ad =
      Ad("Owner = \"jane\"\nJobNotification = 3\nExitCode = 7\nIwd = \"/work\"\nOut = \"out.txt\"\n"
         "Err = \"/logs/err.txt\"\nCmd = \"/bin/sim\"\nArguments = \"-n 5\"");
  EXPECT_EQ(JobRecipients(ad, "example.org"), (std::vector<std::string>{"jane@example.org"}));
  auto m = JobMessage(ad, JobKey{12, 3}, "completed", "example.org");
  EXPECT_EQ(m.subject, "Kite job 12.3 exited with code 7");
  EXPECT_NE(m.body.find("Exit code:    7"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("Output:       /work/out.txt"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("Error:        /logs/err.txt"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("/bin/sim -n 5"), std::string::npos) << m.body;
  auto with_user = Ad("Owner = \"jane\"\nNotifyUser = \"a@x.org, b@y.org\"");
  EXPECT_EQ(JobRecipients(with_user, "example.org"),
            (std::vector<std::string>{"a@x.org", "b@y.org"}));
  auto bad_user = Ad("Owner = \"jane\"\nNotifyUser = \"x@y.org\\nBcc: z@w.org\"");
  EXPECT_EQ(JobRecipients(bad_user, "example.org"), (std::vector<std::string>{"jane@example.org"}));
}

TEST(CredentialText, HoldReasonAndCommand) {
  std::string r = CredentialHoldReason("/tmp/x509up_u1", 1700000000, 1700000100, 600);
  EXPECT_NE(r.find("/tmp/x509up_u1 expired at 2023-11-14 22:13:20 UTC"), std::string::npos) << r;
  r = CredentialHoldReason("/tmp/p", 1700000300, 1700000000, 600);
  EXPECT_NE(r.find("expires at 2023-11-14 22:18:20 UTC, in 5m: too soon for the job, which "
                   "needs at least 10m ([credentials] min_lifetime)"),
            std::string::npos)
      << r;
  EXPECT_EQ(ProxyInitCommand("/tmp/p", 180), "kite proxy init --out /tmp/p --valid 12:00");
  EXPECT_EQ(ProxyInitCommand("/tmp/p", 24 * 3600 + 5),
            "kite proxy init --out /tmp/p --valid 25:00");
}

struct Bad {
  const char* text;
  const char* message;
};

TEST(MailConfig, ReadsMailAndCredentials) {
  auto o = ParseAgentOptions("/h",
                             "[mail]\nsmtp_url = \"smtp://127.0.0.1:2525\"\nfrom = \"k@x.org\"\n"
                             "admin = \"root@x.org\"\nstarttls = true\nretry_interval = \"2m\"\n"
                             "[credentials]\ncheck_interval = 1\nmin_lifetime = \"5m\"\n"
                             "credential_alarm = \"30m, 2h\"\n",
                             "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->mail.smtp_url, "smtp://127.0.0.1:2525");
  EXPECT_TRUE(o->mail.starttls);
  EXPECT_EQ(o->mail.retry_interval, 120);
  EXPECT_EQ(o->credentials.check_interval, 1);
  EXPECT_EQ(o->credentials.min_lifetime, 300);
  EXPECT_EQ(o->credentials.alarms, (std::vector<int64_t>{7200, 1800}));
  auto arr = ParseAgentOptions("/h", "[credentials]\ncredential_alarm = [\"2h\", 600]\n", "c");
  ASSERT_TRUE(arr) << arr.error().ToString();
  EXPECT_EQ(arr->credentials.alarms, (std::vector<int64_t>{7200, 600}));
  auto d = ParseAgentOptions("/h", "", "config.toml");
  EXPECT_FALSE(d->mail.enabled());
  EXPECT_EQ(d->credentials.check_interval, 60);
  EXPECT_EQ(d->credentials.min_lifetime, 600);
}

TEST(MailConfig, BadValuesNameKeyAndLine) {
  const Bad cases[] = {
      {"[mail]\nsmtp_url = \"http://x\"\n", "config.toml:2: mail.smtp_url: must be smtp://"},
      {"[mail]\n\nsmtp_url = \"smtp://x:99999\"\n", "config.toml:3: mail.smtp_url: bad port"},
      {"[mail]\nsmtp_url = 25\n", "config.toml:2: mail.smtp_url: expected a string"},
      {"[mail]\nfrom = \"kite\"\n", "config.toml:2: mail.from: not an e-mail address"},
      {"[mail]\nadmin = \"a@b.org\\r\\nBcc: c@d.org\"\n", "config.toml:2: mail.admin: bad"},
      {"[mail]\nstarttls = \"yes\"\n", "config.toml:2: mail.starttls: expected true or false"},
      {"[mail]\nsmtps = 1\n", "config.toml:2: mail.smtps: unknown key"},
      {"[mail]\nusername = \"u\"\n", "config.toml:1: mail: username needs password_file"},
      {"[mail]\nsmtp_url = \"smtps://h\"\nstarttls = true\n", "config.toml:1: mail: starttls is"},
      {"[mail]\npassword_file = \"/nonexistent/pw\"\n", "config.toml:2: mail.password_file:"},
      {"[mail]\nretry_interval = \"soon\"\n", "config.toml:2: mail.retry_interval: not a duration"},
      {"[credentials]\ncheck_interval = 0\n", "config.toml:2: credentials.check_interval: must be"},
      {"[credentials]\nmin_lifetime = -1\n", "config.toml:2: credentials.min_lifetime: must be"},
      {"[credentials]\ncredential_alarm = \"2h, soon\"\n",
       "config.toml:2: credentials.credential_alarm: not a duration"},
      {"[credentials]\ncredential_alarm = [true]\n",
       "config.toml:2: credentials.credential_alarm: expected durations"},
      {"[credentials]\ncredential_alarm = 5\n",
       "config.toml:2: credentials.credential_alarm: expected a list"},
      {"[credentials]\nalarm = \"2h\"\n", "config.toml:2: credentials.alarm: unknown key"},
  };
  for (auto& c : cases) {
    auto o = ParseAgentOptions("/h", c.text, "config.toml");
    ASSERT_FALSE(o) << c.text;
    EXPECT_NE(o.error().message().find(c.message), std::string::npos)
        << c.text << " -> " << o.error().message();
  }
}

TEST(MailConfig, PasswordFileMustBePrivate) {
  std::string dir =
      std::filesystem::temp_directory_path() / ("kite-mailcfg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/pw") << "secret\n";
  ::chmod((dir + "/pw").c_str(), 0644);
  auto o = ParseAgentOptions(dir, "[mail]\nusername = \"u\"\npassword_file = \"pw\"\n", "c.toml");
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().message().find("c.toml:3: mail.password_file:"), std::string::npos)
      << o.error().message();
  ::chmod((dir + "/pw").c_str(), 0600);
  o = ParseAgentOptions(dir, "[mail]\nusername = \"u\"\npassword_file = \"pw\"\n", "c.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->mail.password_file, dir + "/pw");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kite::agent
