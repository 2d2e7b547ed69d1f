// The paths a job with want_remote_io reaches through the shadow, from its ad.
#include "rsc/roots.h"

#include <gtest/gtest.h>

#include "classad/io.h"

namespace kite::rsc {
namespace {

TEST(RemoteRoots, IwdNamedFilesAbsoluteArgumentsAndRemoteIoPathsButNoSystemPaths) {
  auto ad = classad::ParseOldAd(
      "Iwd = \"/home/me/run\"\nIn = \"/home/me/run/in.txt\"\nOut = \"/home/me/results/out\"\n"
      "Err = \"/dev/null\"\n"
      "Arguments = \"/home/me/data/big.h5 '/home/me/x y' -v /etc/hosts rel\"\n"
      "RemoteIOPaths = \"/scratch/me, extra ../shared /usr/share\"\n");
  ASSERT_TRUE(ad) << ad.error().message();
  EXPECT_EQ(RemoteRoots(*ad),
            (std::vector<std::string>{"/home/me/run", "/home/me/results/out", "/scratch/me",
                                      "/home/me/shared", "/home/me/data/big.h5", "/home/me/x"}));
}

// The old syntax's arguments (Args, as `arguments = /a /b` without quotes gives) are read too.
TEST(RemoteRoots, AbsolutePathsInTheOldArgumentsSyntax) {
  auto ad = classad::ParseOldAd(
      "Iwd = \"/home/me/run\"\nArgs = \"-i /home/me/data/in.h5 -o /home/me/out.h5 /etc/passwd\"\n");
  ASSERT_TRUE(ad) << ad.error().message();
  EXPECT_EQ(RemoteRoots(*ad),
            (std::vector<std::string>{"/home/me/run", "/home/me/data/in.h5", "/home/me/out.h5"}));
}

TEST(RemoteRoots, NormalPathsFoldDotsAndNeverClimbAboveTheTop) {
  EXPECT_EQ(NormalPath("/a/b", "c/./d/../e"), "/a/b/c/e");
  EXPECT_EQ(NormalPath("/a", "/x//y/"), "/x/y");
  EXPECT_EQ(NormalPath("/a", ".."), "/");
  EXPECT_EQ(NormalPath("/", "../x"), "");
  EXPECT_TRUE(IsSystemPath("/usr/lib/x"));
  EXPECT_TRUE(IsSystemPath("/"));
  EXPECT_FALSE(IsSystemPath("/usrx"));
  EXPECT_FALSE(IsSystemPath("/home/me"));
}

}  // namespace
}  // namespace kite::rsc
