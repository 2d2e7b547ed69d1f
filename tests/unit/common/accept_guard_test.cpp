// The accept loop's guards: per-peer slots, pauses after resource errors, long socket paths.
#include "common/accept_guard.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <filesystem>

#include "common/unix_socket_path.h"
#include "tests/fixtures/temp_dir.h"

namespace kite {
namespace {

TEST(PeerLimit, EachPeerGetsItsCapAndSlotsComeBack) {
  PeerLimit limit(2);
  auto a1 = limit.Admit("10.0.0.1");
  auto a2 = limit.Admit("10.0.0.1");
  EXPECT_TRUE(a1);
  EXPECT_TRUE(a2);
  EXPECT_FALSE(limit.Admit("10.0.0.1"));  // at its cap
  EXPECT_TRUE(limit.Admit("10.0.0.2"));   // another peer is not affected
  EXPECT_EQ(limit.open("10.0.0.1"), 2u);
  a1.reset();
  EXPECT_EQ(limit.open("10.0.0.1"), 1u);
  EXPECT_TRUE(limit.Admit("10.0.0.1"));
}

TEST(PeerLimit, ASlotMayOutliveItsLimit) {
  PeerLimit::Slot slot;
  {
    PeerLimit limit(1);
    slot = limit.Admit("p");
  }
  slot.reset();  // must not touch freed memory (ASan says)
}

TEST(PeerLimit, ZeroMeansNoLimit) {
  PeerLimit limit(0);
  std::vector<PeerLimit::Slot> slots;
  for (int i = 0; i < 1000; ++i) slots.push_back(limit.Admit("p"));
  for (auto& s : slots) EXPECT_TRUE(s);
}

TEST(AcceptPacer, ResourceErrorsPauseLongerEachTimeOthersDoNot) {
  AcceptPacer pacer("test");
  auto emfile = boost::system::error_code(EMFILE, boost::system::system_category());
  auto enfile = boost::system::error_code(ENFILE, boost::system::system_category());
  auto reset = boost::asio::error::connection_aborted;
  EXPECT_EQ(pacer.Failed(reset).count(), 0);
  EXPECT_EQ(pacer.Failed(emfile), AcceptPacer::kFirstPause);
  EXPECT_EQ(pacer.Failed(enfile), AcceptPacer::kFirstPause * 2);
  for (int i = 0; i < 20; ++i) pacer.Failed(emfile);
  EXPECT_EQ(pacer.Failed(emfile), AcceptPacer::kLongestPause);
  pacer.Succeeded();
  EXPECT_EQ(pacer.Failed(emfile), AcceptPacer::kFirstPause);
}

TEST(OpenFileLimit, RaisedToTheHardLimit) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  size_t now = RaiseOpenFileLimit();
  EXPECT_GE(now, before.rlim_cur);
  rlimit after{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, after.rlim_max);
}

// Binds at `path` through UnixSocketPath and connects to it the same way.
void BindAndConnect(const std::string& path) {
  auto bind_addr = UnixSocketPath::For(path);
  ASSERT_TRUE(bind_addr) << bind_addr.error().message();
  int server = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  ASSERT_LT(bind_addr->address().size(), sizeof sa.sun_path);
  std::strcpy(sa.sun_path, bind_addr->address().c_str());
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
  ASSERT_EQ(::listen(server, 1), 0);
  EXPECT_TRUE(std::filesystem::exists(path));  // the socket is where it was asked to be
  auto connect_addr = UnixSocketPath::For(path);
  ASSERT_TRUE(connect_addr);
  int client = ::socket(AF_UNIX, SOCK_STREAM, 0);
  std::strcpy(sa.sun_path, connect_addr->address().c_str());
  EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
  ::close(client);
  ::close(server);
}

TEST(UnixSocketPath, ShortPathsAreUsedAsTheyAre) {
  testing::TempDir dir("sock");
  auto a = UnixSocketPath::For(dir / "a.sock");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->address(), dir / "a.sock");
  BindAndConnect(dir / "a.sock");
}

TEST(UnixSocketPath, PathsLongerThanSunPathStillWork) {
  testing::TempDir dir("sock");
  std::string deep = dir.path();
  while (deep.size() < 180) deep += "/a-rather-long-directory-name";
  std::filesystem::create_directories(deep);
  std::string path = deep + "/agent.sock";
  ASSERT_GT(path.size(), sizeof(sockaddr_un{}.sun_path));
  BindAndConnect(path);
}

TEST(UnixSocketPath, AMissingDirectoryIsAnErrorNotACrash) {
  std::string path = "/nonexistent" + std::string(200, 'x') + "/agent.sock";
  auto a = UnixSocketPath::For(path);
  EXPECT_FALSE(a);
}

}  // namespace
}  // namespace kite
