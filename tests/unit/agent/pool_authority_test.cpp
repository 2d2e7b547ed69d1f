// Who may join the pool (agent/pool_authority.h): the rule for each kind of credential and door,
// the key that only the agent holds, revocation that survives a restart, the glide-ins'
// credentials as `kite glidein submit` has them written.
#include "agent/pool_authority.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/files.h"
#include "common/htcondor_codes.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

using pool::CredentialClaims;
using pool::CredentialKind;

constexpr double kNow = 1795800000;

CredentialClaims Claims(CredentialKind kind) {
  CredentialClaims c{.kind = kind,
                     .name = kind == CredentialKind::kGlidein ? "glidein-12.0" : "node7",
                     .slots = 2,
                     .issued = static_cast<int64_t>(kNow) - 60,
                     .expires = static_cast<int64_t>(kNow) + 3600,
                     .id = std::string(32, 'a')};
  if (kind == CredentialKind::kGlidein) c.job = "12.0";
  return c;
}

const GlideinJobView kLiveGlidein{.found = true, .is_glidein = true, .status = kRunning};

// The local startd's credential never over the network, a glide-in's never on the local socket;
// one the user made for a startd of their own, either.
TEST(CredentialRefusal, EachKindThroughItsOwnDoorOnly) {
  struct Case {
    CredentialKind kind;
    PoolDoor door;
    bool ok;
  };
  for (auto c : {Case{CredentialKind::kLocal, PoolDoor::kLocal, true},
                 Case{CredentialKind::kLocal, PoolDoor::kTls, false},
                 Case{CredentialKind::kGlidein, PoolDoor::kTls, true},
                 Case{CredentialKind::kGlidein, PoolDoor::kLocal, false},
                 Case{CredentialKind::kStartd, PoolDoor::kTls, true},
                 Case{CredentialKind::kStartd, PoolDoor::kLocal, true}}) {
    std::string why = CredentialRefusal(Claims(c.kind), c.door, kNow, false, kLiveGlidein);
    EXPECT_EQ(why.empty(), c.ok) << pool::CredentialKindName(c.kind) << ": " << why;
  }
}

TEST(CredentialRefusal, ExpiredAndRevokedAreRefused) {
  auto c = Claims(CredentialKind::kStartd);
  EXPECT_NE(CredentialRefusal(c, PoolDoor::kTls, c.expires, false, {}).find("expired at"),
            std::string::npos);
  EXPECT_EQ(CredentialRefusal(c, PoolDoor::kTls, c.expires - 1, false, {}), "");
  EXPECT_NE(CredentialRefusal(c, PoolDoor::kTls, kNow, true, {}).find("was revoked"),
            std::string::npos);
}

// A glide-in's credential lasts while its grid job is an Idle or Running glide-in: removing,
// holding or finishing the glide-in revokes it.
TEST(CredentialRefusal, AGlideinsCredentialFollowsItsGridJob) {
  auto c = Claims(CredentialKind::kGlidein);
  auto with = [&](GlideinJobView v) {
    return CredentialRefusal(c, PoolDoor::kTls, kNow, false, v);
  };
  EXPECT_EQ(with({.found = true, .is_glidein = true, .status = kIdle}), "");
  EXPECT_EQ(with({.found = true, .is_glidein = true, .status = kRunning}), "");
  for (int status : {kRemoved, kHeld, kCompleted, kSuspended}) {
    std::string why = with({.found = true, .is_glidein = true, .status = status});
    EXPECT_NE(why.find("kite glidein rm"), std::string::npos) << status << ": " << why;
  }
  EXPECT_NE(with({}).find("is not in the queue"), std::string::npos);
  EXPECT_NE(with({.found = true, .is_glidein = false, .status = kRunning}).find("not a glide-in"),
            std::string::npos);
}

TEST(SlotAllowed, OnlyItsOwnNumberedSlots) {
  auto c = Claims(CredentialKind::kGlidein);
  EXPECT_TRUE(SlotAllowed(c, "slot1@glidein-12.0"));
  EXPECT_TRUE(SlotAllowed(c, "slot2@glidein-12.0"));
  for (std::string bad : {"slot3@glidein-12.0", "slot0@glidein-12.0", "slot01@glidein-12.0",
                          "slot1@glidein-12.1", "slot1@glidein-12.0x", "slot@glidein-12.0",
                          "slot-1@glidein-12.0", "slot1", "xslot1@glidein-12.0", ""}) {
    EXPECT_FALSE(SlotAllowed(c, bad)) << bad;
  }
}

class PoolAuthorityTest : public ::testing::Test {
 protected:
  kite::testing::TempDir tmp_{"pool-authority"};
  std::string dir_ = tmp_.path() + "/pool";
  double now_ = kNow;
  std::unique_ptr<PoolAuthority> Open() {
    auto a = PoolAuthority::Open(dir_, [this] { return now_; });
    EXPECT_TRUE(a) << a.error().ToString();
    return a ? std::move(*a) : nullptr;
  }
};

TEST_F(PoolAuthorityTest, TheKeyIsPrivateAndOnlyItsOwnCredentialsVerify) {
  auto a = Open();
  ASSERT_TRUE(a);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/signing.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string text = a->Issue(Claims(CredentialKind::kStartd));
  auto claims = a->Verify(text);
  ASSERT_TRUE(claims) << claims.error().ToString();
  EXPECT_EQ(claims->issued, static_cast<int64_t>(kNow));
  EXPECT_EQ(claims->id.size(), 32u);
  EXPECT_NE(claims->id, std::string(32, 'a')) << "each credential gets a fresh id";
  // The same agent after a restart still accepts it; another agent (another key) does not.
  EXPECT_TRUE(Open()->Verify(text));
  kite::testing::TempDir other{"pool-authority-other"};
  auto b = PoolAuthority::Open(other.path() + "/pool", [] { return kNow; });
  ASSERT_TRUE(b);
  auto refused = (*b)->Verify(text);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kAuthFailed);
}

TEST_F(PoolAuthorityTest, AKeyReadableByOthersIsRefused) {
  ASSERT_TRUE(Open());
  ASSERT_EQ(::chmod((dir_ + "/signing.key").c_str(), 0644), 0);
  auto a = PoolAuthority::Open(dir_, [] { return kNow; });
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message().find("must be private"), std::string::npos) << a.error().message();
}

TEST_F(PoolAuthorityTest, RevocationIsDurable) {
  auto a = Open();
  auto claims = a->Verify(a->Issue(Claims(CredentialKind::kStartd)));
  ASSERT_TRUE(claims);
  EXPECT_FALSE(a->IsRevoked(claims->id));
  ASSERT_TRUE(a->Revoke(claims->id));
  EXPECT_TRUE(a->IsRevoked(claims->id));
  EXPECT_TRUE(Open()->IsRevoked(claims->id)) << "a restarted agent still refuses it";
  auto bad = a->Revoke("not-an-id");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidInput);
}

TEST_F(PoolAuthorityTest, GlideinCredentialsAreWrittenPrivatelyOnePerGlidein) {
  auto a = Open();
  std::string out = tmp_.path() + "/glidein";
  ASSERT_TRUE(IssueGlideinCredentials(*a, 42, 3, 4, 7200, out));
  for (int proc = 0; proc < 3; ++proc) {
    std::string path = out + "/42." + std::to_string(proc) + ".credential";
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto text = ReadFile(path);
    ASSERT_TRUE(text);
    auto c = a->Verify(*text);
    ASSERT_TRUE(c) << c.error().ToString();
    EXPECT_EQ(c->kind, CredentialKind::kGlidein);
    EXPECT_EQ(c->job, "42." + std::to_string(proc));
    EXPECT_EQ(c->name, "glidein-42." + std::to_string(proc));
    EXPECT_EQ(c->slots, 4);
    // Its lifetime, the walltime margin, and the time it may wait in a batch queue.
    EXPECT_EQ(c->expires, static_cast<int64_t>(kNow + kGlideinQueueAllowance + 7200 + 300));
  }
  // No end asked for: the open lifetime.
  ASSERT_TRUE(IssueGlideinCredentials(*a, 43, 1, 1, 0, out));
  auto c = a->Verify(*ReadFile(out + "/43.0.credential"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->expires, static_cast<int64_t>(kNow + kOpenCredentialLifetime));
  EXPECT_FALSE(IssueGlideinCredentials(*a, 44, 1, 0, 60, out));
  EXPECT_FALSE(IssueGlideinCredentials(*a, 44, 1, 2000, 60, out));
}

}  // namespace
}  // namespace kite::agent
