// The pool's signing key, its credentials, and who they let in.
#include "agent/pool_authority.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>

#include "agent/job.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/htcondor_codes.h"
#include "common/secret.h"
#include "common/strings.h"
#include "glidein/glidein_job.h"

namespace kite::agent {
namespace {

using pool::CredentialClaims;
using pool::CredentialKind;

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    unsigned v = 0;
    std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
    out += static_cast<char>(v);
  }
  return out;
}

std::string RevokedPath(const std::string& dir) {
  return dir + "/revoked";
}

}  // namespace

std::string CredentialRefusal(const CredentialClaims& c, PoolDoor door, double now, bool revoked,
                              const GlideinJobView& job) {
  // Checked on every frame a startd sends: nothing is built unless it is refused.
  auto what = [&] {
    return "its " + std::string(pool::CredentialKindName(c.kind)) + " credential " + c.id;
  };
  if (revoked) return what() + " was revoked";
  if (now >= static_cast<double>(c.expires))
    return what() + " expired at " + FormatUtc(static_cast<double>(c.expires));
  if (c.kind == CredentialKind::kLocal && door != PoolDoor::kLocal)
    return "it presented the local startd's credential over the network";
  if (c.kind == CredentialKind::kGlidein && door == PoolDoor::kLocal)
    return "a glide-in's credential is for a startd at a site, not for the local socket";
  if (c.kind == CredentialKind::kGlidein) {
    if (!job.found) return "its glide-in, job " + c.job + ", is not in the queue";
    if (!job.is_glidein) return "job " + c.job + " is not a glide-in";
    if (job.status != kIdle && job.status != kRunning)
      return "its glide-in, job " + c.job + ", is " + StatusName(job.status) +
             " (kite glidein rm and a hold revoke a glide-in's credential)";
  }
  return "";
}

bool SlotAllowed(const CredentialClaims& c, std::string_view slot) {
  constexpr std::string_view kSlot = "slot";
  auto at = slot.find('@');
  if (!slot.starts_with(kSlot) || at == std::string_view::npos || slot.substr(at + 1) != c.name)
    return false;
  std::string_view number = slot.substr(kSlot.size(), at - kSlot.size());
  int k = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), k);
  return ec == std::errc() && end == number.data() + number.size() && !number.empty() &&
         number[0] != '0' && k >= 1 && k <= c.slots;
}

Status IssueGlideinCredentials(PoolAuthority& authority, int cluster, int count, int slots,
                               double lifetime, const std::string& dir) {
  if (count < 1 || slots < 1 || slots > pool::kMaxCredentialSlots || !(lifetime >= 0))
    return Fail(ErrorCode::kInvalidInput,
                "glide-in credentials: count, slots or lifetime out of range");
  if (auto st = MakeDirs(dir, 0700); !st) return st;
  double now = authority.Now();
  double valid = lifetime > 0 ? kGlideinQueueAllowance + lifetime + glidein::kWalltimeMarginSeconds
                              : kOpenCredentialLifetime;
  for (int proc = 0; proc < count; ++proc) {
    std::string job = std::to_string(cluster) + "." + std::to_string(proc);
    CredentialClaims c{.kind = CredentialKind::kGlidein,
                       .name = glidein::GlideinStartdName(cluster, proc),
                       .job = job,
                       .slots = slots,
                       .expires = static_cast<int64_t>(now + valid)};
    auto issued =
        authority.IssueToFile(c, dir + "/" + glidein::GlideinCredentialName(cluster, proc));
    if (!issued) return Fail(issued.error().Wrap("the credential of glide-in " + job));
  }
  return {};
}

Result<std::unique_ptr<PoolAuthority>> PoolAuthority::Open(const std::string& dir,
                                                           std::function<double()> clock) {
  if (auto st = MakeDirs(dir, 0700); !st) return Fail(st.error());
  auto key = LoadOrCreateSecret(dir + "/signing.key", "pool's signing key");
  if (!key) return Fail(key.error());
  std::unique_ptr<PoolAuthority> a(new PoolAuthority(dir, Unhex(*key), std::move(clock)));
  if (auto text = ReadFile(RevokedPath(dir)); text) {
    for (const auto& line : Split(*text, '\n')) {
      std::string id(Trim(line));
      if (!id.empty()) a->revoked_.insert(id);
    }
  } else if (text.error().code() != ErrorCode::kNotFound) {
    return Fail(text.error().Wrap("the pool's revoked credentials"));
  }
  return a;
}

std::string PoolAuthority::Issue(CredentialClaims claims) {
  claims.id = RandomHex(16);
  claims.issued = static_cast<int64_t>(Now());
  return pool::SignCredential(claims, key_);
}

Result<CredentialClaims> PoolAuthority::IssueToFile(CredentialClaims claims,
                                                    const std::string& path) {
  std::string text = Issue(claims);
  if (auto st = WriteFileAtomic(path, text + "\n", 0600); !st) return Fail(st.error());
  return pool::ParseCredential(text);
}

Status PoolAuthority::Revoke(const std::string& id) {
  if (id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Fail(ErrorCode::kInvalidInput, "'" + id + "' is not a credential id (32 hex digits)");
  if (revoked_.contains(id)) return {};
  std::string path = RevokedPath(dir_);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return FailErrno("open " + path);
  std::string line = id + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return FailErrno("write " + path);
  revoked_.insert(id);
  return {};
}

Result<CredentialClaims> PoolAuthority::Verify(std::string_view text) const {
  return pool::VerifyCredential(text, key_);
}

}  // namespace kite::agent
