// Fuzzes the mailer's parsers: addresses, SMTP URLs, durations, outbox files, header text. Any
// input gives a value or an error, never a crash; what is accepted or produced stays safe.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/mail_options.h"
#include "agent/mailer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  using namespace kite::agent;
  if (auto a = ParseMailAddress(text); a && a->find_first_of("\r\n ,<>") != std::string::npos)
    std::abort();
  if (auto l = ParseAddressList(text)) {
    for (auto& a : *l) {
      if (a.find_first_of("\r\n ,") != std::string::npos) std::abort();
    }
  }
  (void)ParseSmtpUrl(text);
  if (auto d = ParseDurationText(text); d && *d <= 0) std::abort();
  (void)ParseDurationList(text);
  std::string h = HeaderText(text);
  if (h.find_first_of("\r\n") != std::string::npos && h.find("?=\r\n =?") == std::string::npos)
    std::abort();
  if (auto e = ParseOutboxEntry(text)) {
    auto again = ParseOutboxEntry(FormatOutboxEntry(*e));
    if (!again || again->rcpt != e->rcpt || again->message != e->message) std::abort();
  }
  MailMessage m{{"a@b.org"}, text, text};
  std::string wire = FormatMessage(m, "k@b.org", 0, "i@b.org");
  for (size_t i = 0; i < wire.size(); ++i) {
    if (wire[i] == '\n' && (i == 0 || wire[i - 1] != '\r')) std::abort();
  }
  return 0;
}
