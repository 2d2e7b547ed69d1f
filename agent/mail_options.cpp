// Parsers for [mail] and [credentials] values.
#include "agent/mail_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <arpa/inet.h>
#include <unistd.h>

#include "common/strings.h"

namespace kite::agent {
namespace {

bool IsAtext(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-/=?^_`{|}~").find(c) != std::string_view::npos;
}

bool ValidHostName(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  size_t start = 0;
  while (start <= h.size()) {
    size_t dot = h.find('.', start);
    std::string_view label = h.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// An address literal of a mail domain: "[127.0.0.1]" or "[IPv6:::1]".
// inet_pton reads a C string: a NUL inside the brackets would cut the text it checks.
bool ValidLiteral(std::string_view d) {
  if (d.size() < 3 || d.front() != '[' || d.back() != ']') return false;
  if (d.find('\0') != std::string_view::npos) return false;
  std::string inner(d.substr(1, d.size() - 2));
  unsigned char buf[16];
  if (inner.starts_with("IPv6:")) return ::inet_pton(AF_INET6, inner.c_str() + 5, buf) == 1;
  return ::inet_pton(AF_INET, inner.c_str(), buf) == 1;
}

// A bracketed IPv6 host of a URL: "[::1]".
bool ValidUrlLiteral(std::string_view d) {
  if (d.size() < 3 || d.front() != '[' || d.back() != ']') return false;
  if (d.find('\0') != std::string_view::npos) return false;
  std::string inner(d.substr(1, d.size() - 2));
  unsigned char buf[16];
  return ::inet_pton(AF_INET6, inner.c_str(), buf) == 1;
}

Error Bad(std::string_view what, std::string_view text) {
  return Error(ErrorCode::kInvalidInput, std::string(what) + " '" + std::string(text) + "'");
}

}  // namespace

std::string UidDomain(const MailOptions& o) {
  if (!o.uid_domain.empty()) return o.uid_domain;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

Result<SmtpUrl> ParseSmtpUrl(std::string_view url) {
  SmtpUrl u;
  std::string_view rest;
  if (url.starts_with("smtp://")) {
    rest = url.substr(7);
  } else if (url.starts_with("smtps://")) {
    rest = url.substr(8);
    u.implicit_tls = true;
    u.port = 465;
  } else {
    return Fail(Bad("must be smtp://HOST[:PORT] or smtps://HOST[:PORT], not", url));
  }
  if (rest.ends_with("/")) rest.remove_suffix(1);
  std::string_view host = rest, port;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return Fail(Bad("unclosed [ in", url));
    host = rest.substr(0, close + 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Fail(Bad("bad host in", url));
      port = after.substr(1);
      if (port.empty()) return Fail(Bad("empty port in", url));
    }
    if (!ValidUrlLiteral(host)) return Fail(Bad("bad host in", url));
  } else {
    size_t colon = rest.find(':');
    if (colon != std::string_view::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (port.empty()) return Fail(Bad("empty port in", url));
    }
    if (!ValidHostName(host)) return Fail(Bad("bad host in", url));
  }
  if (!port.empty()) {
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535)
      return Fail(Bad("bad port in", url));
    u.port = p;
  }
  u.host = std::string(host);
  return u;
}

Result<std::string> ParseMailAddress(std::string_view text) {
  if (text.empty() || text.size() > 254) return Fail(Bad("not an e-mail address:", text));
  size_t at = text.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == text.size())
    return Fail(Bad("not an e-mail address (want user@domain):", text));
  std::string_view local = text.substr(0, at), domain = text.substr(at + 1);
  if (local.size() > 64 || local.front() == '.' || local.back() == '.' ||
      local.find("..") != std::string_view::npos)
    return Fail(Bad("bad local part in e-mail address", text));
  for (char c : local) {
    if (!IsAtext(c) && c != '.') return Fail(Bad("bad character in e-mail address", text));
  }
  if (!ValidHostName(domain) && !ValidLiteral(domain))
    return Fail(Bad("bad domain in e-mail address", text));
  return std::string(text);
}

Result<std::vector<std::string>> ParseAddressList(std::string_view text) {
  std::vector<std::string> out;
  auto pieces = Split(text, ',', false);
  if (pieces.empty()) return Fail(Bad("no e-mail address in", text));
  for (auto& p : pieces) {
    auto a = ParseMailAddress(p);
    if (!a) return Fail(a.error());
    if (std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
  }
  return out;
}

Result<int64_t> ParseDurationText(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty()) return Fail(Bad("not a duration (like 90s, 30m, 2h, 1d):", text));
  int64_t total = 0;
  size_t i = 0;
  while (i < t.size()) {
    size_t start = i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    if (i == start || i - start > 12)
      return Fail(Bad("not a duration (like 90s, 30m, 2h, 1d):", text));
    int64_t n = 0;
    std::from_chars(t.data() + start, t.data() + i, n);
    int64_t mult = 1;
    if (i < t.size()) {
      switch (std::tolower(static_cast<unsigned char>(t[i]))) {
        case 's':
          mult = 1;
          break;
        case 'm':
          mult = 60;
          break;
        case 'h':
          mult = 3600;
          break;
        case 'd':
          mult = 86400;
          break;
        default:
          return Fail(Bad("not a duration (like 90s, 30m, 2h, 1d):", text));
      }
      ++i;
    } else if (start != 0) {
      return Fail(Bad("a unit is needed after each number in", text));
    }
    total += n * mult;
    if (total > (int64_t{1} << 40)) return Fail(Bad("duration too long:", text));
  }
  if (total <= 0) return Fail(Bad("duration must be more than 0:", text));
  return total;
}

Result<std::vector<int64_t>> ParseDurationList(std::string_view text) {
  std::vector<int64_t> out;
  auto pieces = Split(text, ',', false);
  if (pieces.empty()) return Fail(Bad("no duration in", text));
  for (auto& p : pieces) {
    auto d = ParseDurationText(p);
    if (!d) return Fail(d.error());
    out.push_back(*d);
  }
  std::sort(out.rbegin(), out.rend());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatSeconds(int64_t s) {
  if (s < 0) s = 0;
  if (s < 60) return std::to_string(s) + "s";
  int64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
  std::string out;
  if (d) out += std::to_string(d) + "d ";
  if (h) out += std::to_string(h) + "h ";
  if (m || out.empty()) out += std::to_string(m) + "m ";
  out.pop_back();
  return out;
}

}  // namespace kite::agent
