// The pool credential's text form: claims as JSON, base64url, an HMAC-SHA256 over both.
#include "pool/credential.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <optional>

namespace kite::pool {
namespace {

namespace json = boost::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr int64_t kMaxTime = int64_t{1} << 40;  // far beyond any real date, far below overflow

std::unexpected<Error> Bad(const std::string& why) {
  return Fail(ErrorCode::kInvalidInput, "pool credential: " + why);
}

std::string Base64Url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

// Strict: only the URL-safe alphabet, no padding, no bits left over that the encoder never writes.
std::optional<std::string> FromBase64Url(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '-'             ? 62
            : c == '_'             ? 63
                                   : -1;
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string Mac(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), md.data(), &n)) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(md.data()), n);
}

bool IsHex(std::string_view s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) ||
        std::isupper(static_cast<unsigned char>(c)))
      return false;
  return true;
}

// "C.P" with both whole numbers of 0..2147483647 (the cluster from 1), written plainly.
bool IsJobId(std::string_view s) {
  auto dot = s.find('.');
  if (dot == std::string_view::npos) return false;
  auto part = [](std::string_view p, int64_t min) {
    if (p.empty() || p.size() > 10 || (p.size() > 1 && p[0] == '0')) return false;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    return ec == std::errc() && end == p.data() + p.size() && v >= min && v <= 2147483647;
  };
  return part(s.substr(0, dot), 1) && part(s.substr(dot + 1), 0);
}

std::optional<CredentialKind> KindNamed(std::string_view name) {
  for (auto k : {CredentialKind::kLocal, CredentialKind::kGlidein, CredentialKind::kStartd})
    if (CredentialKindName(k) == name) return k;
  return std::nullopt;
}

}  // namespace

std::string_view CredentialKindName(CredentialKind kind) {
  switch (kind) {
    case CredentialKind::kLocal:
      return "local";
    case CredentialKind::kGlidein:
      return "glidein";
    case CredentialKind::kStartd:
      return "startd";
  }
  return "?";
}

Status CheckStartdName(std::string_view name) {
  if (name.empty() || name.size() > 128) return Bad("a startd name is 1 to 128 characters");
  if (name[0] == '.' || name[0] == '-') return Bad("a startd name starts with a letter or digit");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return Bad("a startd name holds only letters, digits, '.', '_' and '-'");
  }
  return {};
}

std::string SignCredential(const CredentialClaims& c, std::string_view key) {
  json::object o{{"kind", CredentialKindName(c.kind)},
                 {"name", c.name},
                 {"slots", c.slots},
                 {"iat", c.issued},
                 {"exp", c.expires},
                 {"id", c.id}};
  if (!c.job.empty()) o["job"] = c.job;
  std::string head = std::string(kCredentialPrefix) + Base64Url(json::serialize(o));
  return head + "." + Base64Url(Mac(key, head));
}

Result<CredentialClaims> ParseCredential(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty()) return Bad("empty");
  if (text.size() > kMaxCredentialBytes)
    return Bad("longer than " + std::to_string(kMaxCredentialBytes) + " bytes");
  if (!text.starts_with(kCredentialPrefix))
    return Bad("not a Kite pool credential (it starts with " + std::string(kCredentialPrefix) +
               ")");
  std::string_view rest = text.substr(kCredentialPrefix.size());
  auto dot = rest.find('.');
  if (dot == std::string_view::npos || rest.find('.', dot + 1) != std::string_view::npos)
    return Bad("not three parts separated by '.'");
  auto payload = FromBase64Url(rest.substr(0, dot));
  auto mac = FromBase64Url(rest.substr(dot + 1));
  if (!payload || !mac) return Bad("not base64url");
  if (mac->size() != 32) return Bad("its MAC is not 32 bytes");
  boost::system::error_code ec;
  json::value v = json::parse(*payload, ec);
  if (ec || !v.is_object()) return Bad("its claims are not a JSON object");
  const json::object& o = v.as_object();
  auto str = [&](const char* key, std::string* out) -> Status {
    const json::value* x = o.if_contains(key);
    if (!x || !x->is_string()) return Bad(std::string(key) + " must be a string");
    *out = std::string(x->as_string());
    return {};
  };
  auto num = [&](const char* key, int64_t min, int64_t max, int64_t* out) -> Status {
    const json::value* x = o.if_contains(key);
    if (!x || !x->is_int64() || x->as_int64() < min || x->as_int64() > max)
      return Bad(std::string(key) + " must be a whole number from " + std::to_string(min) + " to " +
                 std::to_string(max));
    *out = x->as_int64();
    return {};
  };
  CredentialClaims c;
  std::string kind;
  int64_t slots = 0;
  for (auto st : {str("kind", &kind), str("name", &c.name), str("id", &c.id),
                  num("slots", 1, kMaxCredentialSlots, &slots), num("iat", 0, kMaxTime, &c.issued),
                  num("exp", 0, kMaxTime, &c.expires)}) {
    if (!st) return Fail(st.error());
  }
  c.slots = static_cast<int>(slots);
  auto k = KindNamed(kind);
  if (!k) return Bad("kind '" + kind.substr(0, 32) + "' is not local, glidein or startd");
  c.kind = *k;
  if (auto st = CheckStartdName(c.name); !st) return Fail(st.error());
  if (c.id.size() != 32 || !IsHex(c.id)) return Bad("id must be 32 lower-case hex digits");
  if (c.expires <= c.issued) return Bad("it expires before it was issued");
  if (const json::value* job = o.if_contains("job")) {
    if (!job->is_string()) return Bad("job must be a string");
    c.job = std::string(job->as_string());
  }
  if (c.kind == CredentialKind::kGlidein) {
    if (!IsJobId(c.job)) return Bad("a glide-in's credential names its grid job as C.P");
    if (c.name != "glidein-" + c.job) return Bad("a glide-in's startd is named glidein-C.P");
  } else if (!c.job.empty()) {
    return Bad("only a glide-in's credential names a job");
  }
  return c;
}

Result<CredentialClaims> VerifyCredential(std::string_view text, std::string_view key) {
  auto claims = ParseCredential(text);
  if (!claims) return claims;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  auto dot = text.rfind('.');
  auto given = FromBase64Url(text.substr(dot + 1));
  std::string want = Mac(key, text.substr(0, dot));
  if (key.size() != kCredentialKeyBytes || !given || want.size() != given->size() ||
      CRYPTO_memcmp(want.data(), given->data(), want.size()) != 0) {
    return Fail(ErrorCode::kAuthFailed,
                "pool credential " + claims->id + " was not issued by this agent");
  }
  return claims;
}

}  // namespace kite::pool
