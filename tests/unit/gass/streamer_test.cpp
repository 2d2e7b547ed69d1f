// OutputStreamer: a growing file streamed in several pumps, resumed after a restart from a
// persisted offset, with no byte lost or doubled.
#include "gass/output_streamer.h"

#include <gtest/gtest.h>

#include "gass/protocol.h"
#include "gass_world.h"

namespace kite::gass {
namespace {

using testing::GassWorld;
using testing::ReadAll;

struct Streamer : ::testing::Test {
  void SetUp() override {
    w = GassWorld::Make();
    local = w->dir / "job.stdout";
    remote_file = w->dir / "received.stdout";
    ASSERT_TRUE(w->server->AddJob("J", w->jane_dn, {}, {{"stdout", remote_file}}));
  }
  void Append(const std::string& s) {
    std::ofstream out(local, std::ios::binary | std::ios::app);
    out << s;
  }
  std::unique_ptr<GassWorld> w;
  std::string local, remote_file;
  std::string target = MakeTarget("J", "stdout");
  OutputStreamerOptions small{.chunk_size = 1000};
};

TEST_F(Streamer, SendsAGrowingFileInSeveralPumps) {
  GassClient c = w->Client(w->jane_proxy);
  OutputStreamer s(c, local, target, 0, small);
  EXPECT_EQ(*s.Pump(), 0u);  // the job has not written yet: no file, nothing sent
  EXPECT_FALSE(std::filesystem::exists(remote_file));
  std::string all;
  for (int round = 0; round < 5; ++round) {
    std::string piece = testing::RandomBytes(1500 + round * 777, round);
    Append(piece);
    all += piece;
    auto acked = s.Pump();
    ASSERT_TRUE(acked) << acked.error().ToString();
    EXPECT_EQ(*acked, all.size());
    EXPECT_EQ(ReadAll(remote_file), all);
  }
  EXPECT_EQ(*s.Pump(), all.size());  // nothing new: nothing sent
  EXPECT_EQ(c.connections(), 1u);
}

TEST_F(Streamer, ARestartResumesFromThePersistedOffsetWithoutLossOrDuplication) {
  GassClient c = w->Client(w->jane_proxy);
  std::string first = testing::RandomBytes(2500, 1);
  Append(first);
  uint64_t persisted = 0;
  {
    OutputStreamer s(c, local, target, 0, small);
    persisted = *s.Pump();
    ASSERT_EQ(persisted, first.size());
    std::string second = testing::RandomBytes(3100, 2);
    Append(second);
    ASSERT_EQ(*s.Pump(), first.size() + second.size());
    // ...and the job manager dies before it persists this second offset.
  }
  std::string third = testing::RandomBytes(900, 3);
  Append(third);
  // Mark the first remote byte: a restart that resent from zero instead of the persisted
  // offset would overwrite the mark.
  std::string received = ReadAll(remote_file);
  testing::WriteAll(remote_file, "#" + received.substr(1));
  GassClient fresh = w->Client(w->jane_proxy);  // a restarted job manager
  OutputStreamer s(fresh, local, target, persisted, small);
  auto acked = s.Pump();
  ASSERT_TRUE(acked) << acked.error().ToString();
  std::string want = ReadAll(local);
  EXPECT_EQ(*acked, want.size());
  // The resent middle overwrote itself; the part before the persisted offset was not resent.
  EXPECT_EQ(ReadAll(remote_file), "#" + want.substr(1));
  EXPECT_EQ(*s.Finish(), want.size());
  EXPECT_EQ(ReadAll(remote_file).substr(1), want.substr(1));
}

TEST_F(Streamer, ARemoteThatLostDataGetsItAgain) {
  GassClient c = w->Client(w->jane_proxy);
  Append("line one\nline two\n");
  uint64_t persisted = *OutputStreamer(c, local, target).Pump();
  std::filesystem::remove(remote_file);  // the submit side lost the file
  OutputStreamer s(c, local, target, persisted);
  EXPECT_EQ(*s.Pump(), persisted);
  EXPECT_EQ(ReadAll(remote_file), "line one\nline two\n");
}

TEST_F(Streamer, ARerunWithShorterOutputEndsIdentical) {
  GassClient c = w->Client(w->jane_proxy);
  Append(std::string(5000, 'a'));
  OutputStreamer s(c, local, target, 0, small);
  ASSERT_EQ(*s.Pump(), 5000u);
  testing::WriteAll(local, "rerun\n");  // the job started over
  EXPECT_EQ(*s.Pump(), 6u);
  EXPECT_EQ(ReadAll(remote_file), "rerun\n");
  Append("more\n");
  EXPECT_EQ(*s.Finish(), 11u);
  EXPECT_EQ(ReadAll(remote_file), "rerun\nmore\n");
}

TEST_F(Streamer, ErrorsKeepTheOffsetReached) {
  GassClient bob = w->Client(w->bob);
  Append("secret output");
  OutputStreamer s(bob, local, target);
  auto r = s.Pump();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kAuthFailed);
  EXPECT_EQ(s.acknowledged(), 0u);
  EXPECT_FALSE(std::filesystem::exists(remote_file));
}

}  // namespace
}  // namespace kite::gass
