// Real transfers over mutual TLS on loopback: stage-in, ranged reads, offset writes, resumed
// downloads, kept-alive connections, several threads at once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "gass/protocol.h"
#include "gass_world.h"

namespace kite::gass {
namespace {

using testing::GassWorld;
using testing::ReadAll;

struct Transfer : ::testing::Test {
  void SetUp() override { w = GassWorld::Make(); }
  std::unique_ptr<GassWorld> w;
};

TEST_F(Transfer, StageInOf100MiBIsByteIdentical) {
  std::string src = w->dir / "input.dat";
  {
    std::ofstream out(src, std::ios::binary);
    for (int i = 0; i < 100; ++i) out << testing::RandomBytes(1 << 20, i);
  }
  ASSERT_TRUE(w->server->AddJob("job1", w->jane_dn, {{"input.dat", src}}, {}));
  GassClient client = w->Client(w->jane_proxy);
  std::string dst = w->dir / "staged.dat";
  auto size = client.Get(MakeTarget("job1", "input.dat"), dst);
  ASSERT_TRUE(size) << size.error().ToString();
  EXPECT_EQ(*size, 100u << 20);
  EXPECT_EQ(std::filesystem::file_size(dst), 100u << 20);
  EXPECT_EQ(testing::Sha256OfFile(dst), testing::Sha256OfFile(src));
}

TEST_F(Transfer, RangedReadsAndSize) {
  std::string data = testing::RandomBytes(1 << 20);
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {{"f", w->File("f", data)}}, {}));
  GassClient c = w->Client(w->jane_proxy);
  std::string f = MakeTarget("j", "f");
  EXPECT_EQ(*c.Size(f), data.size());
  EXPECT_EQ(*c.GetRange(f, 0, 10), data.substr(0, 10));
  EXPECT_EQ(*c.GetRange(f, 12345, 300000), data.substr(12345, 300000));
  EXPECT_EQ(*c.GetRange(f, data.size() - 5, 100), data.substr(data.size() - 5));  // short at end
  EXPECT_EQ(*c.GetRange(f, data.size(), 10), "");                                 // at the end
  EXPECT_EQ(*c.GetRange(f, data.size() + 100, 1), "");
  EXPECT_EQ(*c.GetRange(f, 7, 0), "");

  auto suffix = w->Raw("GET /jobs/j/f HTTP/1.1\r\nHost: x\r\nRange: bytes=-4\r\n\r\n");
  EXPECT_EQ(suffix.status, 206);
  EXPECT_EQ(suffix.body, data.substr(data.size() - 4));
  EXPECT_EQ(suffix.headers["content-range"], "bytes 1048572-1048575/1048576");
  auto head = w->Raw("HEAD /jobs/j/f HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers["content-length"], "1048576");
  EXPECT_EQ(head.headers["accept-ranges"], "bytes");
  auto past = w->Raw("GET /jobs/j/f HTTP/1.1\r\nHost: x\r\nRange: bytes=2000000-\r\n\r\n");
  EXPECT_EQ(past.status, 416);
  EXPECT_EQ(past.headers["content-range"], "bytes */1048576");
}

TEST_F(Transfer, OffsetWritesOutOfOrderAndRepeatedLeaveOneCopy) {
  std::string out = w->dir / "stdout";
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {}, {{"stdout", out}}));
  GassClient c = w->Client(w->jane_proxy);
  std::string t = MakeTarget("j", "stdout");
  auto later = c.PutAt(t, 6, "world\n");  // the second chunk arrives first
  ASSERT_TRUE(later) << later.error().ToString();
  EXPECT_EQ(*later, 12u);
  EXPECT_EQ(ReadAll(out), std::string(6, '\0') + "world\n");
  EXPECT_EQ(*c.PutAt(t, 0, "hello "), 12u);
  EXPECT_EQ(*c.PutAt(t, 0, "hello "), 12u);   // a resend after a lost reply
  EXPECT_EQ(*c.PutAt(t, 6, "world\n"), 12u);  // and another
  EXPECT_EQ(ReadAll(out), "hello world\n");
  EXPECT_EQ(*c.PutAt(t, 12, "more\n"), 17u);
  EXPECT_EQ(ReadAll(out), "hello world\nmore\n");
  EXPECT_EQ(*c.Truncate(t, 5), 5u);  // a rerun's output was shorter
  EXPECT_EQ(ReadAll(out), "hello");
  EXPECT_EQ(*c.PutAt(t, 0, ""), 5u);  // an empty write changes nothing
  std::string big = testing::RandomBytes(kMaxPutBody, 3);
  EXPECT_EQ(*c.PutAt(t, 0, big), kMaxPutBody);
  EXPECT_EQ(ReadAll(out), big);
  EXPECT_EQ(c.connections(), 1u);
}

TEST_F(Transfer, PartialDownloadResumesFromTheLocalSize) {
  std::string data = testing::RandomBytes(3 << 20, 9);
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {{"in", w->File("src", data)}}, {}));
  GassClient c = w->Client(w->jane_proxy);
  // The local prefix is marked: if the client fetched it again, the marks would be gone.
  std::string local = w->dir / "local";
  std::string prefix(1000000, 'X');
  testing::WriteAll(local, prefix);
  auto size = c.Get(MakeTarget("j", "in"), local);
  ASSERT_TRUE(size) << size.error().ToString();
  EXPECT_EQ(*size, data.size());
  EXPECT_EQ(ReadAll(local), prefix + data.substr(prefix.size()));

  testing::WriteAll(local, data.substr(0, 777));  // an honest partial file
  ASSERT_TRUE(c.Get(MakeTarget("j", "in"), local));
  EXPECT_EQ(ReadAll(local), data);
  ASSERT_TRUE(c.Get(MakeTarget("j", "in"), local));  // complete already: unchanged
  EXPECT_EQ(ReadAll(local), data);
  testing::WriteAll(local, data + "stale tail");  // longer than the remote: fetched again
  ASSERT_TRUE(c.Get(MakeTarget("j", "in"), local));
  EXPECT_EQ(ReadAll(local), data);
}

TEST_F(Transfer, EmptyFilesTravel) {
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {{"e", w->File("e", "")}}, {}));
  GassClient c = w->Client(w->jane_proxy);
  std::string local = w->dir / "got";
  testing::WriteAll(local, "old");
  EXPECT_EQ(*c.Get(MakeTarget("j", "e"), local), 0u);
  EXPECT_EQ(ReadAll(local), "");
  EXPECT_EQ(*c.Size(MakeTarget("j", "e")), 0u);
  EXPECT_EQ(*c.GetRange(MakeTarget("j", "e"), 0, 10), "");
}

TEST_F(Transfer, FilesBeneathATreeMakeTheirFolders) {
  std::filesystem::path out = w->dir / "results";
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {}, {{"output/results", out, true}}));
  GassClient c = w->Client(w->jane_proxy);
  EXPECT_EQ(*c.PutAt(MakeTarget("j", "output/results/a.txt"), 0, "a\n"), 2u);
  EXPECT_EQ(*c.PutAt(MakeTarget("j", "output/results/sub/deeper/c.txt"), 0, "c\n"), 2u);
  EXPECT_EQ(ReadAll(out / "a.txt"), "a\n");
  EXPECT_EQ(ReadAll(out / "sub/deeper/c.txt"), "c\n");
  EXPECT_EQ(*c.Size(MakeTarget("j", "output/results/sub/deeper/c.txt")), 2u);  // a writer's HEAD
  EXPECT_EQ(*c.Truncate(MakeTarget("j", "output/results/a.txt"), 1), 1u);
  EXPECT_EQ(ReadAll(out / "a.txt"), "a");
  // Empty folders, the tree's own included, are made on request; twice is the same as once.
  std::filesystem::remove_all(out);
  ASSERT_TRUE(c.MakeFolder(MakeTarget("j", "output/results")));
  EXPECT_TRUE(std::filesystem::is_directory(out));
  ASSERT_TRUE(c.MakeFolder(MakeTarget("j", "output/results/x/empty")));
  ASSERT_TRUE(c.MakeFolder(MakeTarget("j", "output/results/x/empty")));
  EXPECT_TRUE(std::filesystem::is_directory(out / "x/empty"));
}

TEST_F(Transfer, OneConnectionServesManyRequests) {
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {{"f", w->File("f", "0123456789")}}, {}));
  GassClient c = w->Client(w->jane_proxy);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(*c.GetRange(MakeTarget("j", "f"), i % 10, 1), std::string(1, char('0' + i % 10)));
  }
  EXPECT_EQ(c.connections(), 1u);
  EXPECT_EQ(w->server->stats().connections, 1u);
  EXPECT_GE(w->server->stats().requests, 50u);
}

TEST_F(Transfer, SeveralClientsOnSeveralThreadsWriteOneFile) {
  std::string out = w->dir / "shared";
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {{"shared", out}}, {{"shared", out}}));
  std::string want = testing::RandomBytes(4 * 40 * 1000, 5);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      GassClient c = w->Client(w->jane_proxy);
      for (int i = 0; i < 40; ++i) {
        uint64_t off = static_cast<uint64_t>((i * 4 + t) * 1000);
        if (!c.PutAt(MakeTarget("j", "shared"), off, std::string_view(want).substr(off, 1000))) {
          ++failures;
        }
        if (!c.GetRange(MakeTarget("j", "shared"), off, 1000)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(ReadAll(out), want);
}

TEST_F(Transfer, AProxyDelegatedFromAProxyIsStillTheUser) {
  auto deeper = credentials::CreateProxy(w->jane_proxy, {});
  ASSERT_TRUE(deeper);
  ASSERT_TRUE(w->server->AddJob("j", w->jane_dn, {{"f", w->File("f", "abc")}}, {}));
  GassClient c = w->Client(deeper->credential);
  EXPECT_EQ(*c.GetRange(MakeTarget("j", "f"), 0, 3), "abc");
  GassClient direct = w->Client(w->jane);  // and the user certificate itself
  EXPECT_EQ(*direct.GetRange(MakeTarget("j", "f"), 0, 3), "abc");
}

}  // namespace
}  // namespace kite::gass
