// The pool's framed link over a real socket pair: frames arrive whole and in order however the
// bytes are cut, the write queue reports each frame and its end, a paused link holds frames, and
// a bad frame, a peer that hangs up, or Close() end it as the handlers promise.
#include "pool/link.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <thread>

namespace kite::pool {
namespace {

using Socket = boost::asio::local::stream_protocol::socket;

Message Output(const std::string& path, uint64_t offset) {
  Message m;
  m.type = MsgType::kOutput;
  m.job = "7.0";
  m.run = "r";
  m.path = path;
  m.offset = offset;
  return m;
}

struct Ends {
  boost::asio::io_context io;
  Socket a{io}, b{io};
  std::vector<Frame> got_a, got_b;
  std::vector<std::string> closed_a, closed_b;
  int sent_a = 0, drained_a = 0;
  std::shared_ptr<Link> la, lb;

  Ends() {
    boost::asio::local::connect_pair(a, b);
    la = std::make_shared<Link>(
        std::make_unique<AsioByteStream<Socket>>(std::move(a)),
        Link::Handlers{.frame = [this](Frame f) { got_a.push_back(std::move(f)); },
                       .closed = [this](const Error& e) { closed_a.push_back(e.message()); },
                       .sent = [this] { ++sent_a; },
                       .drained = [this] { ++drained_a; }},
        "end b");
    lb = std::make_shared<Link>(
        std::make_unique<AsioByteStream<Socket>>(std::move(b)),
        Link::Handlers{.frame = [this](Frame f) { got_b.push_back(std::move(f)); },
                       .closed = [this](const Error& e) { closed_b.push_back(e.message()); }},
        "end a");
    la->Start();
    lb->Start();
  }
  // Runs the loop until `done` holds (or nothing is left to run).
  template <class F>
  void RunUntil(F done) {
    while (!done()) {
      if (io.run_one_for(std::chrono::seconds(5)) == 0) break;
    }
  }
};

TEST(PoolLink, FramesArriveWholeAndInOrderAndTheQueueReportsEachOne) {
  Ends e;
  // Bodies larger than one read (64 KiB) and smaller ones, so frames are cut across reads.
  std::vector<std::string> bodies = {std::string(kChunk, 'x'), "", "short",
                                     std::string(100000, 'y')};
  uint64_t offset = 0;
  for (size_t i = 0; i < bodies.size(); ++i) {
    e.la->Send(Output("f" + std::to_string(i), offset), bodies[i]);
    offset += bodies[i].size();
  }
  EXPECT_EQ(e.la->queued(), bodies.size());
  EXPECT_GT(e.la->queued_bytes(), kChunk + 100000);
  e.RunUntil([&] { return e.got_b.size() == bodies.size(); });
  ASSERT_EQ(e.got_b.size(), bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_EQ(e.got_b[i].msg.path, "f" + std::to_string(i));
    EXPECT_EQ(e.got_b[i].body, bodies[i]);
  }
  EXPECT_EQ(e.sent_a, 4);
  EXPECT_EQ(e.drained_a, 1);
  EXPECT_EQ(e.la->queued(), 0u);
  EXPECT_EQ(e.la->queued_bytes(), 0u);
  EXPECT_TRUE(e.closed_a.empty());
  EXPECT_TRUE(e.closed_b.empty());
}

TEST(PoolLink, APausedLinkHoldsItsFramesUntilResumed) {
  Ends e;
  e.lb->Pause();
  e.la->Send(Output("one", 0), "1");
  e.la->Send(Output("two", 1), "2");
  e.RunUntil([&] { return e.drained_a == 1; });
  // Both frames are written; the paused end hands none over.
  for (int i = 0; i < 20 && e.io.poll_one() > 0; ++i) {
  }
  EXPECT_TRUE(e.got_b.empty());
  e.lb->Resume();
  e.RunUntil([&] { return e.got_b.size() == 2; });
  ASSERT_EQ(e.got_b.size(), 2u);
  EXPECT_EQ(e.got_b[0].msg.path, "one");
  EXPECT_EQ(e.got_b[1].msg.path, "two");
}

TEST(PoolLink, AMalformedFrameEndsTheLinkWithAReasonAndNothingMoreIsHandedOver) {
  boost::asio::io_context io;
  Socket a(io), b(io);
  boost::asio::local::connect_pair(a, b);
  std::vector<Frame> got;
  std::vector<std::string> closed;
  auto link = std::make_shared<Link>(
      std::make_unique<AsioByteStream<Socket>>(std::move(b)),
      Link::Handlers{.frame = [&](Frame f) { got.push_back(std::move(f)); },
                     .closed = [&](const Error& err) { closed.push_back(err.message()); }},
      "the startd");
  link->Start();
  // One good frame, then bytes that are no frame at all, then another good frame.
  std::string bytes = EncodeFrame(Output("good", 0), "g") + "this is not a frame\n" +
                      EncodeFrame(Output("after", 1), "a");
  boost::asio::write(a, boost::asio::buffer(bytes));
  while (closed.empty() && io.run_one_for(std::chrono::seconds(5)) > 0) {
  }
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_NE(closed[0].find("a frame from the startd"), std::string::npos) << closed[0];
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].msg.path, "good");
  EXPECT_TRUE(link->is_closed());
  link->Send(Output("ignored", 0), "x");  // a closed link takes nothing
  EXPECT_EQ(link->queued(), 0u);
}

TEST(PoolLink, APeerThatHangsUpIsReportedOnce) {
  Ends e;
  e.lb->Close();
  e.RunUntil([&] { return !e.closed_a.empty(); });
  ASSERT_EQ(e.closed_a.size(), 1u);
  EXPECT_EQ(e.closed_a[0], "end b closed the connection");
  // Close() is the owner's own doing: no handler of the closed end ran.
  EXPECT_TRUE(e.closed_b.empty());
  EXPECT_TRUE(e.la->is_closed());
}

TEST(PoolLink, AfterCloseNoHandlerRuns) {
  Ends e;
  e.la->Send(Output("late", 0), std::string(kChunk, 'z'));
  e.la->Close();
  e.RunUntil([] { return false; });
  EXPECT_EQ(e.sent_a, 0);
  EXPECT_EQ(e.drained_a, 0);
  EXPECT_TRUE(e.closed_a.empty());
  EXPECT_TRUE(e.got_a.empty());
}

TEST(PoolLink, CloseWhenSentWritesWhatWasQueuedThenHangsUp) {
  Ends e;
  Message refuse{.type = MsgType::kRefuse, .reason = "its credential was revoked"};
  e.la->Send(Output("big", 0), std::string(4 * kChunk, 'q'));
  e.la->Send(refuse);
  e.la->CloseWhenSent();
  EXPECT_FALSE(e.la->is_closed());  // two frames still to write
  e.RunUntil([&] { return !e.closed_b.empty(); });
  ASSERT_EQ(e.got_b.size(), 2u);
  EXPECT_EQ(e.got_b[0].body.size(), 4 * kChunk);
  EXPECT_EQ(e.got_b[1].msg, refuse);
  ASSERT_EQ(e.closed_b.size(), 1u);
  EXPECT_EQ(e.closed_b[0], "end a closed the connection");
  EXPECT_TRUE(e.la->is_closed());
  EXPECT_TRUE(e.closed_a.empty());  // its own doing
  // With nothing queued it closes at once.
  Ends f;
  f.la->CloseWhenSent();
  EXPECT_TRUE(f.la->is_closed());
}

TEST(PoolLink, HeardAtMovesWhenBytesArrive) {
  Ends e;
  double started = e.lb->heard_at();
  EXPECT_GT(started, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  e.la->Send(Output("ping", 0), "");
  e.RunUntil([&] { return e.got_b.size() == 1; });
  EXPECT_GE(e.lb->heard_at() - started, 0.015);
}

}  // namespace
}  // namespace kite::pool
