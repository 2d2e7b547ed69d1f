// The pool credential (docs/pool.md, "Trust"): what a startd must present in its `hello` to offer
// slots to an agent. The agent issues one to each glide-in (bound to the glide-in's grid job and
// its slots), one to its own local startd, and one per `kite pool credential create`; each is
// signed with a key only that agent holds, so nobody else can make one, and the user's proxy —
// which every site that ran one of the user's grid jobs holds a delegation of — is not one.
//
// Text form (one line):  kite-pool-1.PAYLOAD.MAC
//   PAYLOAD  base64url (no padding) of a JSON object of the claims (see CredentialClaims)
//   MAC      base64url of HMAC-SHA256(key, "kite-pool-1." + PAYLOAD)
//
// Pure: no files, no clock. Parsing is strict (every claim present, of its type and range) and
// bounded (kMaxCredentialBytes), so the fuzz target drives it directly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite::pool {

inline constexpr std::string_view kCredentialPrefix = "kite-pool-1.";
inline constexpr size_t kMaxCredentialBytes = 2048;
inline constexpr size_t kCredentialKeyBytes = 32;
inline constexpr int kMaxCredentialSlots = 1024;  // as kite-startd --slots

enum class CredentialKind {
  kLocal,    // the agent's own startd: accepted only on $KITE_HOME/pool.sock
  kGlidein,  // a glide-in: valid while its grid job (`job`) is a live glide-in of this agent
  kStartd,   // `kite pool credential create`: a startd the user starts by hand; revocable
};
std::string_view CredentialKindName(CredentialKind kind);

struct CredentialClaims {
  CredentialKind kind = CredentialKind::kGlidein;
  std::string name;     // the startd's name: its slots are slot1@name .. slotN@name
  std::string job;      // kGlidein: the glide-in's grid job, "C.P" (name is then glidein-C.P)
  int slots = 1;        // at most this many slots, numbered 1..slots
  int64_t issued = 0;   // Unix seconds
  int64_t expires = 0;  // Unix seconds; after it the credential is refused
  std::string id;       // 32 hex digits, unique per credential: what a revocation names
  bool operator==(const CredentialClaims&) const = default;
};

// The text of `claims` signed with `key` (kCredentialKeyBytes raw bytes).
std::string SignCredential(const CredentialClaims& claims, std::string_view key);

// The claims of `text` (surrounding white space ignored), read and range-checked; kInvalidInput
// naming what is wrong. The MAC is not checked: that is VerifyCredential's.
Result<CredentialClaims> ParseCredential(std::string_view text);

// ParseCredential, then the MAC against `key`: kAuthFailed when it was not made with this key.
// Expiry and revocation are the caller's (they need a clock and state).
Result<CredentialClaims> VerifyCredential(std::string_view text, std::string_view key);

// A startd name a credential may carry: 1 to 128 of letters, digits, '.', '_', '-', not starting
// with '.' or '-'.
Status CheckStartdName(std::string_view name);

}  // namespace kite::pool
