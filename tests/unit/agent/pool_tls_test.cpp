// Who may offer slots over the pool's TLS listener: the user's own identity, or one that
// [pool] allow_identities names, compared whole.
#include "agent/pool_tls.h"

#include <gtest/gtest.h>

namespace kite::agent {
namespace {

TEST(PoolPeerRefusal, TheUsersOwnIdentityAndTheAllowedOnesOnly) {
  const std::string jane = "/O=Grid/OU=Kite/CN=Jane Doe";
  const std::vector<std::string> allowed = {"/O=Grid/OU=Kite/CN=Robot"};
  struct Case {
    std::string peer;
    bool accepted;
  } cases[] = {
      {jane, true},
      {"/O=Grid/OU=Kite/CN=Robot", true},
      {"/O=Grid/OU=Kite/CN=John Doe", false},
      {jane + "/CN=123", false},  // a proxy's own subject is not an identity
      {"/O=Grid/OU=Kite/CN=Jane", false},
      {"", false},
  };
  for (const auto& c : cases) {
    std::string why = PoolPeerRefusal(c.peer, jane, allowed);
    EXPECT_EQ(why.empty(), c.accepted) << c.peer << ": " << why;
    if (!c.accepted) {
      EXPECT_EQ(why, "its identity " + c.peer + " is neither this user's (" + jane +
                         ") nor in [pool] allow_identities");
    }
  }
  // Without an own identity nothing but the allowed list lets anyone in.
  EXPECT_FALSE(PoolPeerRefusal("", "", {}).empty());
}

}  // namespace
}  // namespace kite::agent
