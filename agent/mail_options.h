// Settings of the agent's mailer ([mail]) and credential monitor ([credentials]) in config.toml,
// and the small parsers their values go through (also used for job attributes at run time).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::agent {

struct MailOptions {
  // smtp_url: "smtp://HOST[:PORT]" or "smtps://HOST[:PORT]" (TLS from the first byte). Empty: no
  // mail is sent (notifications and credential alarms are only logged).
  std::string smtp_url;
  std::string from;           // envelope and From: address; default kite@UID_DOMAIN
  bool starttls = false;      // smtp:// only: upgrade with STARTTLS, and refuse a server without it
  std::string username;       // SMTP AUTH login (with password_file)
  std::string password_file;  // absolute, or relative to $KITE_HOME; must be private (0600)
  std::string admin;          // optional: gets a copy of every message
  std::string uid_domain;     // notify_user default is Owner@uid_domain (HTCondor's UID_DOMAIN)
  std::string ca_file;        // extra trusted CA (PEM) for the server's certificate
  double retry_interval = 60;  // first retry after a failed send; doubles up to 1 h
  double timeout = 60;         // one SMTP conversation, connect included

  bool enabled() const { return !smtp_url.empty(); }
};

struct CredentialOptions {
  double check_interval = 60;   // seconds between looks at every proxy with queued jobs
  double min_lifetime = 600;    // less left than this: the proxy's jobs are held
  std::vector<int64_t> alarms;  // credential_alarm: seconds left that trigger a reminder
};

// The uid_domain in effect: [mail] uid_domain or the host name.
std::string UidDomain(const MailOptions& o);

// "smtp://host:port" split up. `implicit_tls` for smtps://.
struct SmtpUrl {
  std::string host;
  int port = 25;
  bool implicit_tls = false;
};
Result<SmtpUrl> ParseSmtpUrl(std::string_view url);

// One RFC 5321 address ("local@domain": dot-atom local part, host name or [literal] domain).
// Returns it unchanged; anything else (display names, spaces, control characters, CR/LF, several
// '@') fails with kInvalidInput.
Result<std::string> ParseMailAddress(std::string_view text);
// Comma-separated addresses (notify_user may name several). Empty pieces fail.
Result<std::vector<std::string>> ParseAddressList(std::string_view text);

// "90", "90s", "15m", "2h", "1d", "1h30m" -> seconds (> 0).
Result<int64_t> ParseDurationText(std::string_view text);
// "2h, 30m" -> {7200, 1800}, sorted from the longest down, duplicates dropped.
Result<std::vector<int64_t>> ParseDurationList(std::string_view text);
// 7260 -> "2h 1m", 45 -> "45s".
std::string FormatSeconds(int64_t seconds);

}  // namespace kite::agent
