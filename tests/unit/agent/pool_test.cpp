// The agent's pool (agent/pool.h) with a real queue file and a fake startd on a socket pair: a
// run's whole life, and the agent killed (nothing uncommitted kept) at every state of a run — the
// job runs exactly once, and its start and end are counted once.
#include "agent/pool.h"

#include <gtest/gtest.h>

#include <boost/asio/local/connect_pair.hpp>
#include <deque>
#include <fstream>
#include <memory>

#include "agent/userlog.h"
#include "common/clock.h"
#include "pool/link.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

using pool::Message;
using pool::MsgType;
using Socket = boost::asio::local::stream_protocol::socket;

constexpr const char* kStartd = "desk";

// What a startd keeps across the agent's restarts: the runs it holds.
struct FakeStartd {
  std::shared_ptr<pool::Link> link;
  std::deque<pool::Frame> frames;  // what the agent sent, not yet looked at
  bool closed = false;
};

struct PoolTest : ::testing::Test {
  void SetUp() override {
    std::filesystem::create_directories(dir / "work");
    std::ofstream(dir / "work/run.sh") << "#!/bin/sh\necho done\n";
    auto a = PoolAuthority::Open(dir / "pool", WallNow);
    ASSERT_TRUE(a) << a.error().message();
    authority = std::move(*a);
    credential = authority->Issue(pool::CredentialClaims{.kind = pool::CredentialKind::kLocal,
                                                         .name = kStartd,
                                                         .slots = 2,
                                                         .expires = 4'000'000'000});
    StartAgent();
  }
  void TearDown() override { Kill(); }

  // The agent starts: its queue from the file, its pool recovered from the queue.
  void StartAgent() {
    io = std::make_unique<boost::asio::io_context>();
    auto s = store::JobQueueStore::Open(dir / "queue.db");
    ASSERT_TRUE(s);
    store = std::move(*s);
    queue = std::make_unique<JobQueue>(store.get(), WallNow);
    queue->OnStatusChange([this](Job& j, bool leaving) {
      if (pool && j.universe == kUniverseVanilla) pool->OnStatus(j, leaving);
    });
    queue->OnFlushed([this] {
      if (pool) pool->OnFlushed();
    });
    ASSERT_TRUE(queue->Load());
    pool = std::make_unique<Pool>(*io, *queue, settings, dir / "spool", *authority,
                                  Pool::Hooks{[this] { dirty = true; },
                                              [this](Job& j) {
                                                ended.push_back(j.ad);
                                                queue->Retire(j);
                                              }});
    pool->Recover();
    ASSERT_TRUE(queue->Flush());
  }
  // kill -9: whatever the queue has not committed is gone, as is every connection.
  void Kill() {
    if (startd.link) startd.link->Close();
    startd.link.reset();
    if (pool) pool->Close();
    pool.reset();
    queue.reset();
    store.reset();
    io.reset();
    startd.frames.clear();
  }
  // A clean stop: everything committed first.
  void Stop() {
    Turn();
    ASSERT_TRUE(queue->Flush());
    Kill();
  }

  // The startd dials in and says hello, naming the runs it holds.
  void Connect(std::vector<pool::RunRef> runs = {}) {
    Socket a(*io), b(*io);
    boost::asio::local::connect_pair(a, b);
    pool->Adopt(std::make_unique<pool::AsioByteStream<Socket>>(std::move(a)),
                PoolPeer{.who = "test", .door = PoolDoor::kLocal});
    startd = FakeStartd{};
    startd.link = std::make_shared<pool::Link>(
        std::make_unique<pool::AsioByteStream<Socket>>(std::move(b)),
        pool::Link::Handlers{.frame = [this](pool::Frame f) { startd.frames.push_back(f); },
                             .closed = [this](const Error&) { startd.closed = true; }});
    startd.link->Start();
    Message hello{.type = MsgType::kHello, .name = kStartd, .credential = credential};
    for (int i = 1; i <= 2; ++i) {
      std::string slot = "slot" + std::to_string(i) + "@" + kStartd;
      hello.slots.push_back({slot, "[Name = \"" + slot +
                                       "\"; Start = true; Requirements = true; Cpus = 1; "
                                       "Memory = 1024; Disk = 1000000; OpSys = \"LINUX\"; "
                                       "Arch = \"X86_64\"; State = \"Unclaimed\"]"});
    }
    hello.runs = std::move(runs);
    startd.link->Send(hello);
    ASSERT_TRUE(Next(MsgType::kWelcome));
  }

  // The agent's turns (its commits as the agent makes them) for `seconds`.
  void Turn(double seconds = 0.05) {
    double until = SteadyNow() + seconds;
    do {
      if (io->stopped()) io->restart();  // it stops whenever it runs out of work
      io->run_for(std::chrono::milliseconds(5));
      if (dirty) {
        dirty = false;
        ASSERT_TRUE(queue->Flush());
      }
    } while (SteadyNow() < until);
  }
  // The next frame of `type` the agent sends the startd (others before it are dropped), within 5 s.
  std::optional<pool::Frame> Next(MsgType type) {
    double until = SteadyNow() + 5;
    while (SteadyNow() < until) {
      while (!startd.frames.empty()) {
        auto f = std::move(startd.frames.front());
        startd.frames.pop_front();
        if (f.msg.type == type) return f;
      }
      Turn(0.01);
    }
    ADD_FAILURE() << "the agent sent no " << pool::MsgTypeName(type);
    return std::nullopt;
  }
  // Whether the agent sends a frame of `type` within `seconds`.
  bool Sends(MsgType type, double seconds) {
    double until = SteadyNow() + seconds;
    while (SteadyNow() < until) {
      for (const auto& f : startd.frames)
        if (f.msg.type == type) return true;
      Turn(0.01);
    }
    return false;
  }
  void Say(Message m) {
    m.slot = run.slot;
    m.job = run.job;
    m.run = run.run;
    startd.link->Send(m);
    Turn();
  }

  JobKey Submit() {
    auto c = queue->NewCluster();
    EXPECT_TRUE(c);
    SubmitRequest r;
    r.cluster = *c;
    r.common = {{"Cmd", "\"run.sh\""},
                {"Iwd", "\"" + (dir / "work") + "\""},
                {"JobUniverse", "5"},
                {"JobStatus", "1"},
                {"ShouldTransferFiles", "\"YES\""},
                {"TransparentCheckpoint", "true"},
                {"Requirements", "true"}};
    r.procs.push_back({{"ProcId", "0"}});
    EXPECT_TRUE(queue->Submit(r));
    Turn();
    return {*c, 0};
  }
  // The startd is given the job: its activate, its input, go.
  void Placed() {
    auto a = Next(MsgType::kActivate);
    ASSERT_TRUE(a);
    run = pool::RunRef{a->msg.slot, a->msg.job, a->msg.run};
    ++activates;
    ASSERT_TRUE(Next(MsgType::kGo));
  }
  void Started() { Say(Message{.type = MsgType::kStarted}); }
  // A transparent checkpoint, its image in one piece; the agent's turns without its commit.
  void Checkpointed(const std::string& image) {
    Message piece{.type = MsgType::kOutput,
                  .slot = run.slot,
                  .job = run.job,
                  .run = run.run,
                  .path = "kite_ckpt.img",
                  .last = true,
                  .checkpoint = true,
                  .mode = 0600};
    startd.link->Send(piece, image);
    startd.link->Send(
        Message{.type = MsgType::kCheckpointed, .slot = run.slot, .job = run.job, .run = run.run});
    for (int i = 0; i < 20 && !dirty; ++i) {
      if (io->stopped()) io->restart();
      io->run_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(dirty);
  }
  // The job is vacated (kite vacate) and placed again: the files its next activate lists.
  std::vector<std::string> VacatedAndPlacedAgain() {
    Job* j = queue->Find(ParseJobIdString(run.job).value());
    EXPECT_TRUE(pool->VacateJob(*j, "test"));
    EXPECT_TRUE(Next(MsgType::kVacate));
    Say(Message{.type = MsgType::kVacated});
    auto a = Next(MsgType::kActivate);
    std::vector<std::string> files;
    if (a)
      for (const auto& f : a->msg.files) files.push_back(f.path);
    return files;
  }
  void Ended() {
    Message m{.type = MsgType::kEnded};
    m.usage.start = WallNow() - 1;
    m.usage.end = WallNow();
    Say(m);
  }
  // The job left the queue once, as Completed with exit 0, started once.
  void EndedOnce() {
    ASSERT_EQ(ended.size(), 1u);
    const auto& ad = ended[0];
    EXPECT_EQ(ad.EvaluateInt("JobStatus").value_or(0), kCompleted);
    EXPECT_EQ(ad.EvaluateInt("ExitCode").value_or(-1), 0);
    EXPECT_EQ(ad.EvaluateInt("NumJobStarts").value_or(0), 1);
    EXPECT_EQ(activates, 1) << "the job was given to a startd again";
  }
  const Job* Only() const {
    return queue->jobs().empty() ? nullptr : &queue->jobs().begin()->second;
  }

  kite::testing::TempDir dir{"pool-unit"};
  std::unique_ptr<PoolAuthority> authority;
  std::string credential;
  PoolSettings settings;
  std::unique_ptr<boost::asio::io_context> io;
  std::unique_ptr<store::JobQueueStore> store;
  std::unique_ptr<JobQueue> queue;
  std::unique_ptr<Pool> pool;
  bool dirty = false;
  FakeStartd startd;
  pool::RunRef run;
  int activates = 0;
  std::vector<classad::ClassAd> ended;
};

TEST_F(PoolTest, ARunsLifeEndsInAnAckAfterItsOutcomeIsCommitted) {
  Connect();
  Submit();
  Placed();
  EXPECT_EQ(Only()->status, kRunning);
  EXPECT_EQ(Only()->ad.EvaluateInt("NumJobStarts").value_or(0), 0);  // placed, not started
  Started();
  EXPECT_EQ(Only()->ad.EvaluateInt("NumJobStarts").value_or(0), 1);
  Ended();
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
  EXPECT_TRUE(queue->jobs().empty());
  // The run took a second, counted once (HTCondor's RemoteWallClockTime).
  EXPECT_NEAR(ended[0].EvaluateReal("RemoteWallClockTime").value_or(0), 1.0, 0.01);
  EXPECT_EQ(ended[0].EvaluateString("LastRemoteHost").value_or(""), "slot1@desk");
}

// Killed after the job was placed and its input sent, before the startd said anything: the
// startd names the run when it comes back, and it goes on.
TEST_F(PoolTest, KilledAfterThePlacementTheRunGoesOn) {
  Connect();
  Submit();
  Placed();
  Kill();
  StartAgent();
  EXPECT_EQ(Only()->status, kRunning);
  Connect({run});
  EXPECT_FALSE(Sends(MsgType::kActivate, 0.2));
  for (const auto& f : startd.frames) EXPECT_NE(f.msg.type, MsgType::kVacate);
  Started();
  Ended();
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
}

TEST_F(PoolTest, KilledWhileTheProgramRunsTheRunGoesOnAndItsStartCountsOnce) {
  Connect();
  Submit();
  Placed();
  Started();
  Kill();
  StartAgent();
  Connect({run});
  Started();  // a startd says it again at each welcome
  Ended();
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
}

// The startd said the run ended; the agent died before committing it: the job is still Running
// in the file, and the startd, never acked, says the end again.
TEST_F(PoolTest, KilledBeforeTheEndWasCommittedTheEndIsHeardAgain) {
  Connect();
  Submit();
  Placed();
  Started();
  dirty = false;
  Message m{.type = MsgType::kEnded, .slot = run.slot, .job = run.job, .run = run.run};
  m.usage.start = WallNow() - 1;
  m.usage.end = WallNow();
  startd.link->Send(m);
  // One turn of the agent's loop without its commit.
  for (int i = 0; i < 20 && ended.empty(); ++i) {
    if (io->stopped()) io->restart();
    io->run_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(ended.size(), 1u);  // retired in memory only
  ended.clear();
  Kill();
  StartAgent();
  ASSERT_NE(Only(), nullptr);
  EXPECT_EQ(Only()->status, kRunning);
  Connect({run});
  Ended();
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
}

// The end was committed but the startd never had the ack: it comes back with the run, which the
// agent no longer knows; the run is stopped and forgotten, never started again.
TEST_F(PoolTest, KilledBeforeTheAckTheJobIsNotRunAgain) {
  Connect();
  Submit();
  Placed();
  Started();
  Ended();
  ASSERT_EQ(ended.size(), 1u);
  Kill();  // the ack, if written, is not read
  StartAgent();
  EXPECT_TRUE(queue->jobs().empty());
  Connect({run});
  ASSERT_TRUE(Next(MsgType::kVacate));  // "the agent does not know this run"
  Ended();                              // as a startd says it once more
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
  EXPECT_FALSE(Sends(MsgType::kActivate, 0.2));
}

// Placed and committed, but the startd never had the activate (the agent died with it unsent):
// it comes back without the run, which is lost before it started; the job is placed again and
// its one start is counted once.
TEST_F(PoolTest, KilledBeforeTheActivateWentTheJobIsPlacedAgain) {
  Submit();
  Turn();
  ASSERT_EQ(Only()->status, kIdle);
  Connect();
  Placed();
  --activates;  // this startd's copy is lost with the agent below
  Kill();
  StartAgent();
  EXPECT_EQ(Only()->status, kRunning);
  Connect({});  // it holds nothing
  Placed();     // once lost, the job matches again
  Started();
  Ended();
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
}

// A checkpoint stored but not yet committed when the agent died is not the job's: its next run
// starts from the beginning, and what was stored goes with the next checkpoint.
TEST_F(PoolTest, KilledBeforeACheckpointWasCommittedTheJobStartsOver) {
  Connect();
  Submit();
  Placed();
  Started();
  Checkpointed("IMAGE");
  Kill();
  StartAgent();
  EXPECT_FALSE(Only()->ad.Lookup("NumCheckpoints"));
  Connect({run});
  EXPECT_EQ(VacatedAndPlacedAgain(), std::vector<std::string>{"run.sh"});
}

// Committed, but the startd never heard so: the job's next run, after the restart, restores it.
TEST_F(PoolTest, KilledAfterACheckpointWasCommittedTheJobResumesFromIt) {
  Connect();
  Submit();
  Placed();
  Started();
  Checkpointed("IMAGE");
  dirty = false;
  ASSERT_TRUE(queue->Flush());  // committed; the ack is queued but never read
  Kill();
  StartAgent();
  EXPECT_EQ(Only()->ad.EvaluateInt("NumCheckpoints").value_or(0), 1);
  Connect({run});
  EXPECT_EQ(VacatedAndPlacedAgain(), (std::vector<std::string>{"run.sh", "kite_ckpt.img"}));
}

// A clean stop while the program runs is a restart like any other: nothing is lost or run again.
TEST_F(PoolTest, ACleanStopWhileTheProgramRunsDoesNotRunItAgain) {
  Connect();
  Submit();
  Placed();
  Started();
  Stop();
  StartAgent();
  Connect({run});
  Ended();
  ASSERT_TRUE(Next(MsgType::kAck));
  EndedOnce();
}

// A startd that does not come back within the job's lease: the run is lost and the job runs
// again elsewhere; the startd that does come back later is told to stop it.
TEST_F(PoolTest, ARunWhoseStartdNeverComesBackIsLostWhenItsLeaseEnds) {
  Connect();
  auto key = Submit();
  queue->SetAttr(*queue->Find(key), "JobLeaseDuration", classad::MakeInteger(1));
  Placed();
  Started();
  Kill();
  StartAgent();
  EXPECT_EQ(Only()->status, kRunning);
  Turn(1.5);
  EXPECT_EQ(Only()->status, kIdle);
  EXPECT_EQ(Only()->ad.EvaluateInt("NumJobStarts").value_or(0), 1);
  auto old = run;
  Connect({old});
  ASSERT_TRUE(Next(MsgType::kVacate));
}

}  // namespace
}  // namespace kite::agent
