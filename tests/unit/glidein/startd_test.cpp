// The whole startd, in this process on its own thread, against a fake agent: a Unix socket
// server in the test speaking the pool protocol's frames. Jobs run for real under kite-exec.
#include "glidein/startd.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "classad/io.h"
#include "common/files.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::glidein {
namespace {

namespace fs = std::filesystem;
using pool::Message;
using pool::MsgType;

// The agent's side of one connection at a time, with blocking reads bounded by a timeout.
class FakeAgent {
 public:
  explicit FakeAgent(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
  }
  ~FakeAgent() {
    Drop();
    ::close(fd_);
  }
  bool Accept(int timeout_ms = 10000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return false;
    conn_ = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    reader_ = pool::FrameReader();
    return conn_ >= 0;
  }
  void Drop() {
    if (conn_ >= 0) ::close(conn_);
    conn_ = -1;
  }
  void Send(const Message& m, std::string_view body = {}) {
    std::string f = pool::EncodeFrame(m, body);
    ASSERT_EQ(::write(conn_, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  }
  // The next frame, or nullopt on timeout or end of stream.
  std::optional<pool::Frame> Next(int timeout_ms = 10000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      auto f = reader_.Next();
      EXPECT_TRUE(f) << f.error().ToString();
      if (!f) return std::nullopt;
      if (*f) return std::move(**f);
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      pollfd p{conn_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, left) != 1) return std::nullopt;
      char buf[65536];
      ssize_t n = ::read(conn_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  // The next frame that is not a `slot` update (those are kept in `slot_ads`).
  std::optional<pool::Frame> NextNotSlot(int timeout_ms = 10000) {
    for (;;) {
      auto f = Next(timeout_ms);
      if (!f || f->msg.type != MsgType::kSlot) return f;
      slot_ads.push_back(f->msg.ad);
    }
  }
  std::vector<std::string> slot_ads;

 private:
  int fd_ = -1, conn_ = -1;
  pool::FrameReader reader_;
};

struct StartdTest : ::testing::Test {
  void SetUp() override {
    o.agent = "unix:" + tmp / "pool.sock";
    o.name = "test@host";
    o.slots = 2;
    o.memory_mib = 1024;
    o.disk_kib = 4096;
    o.work = tmp / "work";
    o.kill_grace = 1;
    o.update_interval = 60;
    agent = std::make_unique<FakeAgent>(tmp / "pool.sock");
  }
  void TearDown() override {
    if (thread.joinable()) {
      io.stop();
      thread.join();
    }
  }
  void StartStartd() {
    auto dialer = MakeDialer(io, o.agent);
    ASSERT_TRUE(dialer);
    startd = std::make_unique<Startd>(
        io, o,
        Startd::World{.starter_path = std::string(KITE_BIN_DIR) + "/kite-starter",
                      .dialer = std::move(*dialer),
                      .on_exit = [this](int c) { code = c; }});
    ASSERT_TRUE(startd->Start());
    thread = std::thread([this] { io.run(); });
  }
  // Accepts the startd, checks its hello, welcomes it.
  Message Welcome() {
    EXPECT_TRUE(agent->Accept());
    auto hello = agent->Next();
    EXPECT_TRUE(hello);
    if (!hello) return {};
    EXPECT_EQ(hello->msg.type, MsgType::kHello);
    agent->Send(Message{.type = MsgType::kWelcome});
    return hello->msg;
  }
  Message Activate(const std::string& slot, const std::string& run, const std::string& ad,
                   std::vector<pool::FileInfo> files = {}) {
    return Message{.type = MsgType::kActivate,
                   .slot = slot,
                   .job = "7.0",
                   .run = run,
                   .ad = ad,
                   .files = std::move(files)};
  }
  Message Input(const std::string& run, const std::string& path, uint32_t mode) {
    return Message{.type = MsgType::kInput,
                   .job = "7.0",
                   .run = run,
                   .path = path,
                   .offset = 0,
                   .last = true,
                   .mode = mode};
  }
  Message About(MsgType t, const std::string& run) {
    return Message{.type = t, .slot = "slot1@test@host", .job = "7.0", .run = run};
  }
  // The sandbox goes just after the message about it: wait a little.
  bool Gone(const std::string& path) {
    for (int i = 0; i < 100 && fs::exists(path); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return !fs::exists(path);
  }
  bool WaitExit(int seconds) {
    for (int i = 0; i < seconds * 20 && code.load() < 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return code.load() >= 0;
  }

  testing::TempDir tmp{"startd"};
  StartdOptions o;
  std::unique_ptr<FakeAgent> agent;
  boost::asio::io_context io;
  std::unique_ptr<Startd> startd;
  std::thread thread;
  std::atomic<int> code{-1};
};

const std::string kScript =
    "#!/bin/sh\necho \"out: $1 $2\"\necho data > result.txt\necho oops >&2\nexit 3\n";

TEST_F(StartdTest, HelloCarriesTheSlotAds) {
  StartStartd();
  Message hello = Welcome();
  EXPECT_EQ(hello.name, "test@host");
  ASSERT_EQ(hello.slots.size(), 2u);
  EXPECT_EQ(hello.slots[1].name, "slot2@test@host");
  auto ad = classad::ParseNewAd(hello.slots[0].ad);
  ASSERT_TRUE(ad) << hello.slots[0].ad;
  EXPECT_EQ(ad->EvaluateString("Name"), "slot1@test@host");
  EXPECT_EQ(ad->EvaluateInt("Memory"), 512);
  EXPECT_EQ(ad->EvaluateInt("Disk"), 2048);
  EXPECT_EQ(ad->EvaluateString("State"), "Unclaimed");
  EXPECT_TRUE(hello.runs.empty());
}

TEST_F(StartdTest, RunsAJobAndSendsItsOutput) {
  StartStartd();
  Welcome();
  agent->Send(Activate("slot1@test@host", "r1", R"([ Cmd = "job.sh"; Arguments = "hello world" ])",
                       {{"job.sh", kScript.size(), 0755}}));
  agent->Send(Input("r1", "job.sh", 0755), kScript);
  agent->Send(About(MsgType::kGo, "r1"));
  auto started = agent->NextNotSlot();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->msg.type, MsgType::kStarted) << started->msg.reason;
  std::map<std::string, std::string> files;
  std::optional<pool::Frame> f;
  while ((f = agent->NextNotSlot()) && f->msg.type == MsgType::kOutput) {
    files[f->msg.path] += f->body;
  }
  ASSERT_TRUE(f);
  ASSERT_EQ(f->msg.type, MsgType::kEnded);
  EXPECT_EQ(f->msg.exit.kind, pool::RunExit::Kind::kExited);
  EXPECT_EQ(f->msg.exit.code, 3);
  EXPECT_GT(f->msg.usage.end, 0);
  EXPECT_EQ(files, (std::map<std::string, std::string>{{"_kite_stdout", "out: hello world\n"},
                                                       {"_kite_stderr", "oops\n"},
                                                       {"result.txt", "data\n"}}));
  EXPECT_TRUE(fs::exists(o.work + "/7.0-r1"));
  agent->Send(About(MsgType::kAck, "r1"));
  // The slot is free again, and the sandbox gone.
  EXPECT_TRUE(Gone(o.work + "/7.0-r1"));
  auto slot = agent->Next();
  ASSERT_TRUE(slot);
  EXPECT_EQ(slot->msg.type, MsgType::kSlot);
  EXPECT_NE(slot->msg.ad.find("\"Unclaimed\""), std::string::npos);
  bool busy = std::any_of(agent->slot_ads.begin(), agent->slot_ads.end(),
                          [](auto& a) { return a.find("\"Busy\"") != std::string::npos; });
  EXPECT_TRUE(busy);
}

TEST_F(StartdTest, RefusesBusyUnknownAndStartFalse) {
  o.start = "TARGET.Owner == \"alice\"";
  StartStartd();
  Welcome();
  auto expect_refused = [&](const std::string& what) {
    auto f = agent->NextNotSlot();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->msg.type, MsgType::kRefused);
    EXPECT_NE(f->msg.reason.find(what), std::string::npos) << f->msg.reason;
  };
  agent->Send(Activate("slot1@test@host", "r1", R"([ Cmd = "/bin/true"; Owner = "bob" ])"));
  expect_refused("START");
  agent->Send(Activate("slot9@test@host", "r2", R"([ Cmd = "/bin/true"; Owner = "alice" ])"));
  expect_refused("no slot");
  agent->Send(Activate("slot1@test@host", "r3", R"([ Cmd = "/bin/true"; Owner = "alice" ])"));
  agent->Send(Activate("slot1@test@host", "r4", R"([ Cmd = "/bin/true"; Owner = "alice" ])"));
  expect_refused("busy");
  agent->Send(Activate("slot2@test@host", "../r5", R"([ Cmd = "/bin/true"; Owner = "alice" ])"));
  expect_refused("not a usable id");
}

TEST_F(StartdTest, InputThroughAPlantedLinkIsRefused) {
  StartStartd();
  Welcome();
  fs::create_directory(tmp / "outside");
  agent->Send(Activate("slot1@test@host", "r1", R"([ Cmd = "/bin/true" ])"));
  for (int i = 0; i < 100 && !fs::exists(o.work + "/7.0-r1"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  fs::create_directory_symlink(tmp / "outside", o.work + "/7.0-r1/evil");
  agent->Send(Input("r1", "evil/x", 0644), "x");
  auto f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kRefused);
  EXPECT_NE(f->msg.reason.find("evil/x"), std::string::npos) << f->msg.reason;
  EXPECT_TRUE(fs::is_empty(tmp / "outside"));
  EXPECT_TRUE(Gone(o.work + "/7.0-r1"));
}

TEST_F(StartdTest, VacateStopsTheJob) {
  StartStartd();
  Welcome();
  agent->Send(Activate("slot1@test@host", "r1", R"([ Cmd = "/bin/sleep"; Arguments = "60" ])"));
  agent->Send(About(MsgType::kGo, "r1"));
  auto started = agent->NextNotSlot();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->msg.type, MsgType::kStarted);
  auto t0 = std::chrono::steady_clock::now();
  Message vacate = About(MsgType::kVacate, "r1");
  vacate.reason = "kite rm";
  agent->Send(vacate);
  auto f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kVacated);
  EXPECT_EQ(f->msg.reason, "kite rm");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(Gone(o.work + "/7.0-r1"));
  // A run it does not know is answered with vacated.
  agent->Send(About(MsgType::kAck, "nope"));
  f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kVacated);
}

// The agent sends a run's input and `go` right behind its `activate`; when the activate is
// refused they find no run. They get no answer (a `vacated` naming no slot would be malformed,
// and the agent would drop the whole connection), and the connection goes on.
TEST_F(StartdTest, InputForARefusedRunIsDroppedQuietly) {
  o.start = "false";
  StartStartd();
  Welcome();
  agent->Send(Activate("slot1@test@host", "r1", R"([ Cmd = "/bin/true" ])"));
  agent->Send(Input("r1", "data", 0644), "x");
  agent->Send(Message{.type = MsgType::kGo, .job = "7.0", .run = "r1"});
  agent->Send(About(MsgType::kVacate, "nope"));
  auto f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kRefused);
  EXPECT_EQ(f->msg.run, "r1");
  f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kVacated);
  EXPECT_EQ(f->msg.run, "nope");  // nothing came about r1's input or go
  EXPECT_EQ(f->msg.reason, "no such run here");
}

TEST_F(StartdTest, LeavesWhenIdleWithBye) {
  o.idle_timeout = 1;
  StartStartd();
  Welcome();
  auto f = agent->NextNotSlot(5000);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kBye);
  EXPECT_NE(f->msg.reason.find("idle"), std::string::npos);
  ASSERT_TRUE(WaitExit(5));
  EXPECT_EQ(code.load(), kExitLeft);
}

TEST_F(StartdTest, LeavingVacatesWhatRuns) {
  StartStartd();
  Welcome();
  agent->Send(Activate("slot1@test@host", "r1", R"([ Cmd = "/bin/sleep"; Arguments = "60" ])"));
  agent->Send(About(MsgType::kGo, "r1"));
  ASSERT_EQ(agent->NextNotSlot()->msg.type, MsgType::kStarted);
  boost::asio::post(io, [this] { startd->Leave("SIGTERM"); });
  auto f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kVacated);
  EXPECT_EQ(f->msg.reason, "the glide-in is leaving: SIGTERM");
  f = agent->NextNotSlot();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kBye);
  ASSERT_TRUE(WaitExit(5));
  EXPECT_EQ(code.load(), kExitLeft);
}

TEST_F(StartdTest, RefusedByTheAgentExits2) {
  StartStartd();
  ASSERT_TRUE(agent->Accept());
  ASSERT_TRUE(agent->Next());
  agent->Send(Message{.type = MsgType::kRefuse, .reason = "not the user's identity"});
  ASSERT_TRUE(WaitExit(5));
  EXPECT_EQ(code.load(), kExitRefused);
}

TEST_F(StartdTest, ARunOutlivesTheConnectionAndReportsAfterReconnecting) {
  StartStartd();
  Welcome();
  agent->Send(Activate("slot1@test@host", "r1",
                       R"([ Cmd = "/bin/sh"; Arguments = "-c 'sleep 1; echo late'" ])"));
  agent->Send(About(MsgType::kGo, "r1"));
  ASSERT_EQ(agent->NextNotSlot()->msg.type, MsgType::kStarted);
  agent->Drop();
  Message hello = Welcome();
  ASSERT_EQ(hello.runs.size(), 1u);
  EXPECT_EQ(hello.runs[0], (pool::RunRef{"slot1@test@host", "7.0", "r1"}));
  // Its start is said again first: the new agent may not have heard of it.
  auto again = agent->NextNotSlot();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->msg.type, MsgType::kStarted);
  EXPECT_EQ(again->msg.run, "r1");
  std::map<std::string, std::string> files;
  std::optional<pool::Frame> f;
  while ((f = agent->NextNotSlot()) && f->msg.type == MsgType::kOutput)
    files[f->msg.path] += f->body;
  ASSERT_TRUE(f);
  EXPECT_EQ(f->msg.type, MsgType::kEnded);
  EXPECT_EQ(files["_kite_stdout"], "late\n");
}

}  // namespace
}  // namespace kite::glidein
