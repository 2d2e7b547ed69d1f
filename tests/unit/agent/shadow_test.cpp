// A run's shadow (agent/shadow.h) on a fake link and a real queue file: the input it sends and in
// what pieces, output written where the job says, a checkpoint stored, bound to its job by its
// digest and sent back by a later shadow (as after an agent restart), and refusals.
#include "agent/shadow.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "classad/io.h"
#include "common/files.h"
#include "rsc/wire.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

using pool::Message;
using pool::MsgType;

// What a shadow wrote, and how much of it the other end has not taken yet.
struct FakeLink : RunLink {
  void Send(const Message& m, std::string_view body) override {
    sent.push_back({m, std::string(body)});
    queued += body.size() + 64;
  }
  size_t queued_bytes() const override { return queued; }
  std::vector<std::pair<Message, std::string>> sent;
  size_t queued = 0;
};

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Write(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), mode);
}

struct ShadowTest : ::testing::Test {
  void SetUp() override {
    iwd = dir / "work";
    // Every job's executable (a checkpoint's policy is made from the job's inputs).
    Write(iwd + "/run.sh", "#!/bin/sh\n", 0700);
    Open();
  }
  // The queue from its file, as a new agent reads it.
  void Open() {
    queue.reset();
    auto s = store::JobQueueStore::Open(dir / "queue.db");
    ASSERT_TRUE(s);
    store = std::move(*s);
    queue = std::make_unique<JobQueue>(store.get(), [this] { return now; });
    ASSERT_TRUE(queue->Load());
    shared = std::make_unique<ShadowShared>(
        ShadowShared{.queue = *queue, .checkpoints = dir / "spool/checkpoints"});
  }
  // A vanilla job in `iwd` with these attributes besides.
  JobKey Submit(std::vector<SubmitAttr> attrs) {
    auto c = queue->NewCluster();
    EXPECT_TRUE(c);
    SubmitRequest r;
    r.cluster = *c;
    r.common = {{"Cmd", "\"run.sh\""},
                {"Iwd", "\"" + iwd + "\""},
                {"JobUniverse", "5"},
                {"JobStatus", "1"}};
    for (auto& a : attrs) r.common.push_back(std::move(a));
    r.procs.push_back({{"ProcId", "0"}});
    EXPECT_TRUE(queue->Submit(r));
    return {*c, 0};
  }
  Job& J(JobKey key) { return *queue->Find(key); }
  // Every input piece and the closing go: the files as the startd would put them together.
  std::map<std::string, std::string> Drain(Shadow& shadow, FakeLink& link, size_t high) {
    std::map<std::string, std::string> files;
    size_t from = link.sent.size();
    for (int turns = 0; turns < 1000; ++turns) {
      auto r = shadow.Pump(link, high);
      link.queued = 0;  // the other end takes it all
      if (r != Shadow::Pumped::kMore) {
        last = r;
        break;
      }
    }
    for (size_t i = from; i < link.sent.size(); ++i) {
      const auto& [m, body] = link.sent[i];
      if (m.type != MsgType::kInput) continue;
      auto& f = files[m.path];
      EXPECT_EQ(m.offset, f.size()) << m.path << ": pieces in order, none twice";
      f += body;
    }
    return files;
  }

  kite::testing::TempDir dir{"shadow-unit"};
  std::string iwd;
  double now = 1000;
  std::unique_ptr<store::JobQueueStore> store;
  std::unique_ptr<JobQueue> queue;
  std::unique_ptr<ShadowShared> shared;
  Shadow::Pumped last = Shadow::Pumped::kMore;
};

TEST_F(ShadowTest, SendsEveryInputInPiecesWhileTheLinkIsShortThenGo) {
  std::string big(2 * pool::kChunk + 5, 'x');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
  Write(iwd + "/run.sh", "#!/bin/sh\necho hi\n", 0700);
  Write(iwd + "/in.dat", big);
  Write(iwd + "/data/a.txt", "A");
  Write(iwd + "/data/sub/b.txt", "BB");
  Write(iwd + "/stdin.txt", "question");
  auto key = Submit({{"TransferInput", "\"in.dat, data\""}, {"In", "\"stdin.txt\""}});
  Shadow shadow(*shared, "r1", key);
  auto activate = shadow.Activate(J(key), RunPlace{.slot = "slot1@here"});
  ASSERT_TRUE(activate) << activate.error().reason;
  EXPECT_EQ(activate->type, MsgType::kActivate);
  EXPECT_EQ(activate->run, "r1");
  EXPECT_EQ(activate->slot, "slot1@here");
  std::map<std::string, uint64_t> listed;
  for (const auto& f : activate->files) listed[f.path] = f.size;
  EXPECT_EQ(listed, (std::map<std::string, uint64_t>{{"run.sh", 18},
                                                     {"in.dat", big.size()},
                                                     {"data/a.txt", 1},
                                                     {"data/sub/b.txt", 2},
                                                     {"stdin.txt", 8}}));
  // The ad that goes names the executable and stdin as the sandbox has them.
  auto ad = classad::ParseNewAd(activate->ad);
  ASSERT_TRUE(ad);
  EXPECT_EQ(ad->EvaluateString("Cmd").value_or(""), "run.sh");

  FakeLink link;
  // With room for one piece at a time, one piece goes per turn.
  EXPECT_EQ(shadow.Pump(link, 1), Shadow::Pumped::kMore);
  EXPECT_EQ(link.sent.size(), 1u);
  link.queued = 0;
  auto files = Drain(shadow, link, 1);
  EXPECT_EQ(last, Shadow::Pumped::kDone);
  EXPECT_EQ(link.sent.back().first.type, MsgType::kGo);
  size_t pieces = 0;
  for (const auto& [m, body] : link.sent) pieces += m.type == MsgType::kInput;
  EXPECT_EQ(pieces, 3u + 4u);  // in.dat in three, the others in one each
  // The first piece, sent above, is in.dat's or another's; together they are the files.
  files[link.sent.front().first.path].insert(0, link.sent.front().second);
  EXPECT_EQ(files["in.dat"], big);
  EXPECT_EQ(files["data/sub/b.txt"], "BB");
  EXPECT_EQ(files["run.sh"], "#!/bin/sh\necho hi\n");
  for (const auto& [m, body] : link.sent) {
    if (m.type == MsgType::kInput && m.path == "run.sh") {
      EXPECT_EQ(m.mode, 0755u);
    }
  }
}

TEST_F(ShadowTest, AnInputThatIsNotThereHoldsTheJobWithItsName) {
  auto key = Submit({{"TransferInput", "\"missing.dat\""}});
  Shadow shadow(*shared, "r1", key);
  auto activate = shadow.Activate(J(key), RunPlace{.slot = "slot1@here"});
  ASSERT_FALSE(activate);
  EXPECT_EQ(activate.error().code, kHoldTransferInputError);
  EXPECT_NE(activate.error().reason.find("Transfer input files failure"), std::string::npos);
  EXPECT_NE(activate.error().reason.find(iwd + "/missing.dat"), std::string::npos);
}

TEST_F(ShadowTest, ARunInPlaceIsSentNothingButGo) {
  Write(iwd + "/in.dat", "data");
  auto key = Submit({{"TransferInput", "\"in.dat\""}});
  Shadow shadow(*shared, "r1", key);
  auto activate = shadow.Activate(J(key), RunPlace{.slot = "slot1@here", .in_place = iwd});
  ASSERT_TRUE(activate);
  EXPECT_TRUE(activate->files.empty());
  EXPECT_EQ(activate->in_place, iwd);
  FakeLink link;
  EXPECT_EQ(shadow.Pump(link, pool::kChunk), Shadow::Pumped::kDone);
  ASSERT_EQ(link.sent.size(), 1u);
  EXPECT_EQ(link.sent[0].first.type, MsgType::kGo);
}

TEST_F(ShadowTest, MatchReferencesAreFilledFromTheSlot) {
  auto key = Submit({{"Arguments", "\"--site $$(Site)\""}});
  auto slot = classad::ParseNewAd("[Name = \"slot1@g\"; Site = \"Lund\"]");
  Shadow shadow(*shared, "r1", key);
  auto activate = shadow.Activate(J(key), RunPlace{.slot = "slot1@g", .slot_ad = &*slot});
  ASSERT_TRUE(activate);
  auto ad = classad::ParseNewAd(activate->ad);
  EXPECT_EQ(ad->EvaluateString("Arguments").value_or(""), "--site Lund");
  // One the slot cannot fill holds the job.
  auto bare = classad::ParseNewAd("[Name = \"slot1@g\"]");
  Shadow other(*shared, "r2", key);
  auto refused = other.Activate(J(key), RunPlace{.slot = "slot1@g", .slot_ad = &*bare});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().reason.find("$$"), std::string::npos);
}

// A piece of output file `path` of run `run` of the job `key`, as a startd sends it.
Message OutputPiece(JobKey key, const std::string& run, const std::string& path, uint64_t offset,
                    bool last) {
  return Message{.type = MsgType::kOutput,
                 .job = JobIdString(key),
                 .run = run,
                 .path = path,
                 .offset = offset,
                 .last = last,
                 .mode = 0640};
}

// The same, of a checkpoint.
Message Piece(JobKey key, const std::string& run, const std::string& path, uint64_t offset,
              bool last) {
  Message m = OutputPiece(key, run, path, offset, last);
  m.checkpoint = true;
  m.mode = 0600;
  return m;
}

TEST_F(ShadowTest, OutputLandsUnderTheIwdAsTheJobNamesIt) {
  auto key = Submit({{"Out", "\"out.txt\""},
                     {"Err", "\"/dev/null\""},
                     {"TransferOutputRemaps", "\"res.dat = results/r.dat\""}});
  Shadow shadow(*shared, "r1", key);
  auto piece = [&](const std::string& path, uint64_t offset, bool ends) {
    return OutputPiece(key, "r1", path, offset, ends);
  };
  shadow.Output(J(key), piece("_kite_stdout", 0, false), "hello ");
  shadow.Output(J(key), piece("_kite_stdout", 6, true), "world\n");
  shadow.Output(J(key), piece("_kite_stdout", 6, true), "world\n");  // resent: the same file
  shadow.Output(J(key), piece("res.dat", 0, true), "42\n");
  shadow.Output(J(key), piece("_kite_stderr", 0, true), "noise");
  shadow.Output(J(key), piece("plain.txt", 0, true), "p");
  EXPECT_EQ(shadow.output_error(), "");
  EXPECT_EQ(Read(iwd + "/out.txt"), "hello world\n");
  EXPECT_EQ(Read(iwd + "/results/r.dat"), "42\n");
  EXPECT_EQ(Read(iwd + "/plain.txt"), "p");
  EXPECT_FALSE(std::filesystem::exists(iwd + "/_kite_stderr"));
  struct stat st {};
  ASSERT_EQ(::stat((iwd + "/plain.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

// Pieces streamed while the program runs land as they come, only of the standard streams the job
// streams; the end's piece goes on from where they got.
TEST_F(ShadowTest, StreamedOutputLandsWhileTheProgramRunsOnlyWhenAsked) {
  auto key = Submit({{"Out", "\"out.txt\""},
                     {"Err", "\"err.txt\""},
                     {"StreamOut", "true"},
                     {"StreamErr", "false"}});
  Shadow shadow(*shared, "r1", key);
  auto piece = [&](const std::string& path, uint64_t offset, bool streaming, bool ends) {
    Message m = OutputPiece(key, "r1", path, offset, ends);
    m.streaming = streaming;
    return m;
  };
  shadow.Output(J(key), piece("_kite_stdout", 0, true, false), "line 1\n");
  EXPECT_EQ(Read(iwd + "/out.txt"), "line 1\n");
  shadow.Output(J(key), piece("_kite_stdout", 7, true, false), "line 2\n");
  EXPECT_EQ(Read(iwd + "/out.txt"), "line 1\nline 2\n");
  shadow.Output(J(key), piece("_kite_stderr", 0, true, false), "not streamed");
  shadow.Output(J(key), piece("other.dat", 0, true, false), "never");
  EXPECT_FALSE(std::filesystem::exists(iwd + "/err.txt"));
  EXPECT_FALSE(std::filesystem::exists(iwd + "/other.dat"));
  shadow.Output(J(key), piece("_kite_stdout", 14, false, true), "end\n");
  EXPECT_EQ(Read(iwd + "/out.txt"), "line 1\nline 2\nend\n");
}

TEST_F(ShadowTest, OutputThatCannotBeWrittenIsKeptAsTheRunsError) {
  auto key = Submit({});
  Write(iwd + "/blocked", "a file where a folder must go");
  Shadow shadow(*shared, "r1", key);
  shadow.Output(J(key), Message{.type = MsgType::kOutput, .path = "blocked/x.txt", .last = true},
                "x");
  EXPECT_NE(shadow.output_error(), "");
  std::string first = shadow.output_error();
  shadow.Output(J(key), Message{.type = MsgType::kOutput, .path = "ok.txt", .last = true}, "x");
  EXPECT_EQ(shadow.output_error(), first);
  EXPECT_FALSE(std::filesystem::exists(iwd + "/ok.txt"));  // nothing more is written
}

TEST_F(ShadowTest, ACheckpointIsStoredAndALaterShadowSendsItBack) {
  auto key = Submit({{"TransparentCheckpoint", "true"}});
  {
    Shadow shadow(*shared, "r1", key);
    EXPECT_EQ(shadow.CheckpointPiece(J(key), Piece(key, "r1", "kite_ckpt.img", 0, false), "IMA"),
              "");
    EXPECT_EQ(shadow.CheckpointPiece(J(key), Piece(key, "r1", "kite_ckpt.img", 3, true), "GE"), "");
    Message done{.type = MsgType::kCheckpointed, .job = JobIdString(key), .run = "r1"};
    done.usage.start = 100;
    done.usage.end = 160;
    done.took = 1.5;
    EXPECT_EQ(shadow.StoreCheckpoint(J(key), done, "glidein-7.0", /*site=*/true), 1);
  }
  std::string kept = shared->CheckpointDir(key);
  EXPECT_EQ(Read(kept + "/ckpt.1/kite_ckpt.img"), "IMAGE");
  EXPECT_FALSE(std::filesystem::exists(kept + "/incoming.r1"));
  EXPECT_EQ(J(key).ad.EvaluateInt("NumCheckpoints").value_or(0), 1);
  EXPECT_EQ(J(key).ad.EvaluateReal("CommittedTime").value_or(0), 60);
  EXPECT_EQ(J(key).ad.EvaluateReal("LastCheckpointDuration").value_or(0), 1.5);
  EXPECT_EQ(J(key).ad.EvaluateString("CheckpointStartd").value_or(""), "glidein-7.0");
  EXPECT_TRUE(J(key).ad.EvaluateBool("CheckpointFromSite").value_or(false));
  ASSERT_TRUE(queue->Flush());
  Open();  // the agent restarts: the next run's shadow knows only the queue and the store

  Shadow next(*shared, "r2", key);
  auto activate = next.Activate(J(key), RunPlace{.slot = "slot1@g", .door = PoolDoor::kTls});
  ASSERT_TRUE(activate) << activate.error().reason;
  FakeLink link;
  auto files = Drain(next, link, pool::kChunk);
  EXPECT_EQ(last, Shadow::Pumped::kDone);
  EXPECT_EQ(files["kite_ckpt.img"], "IMAGE");
  bool flagged = false;
  for (const auto& [m, body] : link.sent)
    flagged |= m.type == MsgType::kInput && m.path == "kite_ckpt.img" && m.checkpoint;
  EXPECT_TRUE(flagged);
}

TEST_F(ShadowTest, AStoredCheckpointChangedOnDiskIsNeverRestored) {
  auto key = Submit({{"TransparentCheckpoint", "true"}});
  Shadow shadow(*shared, "r1", key);
  shadow.CheckpointPiece(J(key), Piece(key, "r1", "kite_ckpt.img", 0, true), "IMAGE");
  ASSERT_EQ(shadow.StoreCheckpoint(J(key), Message{.type = MsgType::kCheckpointed}, "s", false), 1);
  Write(shared->CheckpointDir(key) + "/ckpt.1/kite_ckpt.img", "IMAGF", 0600);
  Shadow next(*shared, "r2", key);
  ASSERT_TRUE(next.Activate(J(key), RunPlace{.slot = "slot1@here"}));
  FakeLink link;
  Drain(next, link, pool::kChunk);
  EXPECT_EQ(last, Shadow::Pumped::kStopped);
  EXPECT_NE(link.sent.back().first.type, MsgType::kGo);
  EXPECT_EQ(J(key).status, kHeld);
  EXPECT_NE(J(key).ad.EvaluateString("HoldReason").value_or("").find("digest differs"),
            std::string::npos);
}

TEST_F(ShadowTest, ASiteImageIsNotRestoredOnTheDesktopUnlessAllowed) {
  auto key = Submit({{"TransparentCheckpoint", "true"}});
  Shadow shadow(*shared, "r1", key);
  shadow.CheckpointPiece(J(key), Piece(key, "r1", "kite_ckpt.img", 0, true), "IMAGE");
  ASSERT_EQ(shadow.StoreCheckpoint(J(key), Message{.type = MsgType::kCheckpointed}, "g", true), 1);
  auto restored = [&](PoolDoor door) {
    Shadow next(*shared, "r2", key);
    auto a = next.Activate(J(key), RunPlace{.slot = "slot1@x", .door = door});
    EXPECT_TRUE(a);
    for (const auto& f : a->files)
      if (f.path == "kite_ckpt.img") return true;
    return false;
  };
  EXPECT_FALSE(restored(PoolDoor::kLocal));  // starts over, and says so
  EXPECT_TRUE(restored(PoolDoor::kTls));
  shared->local_restore_site_checkpoints = true;
  EXPECT_TRUE(restored(PoolDoor::kLocal));
}

TEST_F(ShadowTest, OnlyTheCheckpointFilesTheJobMayHaveAreTaken) {
  auto plain = Submit({});
  Shadow shadow(*shared, "r1", plain);
  EXPECT_FALSE(shadow.Policy(J(plain)).checkpoints);
  EXPECT_NE(shadow.CheckpointPiece(J(plain), Piece(plain, "r1", "state.dat", 0, true), "x")
                .find("takes no checkpoints"),
            std::string::npos);
  // A job that checkpoints: never under its executable's name, and a refused piece spoils the
  // whole checkpoint (the previous one stays the one to resume).
  auto self = Submit({{"CheckpointExitCode", "85"}});
  Shadow other(*shared, "r2", self);
  EXPECT_NE(other.CheckpointPiece(J(self), Piece(self, "r2", "run.sh", 0, true), "evil"), "");
  EXPECT_EQ(other.CheckpointPiece(J(self), Piece(self, "r2", "state.dat", 0, true), "ok"), "");
  EXPECT_EQ(other.StoreCheckpoint(J(self), Message{.type = MsgType::kCheckpointed}, "s", false), 0);
  EXPECT_FALSE(J(self).ad.Lookup("NumCheckpoints"));
  EXPECT_FALSE(std::filesystem::exists(shared->CheckpointDir(self) + "/incoming.r2"));
}

TEST_F(ShadowTest, PiecesOutOfOrderAreNotStored) {
  auto key = Submit({{"TransparentCheckpoint", "true"}});
  Shadow shadow(*shared, "r1", key);
  shadow.CheckpointPiece(J(key), Piece(key, "r1", "kite_ckpt.img", 5, true), "LATE");
  EXPECT_EQ(shadow.StoreCheckpoint(J(key), Message{.type = MsgType::kCheckpointed}, "s", false), 0);
  EXPECT_FALSE(J(key).ad.Lookup("NumCheckpoints"));
}

TEST_F(ShadowTest, OnlyTheCommittedCheckpointIsKept) {
  auto key = Submit({{"TransparentCheckpoint", "true"}});
  Shadow shadow(*shared, "r1", key);
  for (int i = 1; i <= 3; ++i) {
    shadow.CheckpointPiece(J(key), Piece(key, "r1", "kite_ckpt.img", 0, true), std::to_string(i));
    ASSERT_EQ(shadow.StoreCheckpoint(J(key), Message{.type = MsgType::kCheckpointed}, "s", false),
              i);
  }
  Shadow::KeepOnlyCheckpoint(*shared, key, 3);
  std::string kept = shared->CheckpointDir(key);
  EXPECT_FALSE(std::filesystem::exists(kept + "/ckpt.1"));
  EXPECT_FALSE(std::filesystem::exists(kept + "/ckpt.2"));
  EXPECT_EQ(Read(kept + "/ckpt.3/kite_ckpt.img"), "3");
}

TEST_F(ShadowTest, RemoteCallsOfAJobThatDidNotAskAreRefusedUndone) {
  auto key = Submit({});
  Shadow shadow(*shared, "r1", key);
  rsc::Request open_call;
  open_call.seq = 77;
  std::string reply = shadow.RemoteCall(&J(key), rsc::Encode(open_call));
  auto r = rsc::DecodeReply(reply);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->seq, 77u);
  EXPECT_EQ(r->result, -1);
  EXPECT_EQ(r->error, EACCES);
  EXPECT_EQ(RefusedRemoteCall(rsc::Encode(open_call)), reply);
}

}  // namespace
}  // namespace kite::agent
