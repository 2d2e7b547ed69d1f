// The pool credential's text form: signed claims read back whole; a changed byte, another key, a
// malformed or out-of-range claim is refused with the reason.
#include "pool/credential.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace kite::pool {
namespace {

const std::string kKey(kCredentialKeyBytes, 'k');

CredentialClaims Glidein() {
  return {.kind = CredentialKind::kGlidein,
          .name = "glidein-12.3",
          .job = "12.3",
          .slots = 4,
          .issued = 1795800000,
          .expires = 1795900000,
          .id = "0123456789abcdef0123456789abcdef"};
}

// A credential whose payload is `claims` (JSON text) and whose MAC is 32 zero bytes: the cases
// that use it fail at parsing, before the MAC is looked at.
std::string WithPayload(const std::string& claims) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string b64;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : claims) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) b64 += kAlphabet[(acc >> (bits -= 6)) & 63];
  }
  if (bits > 0) b64 += kAlphabet[(acc << (6 - bits)) & 63];
  return std::string(kCredentialPrefix) + b64 + "." + std::string(43, 'A');
}

TEST(PoolCredential, SignedClaimsReadBackWhole) {
  for (auto c : {Glidein(),
                 CredentialClaims{.kind = CredentialKind::kLocal,
                 .name = "desktop.example.org",
                 .slots = 8,
                 .issued = 1,
                 .expires = 2,
                 .id = std::string(32, 'a')},
                 CredentialClaims{.kind = CredentialKind::kStartd,
                 .name = "laptop_2",
                 .slots = kMaxCredentialSlots,
                 .issued = 5,
                 .expires = 1000000,
                 .id = std::string(32, '0')}}) {
    std::string text = SignCredential(c, kKey);
    EXPECT_TRUE(text.starts_with(kCredentialPrefix));
    EXPECT_LE(text.size(), kMaxCredentialBytes);
    auto back = VerifyCredential(text + "\n", kKey);
    ASSERT_TRUE(back) << back.error().ToString();
    EXPECT_EQ(*back, c);
  }
}

TEST(PoolCredential, AnotherKeyOrAChangedByteIsRefused) {
  std::string text = SignCredential(Glidein(), kKey);
  auto other = VerifyCredential(text, std::string(kCredentialKeyBytes, 'x'));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code(), ErrorCode::kAuthFailed);
  EXPECT_NE(other.error().message().find("not issued by this agent"), std::string::npos);
  // Every single-character change of the payload or the MAC is refused, one way or the other.
  size_t refused = 0;
  for (size_t i = kCredentialPrefix.size(); i < text.size(); ++i) {
    std::string t = text;
    t[i] = t[i] == 'A' ? 'B' : 'A';
    if (!VerifyCredential(t, kKey)) ++refused;
  }
  EXPECT_EQ(refused, text.size() - kCredentialPrefix.size());
  // A short key never verifies, whatever was signed with it.
  EXPECT_FALSE(VerifyCredential(SignCredential(Glidein(), "short"), "short"));
}

TEST(PoolCredential, MalformedTextIsRefusedWithTheReason) {
  struct Case {
    std::string text, why;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {std::string(kMaxCredentialBytes + 1, 'a'), "longer than"},
      {"-----BEGIN CERTIFICATE-----", "not a Kite pool credential"},
      {"kite-pool-1.abc", "three parts"},
      {"kite-pool-1.a.b.c", "three parts"},
      {"kite-pool-1.a=.b", "not base64url"},
      {"kite-pool-1.YQ.YQ", "MAC is not 32 bytes"},
      {WithPayload("[1,2]"), "not a JSON object"},
      {WithPayload("{\"kind\":\"glidein\"}"), "must be a string"},
  };
  for (const auto& c : cases) {
    auto r = ParseCredential(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message().find(c.why), std::string::npos)
        << c.text.substr(0, 40) << ": " << r.error().message();
  }
}

TEST(PoolCredential, ClaimsOutOfRangeAreRefused) {
  auto with = [](const std::function<void(boost::json::object&)>& edit) {
    boost::json::object o{{"kind", "glidein"},
                          {"name", "glidein-12.3"},
                          {"job", "12.3"},
                          {"slots", 4},
                          {"iat", 100},
                          {"exp", 200},
                          {"id", "0123456789abcdef0123456789abcdef"}};
    edit(o);
    return WithPayload(boost::json::serialize(o));
  };
  struct Case {
    std::function<void(boost::json::object&)> edit;
    std::string why;
  };
  const std::vector<Case> cases = {
      {[](auto& o) { o["kind"] = "admin"; }, "is not local, glidein or startd"},
      {[](auto& o) { o["slots"] = 0; }, "slots must be a whole number from 1"},
      {[](auto& o) { o["slots"] = 1025; }, "slots must be"},
      {[](auto& o) { o["slots"] = 2.5; }, "slots must be"},
      {[](auto& o) { o["exp"] = 50; }, "expires before it was issued"},
      {[](auto& o) { o["exp"] = int64_t{1} << 62; }, "exp must be"},
      {[](auto& o) { o["iat"] = -1; }, "iat must be"},
      {[](auto& o) { o["id"] = "XYZ"; }, "id must be 32"},
      {[](auto& o) { o["name"] = "../../etc"; }, "startd name"},
      {[](auto& o) { o["name"] = ""; }, "startd name"},
      {[](auto& o) { o["name"] = "glidein-12.4"; }, "named glidein-C.P"},
      {[](auto& o) { o["job"] = "12"; }, "names its grid job as C.P"},
      {[](auto& o) { o["job"] = "0.1"; }, "names its grid job as C.P"},
      {[](auto& o) { o["job"] = "99999999999.0"; }, "names its grid job as C.P"},
      {[](auto& o) { o["job"] = 12; }, "job must be a string"},
      {[](auto& o) {
         o["kind"] = "startd";
         o["name"] = "laptop";
       },
       "only a glide-in's credential names a job"},
  };
  for (const auto& c : cases) {
    auto r = ParseCredential(with(c.edit));
    ASSERT_FALSE(r) << c.why;
    EXPECT_NE(r.error().message().find(c.why), std::string::npos) << r.error().message();
  }
}

TEST(PoolCredential, StartdNames) {
  for (const std::string& ok :
       std::vector<std::string>{"a", "glidein-1.0", "node_07.example.org", std::string(128, 'x')})
    EXPECT_TRUE(CheckStartdName(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{"", ".hidden", "-flag", "a/b", "a b",
                                                         "a\nb", std::string(129, 'x')})
    EXPECT_FALSE(CheckStartdName(bad)) << bad;
}

}  // namespace
}  // namespace kite::pool
