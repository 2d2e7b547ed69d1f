// The agent's mailer: RFC 5322 messages kept in a durable outbox and sent over SMTP (libcurl) by a
// worker thread, never on the agent's event loop.
//
// Send() writes the message to $KITE_HOME/mail/outbox/<id>.eml (atomically, mode 0600) and returns;
// the worker sends every file there, oldest first, and removes a file once the server accepted it.
// A failed send is logged and retried with back-off (retry_interval, doubling up to an hour); an
// unreachable server stops the round and backs off as a whole. What is in the outbox when the agent
// stops or crashes is sent by the next agent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/mail_options.h"
#include "common/error.h"

namespace kite::agent {

struct MailMessage {
  std::vector<std::string> to;  // recipients (To: and envelope); valid addresses only
  std::string subject;          // any text: control characters are removed, non-ASCII encoded
  std::string body;             // plain text, '\n' line ends
};

// The message as it goes over the wire: Date, Message-ID, From, To, Subject, MIME headers, a blank
// line and the body, with CRLF line ends and no line longer than 998 octets. `now` is seconds since
// the epoch.
std::string FormatMessage(const MailMessage& m, const std::string& from, double now,
                          const std::string& message_id);
// Header text safe to put on one line: CR, LF and other control characters become spaces, and
// text with non-ASCII characters becomes an RFC 2047 encoded word.
std::string HeaderText(std::string_view text);

// An outbox file: the envelope (sender, recipients) and the message.
struct OutboxEntry {
  std::string from;
  std::vector<std::string> rcpt;
  std::string message;
};
std::string FormatOutboxEntry(const OutboxEntry& e);
Result<OutboxEntry> ParseOutboxEntry(std::string_view text);

class Mailer {
 public:
  Mailer(MailOptions options, std::string outbox_dir);
  ~Mailer();

  // Creates the outbox (0700) and starts the worker, which first sends what an earlier agent left.
  Status Start();
  // Durable in the outbox when it returns OK. Adds the admin copy when one is configured.
  Status Send(const MailMessage& m);
  // Stops the worker, aborting a conversation in progress; unsent mail stays in the outbox.
  void Stop();

  const MailOptions& options() const { return options_; }
  // The sender address: [mail] from, or kite@<uid_domain>.
  const std::string& from() const { return from_; }

 private:
  void Run();
  // One attempt. Empty when sent; otherwise the error, and `server_down` when no message could be
  // sent now (connection, TLS or login failure).
  std::string Deliver(const OutboxEntry& e, bool* server_down);

  MailOptions options_;
  std::string dir_, from_;
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> abort_{false};  // read by libcurl's progress callback
  bool wake_ = false;
  uint64_t seq_ = 0;
  struct Retry {
    int attempts = 0;
    double next = 0;
  };
  std::map<std::string, Retry> retry_;  // by file name; worker thread only
};

}  // namespace kite::agent
