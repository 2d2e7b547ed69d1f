// Who may offer slots to this agent's pool (docs/pool.md, "Trust"): the key that signs pool
// credentials (pool/credential.h), issuing and revoking them, and the rule that decides, at a
// startd's hello and again on every message it sends, whether its credential still lets it in.
//
// Files, in $KITE_HOME/pool/ (0700): `signing.key` (0600; the only copy of the key: nothing else
// can make a credential this agent accepts), `revoked` (one revoked credential id per line,
// appended and synced before a revocation is answered), `local.credential` (the local startd's).
//
// Used only on the agent's thread.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "common/error.h"
#include "pool/credential.h"

namespace kite::agent {

// The two ways into the pool.
enum class PoolDoor {
  kLocal,  // $KITE_HOME/pool.sock: this user's own processes (SO_PEERCRED)
  kTls,    // [pool] listen: mutual TLS, the glide-ins
};

// What the agent's queue says of the grid job a glide-in credential names.
struct GlideinJobView {
  bool found = false;       // the job is in the queue
  bool is_glidein = false;  // KiteGlidein
  int status = 0;           // JobStatus
};

// "" when `claims` let a startd in through `door` at `now`; otherwise why not, in words for the
// log and the startd. Pure.
//   - expired credentials are refused, as are revoked ones;
//   - a local credential only on the local door (a site never holds it), a glide-in's only on
//     the TLS door, a `kite pool credential create` one on either;
//   - a glide-in's only while its grid job is an Idle or Running glide-in: `kite glidein rm`
//     (Removed), a hold, its end and its leaving the queue revoke it.
std::string CredentialRefusal(const pool::CredentialClaims& claims, PoolDoor door, double now,
                              bool revoked, const GlideinJobView& job);

// Whether slot name `slot` is one a startd with `claims` may offer: slotK@NAME, K in 1..slots.
bool SlotAllowed(const pool::CredentialClaims& claims, std::string_view slot);

class PoolAuthority;

// How long a glide-in's credential holds beyond its lifetime: the time it may wait in a batch
// queue before it starts (its grid job's own state ends it sooner: CredentialRefusal).
inline constexpr double kGlideinQueueAllowance = 7 * 86400;
// A glide-in without an end (--lifetime 0), and a `kite pool credential create` without
// --lifetime, hold this long.
inline constexpr double kOpenCredentialLifetime = 30 * 86400;

// Writes the credentials of glide-ins C.0 .. C.(count-1) (cluster C = `cluster`) to
// DIR/C.P.credential (glidein::GlideinCredentialName, 0600), each for `slots` slots and for the
// glide-in's `lifetime` (seconds; 0: no end) after kGlideinQueueAllowance.
Status IssueGlideinCredentials(PoolAuthority& authority, int cluster, int count, int slots,
                               double lifetime, const std::string& dir);

class PoolAuthority {
 public:
  // Reads (or makes) DIR/signing.key and reads DIR/revoked. A key file readable by others, or
  // damaged, is refused (no credential can then be issued or checked: the caller says why).
  static Result<std::unique_ptr<PoolAuthority>> Open(const std::string& dir,
                                                     std::function<double()> clock);

  // A new credential (its id and issue time filled in) as text.
  std::string Issue(pool::CredentialClaims claims);
  // The same, written to `path` (0600, atomically); its claims are returned.
  Result<pool::CredentialClaims> IssueToFile(pool::CredentialClaims claims,
                                             const std::string& path);
  // The credential with this id is refused from now on; durable when this returns.
  Status Revoke(const std::string& id);
  bool IsRevoked(const std::string& id) const { return revoked_.contains(id); }
  // Claims of a credential this agent issued (MAC checked; expiry and revocation are not).
  Result<pool::CredentialClaims> Verify(std::string_view text) const;

  double Now() const { return clock_(); }
  const std::string& dir() const { return dir_; }
  std::string local_credential_path() const { return dir_ + "/local.credential"; }

 private:
  PoolAuthority(std::string dir, std::string key, std::function<double()> clock)
      : dir_(std::move(dir)), key_(std::move(key)), clock_(std::move(clock)) {}

  std::string dir_;
  std::string key_;  // raw bytes
  std::function<double()> clock_;
  std::set<std::string> revoked_;
};

}  // namespace kite::agent
