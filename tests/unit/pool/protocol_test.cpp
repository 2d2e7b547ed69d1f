// The pool protocol: frames round-trip whole or cut anywhere, and malformed frames, headers and
// paths are refused with a reason naming what is wrong.
#include "pool/protocol.h"

#include <gtest/gtest.h>

namespace kite::pool {
namespace {

Message Ended() {
  Message m;
  m.type = MsgType::kEnded;
  m.slot = "slot2@node7";
  m.job = "12.3";
  m.run = "1764080000-12.3-2";
  m.exit = {RunExit::Kind::kSignaled, 9, ""};
  m.usage = {1.5, 0.25, 20480, 1764080001.5, 1764080009.25};
  return m;
}

Message Hello() {
  Message m;
  m.type = MsgType::kHello;
  m.name = "glidein-4@node7";
  m.slots = {{"slot1@node7", "[ Cpus = 1; Memory = 1024 ]"}, {"slot2@node7", "[ Cpus = 1 ]"}};
  m.runs = {{"slot2@node7", "12.3", "r"}};
  return m;
}

Result<Frame> ReadOne(const std::string& bytes) {
  FrameReader r;
  r.Feed(bytes);
  auto f = r.Next();
  if (!f) return std::unexpected(f.error());
  if (!*f) return Fail(ErrorCode::kInvalidInput, "incomplete");
  return std::move(**f);
}

TEST(PoolProtocol, EveryKindRoundTripsThroughAFrame) {
  std::vector<Message> all = {Hello(), Ended()};
  Message out;
  out.type = MsgType::kOutput;
  out.job = "12.3";
  out.run = "r";
  out.path = "results/out.txt";
  out.offset = 1u << 30;
  out.last = true;
  out.mode = 0755;
  all.push_back(out);
  Message act;
  act.type = MsgType::kActivate;
  act.slot = "slot1@node7";
  act.job = "12.3";
  act.run = "r";
  act.ad = "[ Cmd = \"/bin/echo\"; Arguments = \"a \\\"b\\\"\" ]";
  act.files = {{"data/in.h5", 1u << 20, 0600}};
  all.push_back(act);
  Message here = act;
  here.files.clear();
  here.in_place = "/home/jane/runs";
  all.push_back(here);
  all.push_back(Message{.type = MsgType::kSuspended,
                        .slot = "slot1@node7",
                        .job = "12.3",
                        .run = "r",
                        .reason = "SUSPEND = KeyboardIdle < 60"});
  all.push_back(
      Message{.type = MsgType::kContinued, .slot = "slot1@node7", .job = "12.3", .run = "r"});
  Message piece = out;
  piece.checkpoint = true;
  all.push_back(piece);
  all.push_back(Message{.type = MsgType::kCheckpointed,
                        .slot = "slot1@node7",
                        .job = "12.3",
                        .run = "r",
                        .usage = {.user_cpu = 1.5, .start = 100, .end = 160}});
  all.push_back(Message{.type = MsgType::kNotCheckpointed,
                        .slot = "slot1@node7",
                        .job = "12.3",
                        .run = "r",
                        .reason = "the program has a child process"});
  all.push_back(Message{.type = MsgType::kAck, .job = "12.3", .run = "r", .checkpoint = true});
  // Remote system calls: a channel of the run's program, its request or reply as the body.
  all.push_back(Message{.type = MsgType::kRsc, .job = "12.3", .run = "r", .chan = 7});
  all.push_back(Message{.type = MsgType::kRscReply, .job = "12.3", .run = "r", .chan = 7});
  // Between a startd and its starter only.
  all.push_back(Message{
      .type = MsgType::kStarted, .slot = "slot1@node7", .job = "12.3", .run = "r", .pid = 4242});
  all.push_back(Message{.type = MsgType::kSuspend, .reason = "LoadAvg > 1"});
  for (MsgType t : {MsgType::kContinue, MsgType::kKill, MsgType::kRewind, MsgType::kRewound})
    all.push_back(Message{.type = t});
  for (const auto& m : all) {
    auto f = ReadOne(EncodeFrame(m, "bytes\0here"));
    ASSERT_TRUE(f) << f.error().ToString();
    EXPECT_EQ(f->msg, m) << ToJson(m);
    EXPECT_EQ(f->body, "bytes\0here");
  }
}

TEST(PoolProtocol, ACheckpointNamesItsRunAndFlagsAreBooleans) {
  EXPECT_FALSE(ParseMessage(R"({"type":"checkpointed","job":"1.0","run":"r"})"));  // no slot
  EXPECT_TRUE(ParseMessage(R"({"type":"checkpointed","slot":"s","job":"1.0","run":"r"})"));
  // How long a transparent checkpoint took: seconds, only in checkpointed, and said back.
  auto took =
      ParseMessage(R"({"type":"checkpointed","slot":"s","job":"1.0","run":"r","took":0.5})");
  ASSERT_TRUE(took);
  EXPECT_EQ(took->took, 0.5);
  EXPECT_EQ(ParseMessage(ToJson(*took))->took, 0.5);
  EXPECT_FALSE(
      ParseMessage(R"({"type":"checkpointed","slot":"s","job":"1.0","run":"r","took":-1})"));
  EXPECT_FALSE(
      ParseMessage(R"({"type":"checkpointed","slot":"s","job":"1.0","run":"r","took":"x"})"));
  EXPECT_FALSE(ParseMessage(R"({"type":"ended","slot":"s","job":"1.0","run":"r","took":1})"));
  EXPECT_FALSE(ParseMessage(R"({"type":"ack","job":"1.0","run":"r","checkpoint":1})"));
  EXPECT_FALSE(ParseMessage(R"({"type":"not_checkpointed","slot":"s","job":"1.0"})"));  // no run
  EXPECT_TRUE(
      ParseMessage(R"({"type":"not_checkpointed","slot":"s","job":"1.0","run":"r","reason":"x"})"));
}

// A piece streamed while the program runs says so, and only an output piece that is neither a
// checkpoint's nor the last may.
TEST(PoolProtocol, OnlyAnOutputPieceIsStreamed) {
  auto piece = ParseMessage(
      R"({"type":"output","job":"1.0","run":"r","path":"_kite_stdout","offset":5,"last":false,)"
      R"("streaming":true})");
  ASSERT_TRUE(piece) << piece.error().message();
  EXPECT_TRUE(piece->streaming);
  EXPECT_TRUE(ParseMessage(ToJson(*piece))->streaming);
  EXPECT_FALSE(ParseMessage(
      R"({"type":"output","job":"1.0","run":"r","path":"a","last":true,"streaming":true})"));
  EXPECT_FALSE(ParseMessage(
      R"({"type":"output","job":"1.0","run":"r","path":"a","checkpoint":true,"streaming":true})"));
  EXPECT_FALSE(
      ParseMessage(R"({"type":"ended","slot":"s","job":"1.0","run":"r","streaming":true})"));
  EXPECT_FALSE(
      ParseMessage(R"({"type":"output","job":"1.0","run":"r","path":"a","streaming":"yes"})"));
}

TEST(PoolProtocol, RemoteCallsNameTheirRunAndChannel) {
  EXPECT_FALSE(ParseMessage(R"({"type":"rsc","chan":1})"));              // no job
  EXPECT_FALSE(ParseMessage(R"({"type":"rsc","job":"1.0","chan":1})"));  // no run
  EXPECT_FALSE(ParseMessage(R"({"type":"rsc_reply","job":"1.0","run":"r","chan":-1})"));
  EXPECT_FALSE(ParseMessage(R"({"type":"rsc","job":"1.0","run":"r","chan":"x"})"));
  auto ok = ParseMessage(R"({"type":"rsc","job":"1.0","run":"r","chan":3})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->chan, 3);
}

TEST(PoolProtocol, SuspensionsNameTheirRun) {
  EXPECT_FALSE(ParseMessage(R"({"type":"suspended","job":"1.0","run":"r"})"));  // no slot
  EXPECT_FALSE(ParseMessage(R"({"type":"continued","slot":"s","run":"r"})"));   // no job
  EXPECT_TRUE(ParseMessage(R"({"type":"continued","slot":"s","job":"1.0","run":"r"})"));
}

TEST(PoolProtocol, FramesCutAtEveryByteAreReadWhole) {
  std::string two = EncodeFrame(Hello()) + EncodeFrame(Ended(), std::string(300, 'x'));
  for (size_t cut = 0; cut <= two.size(); ++cut) {
    FrameReader r;
    r.Feed(std::string_view(two).substr(0, cut));
    std::vector<Frame> got;
    for (auto f = r.Next(); f && *f; f = r.Next()) got.push_back(std::move(**f));
    r.Feed(std::string_view(two).substr(cut));
    for (auto f = r.Next(); f && *f; f = r.Next()) got.push_back(std::move(**f));
    ASSERT_EQ(got.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(got[0].msg, Hello());
    EXPECT_EQ(got[1].msg, Ended());
    EXPECT_EQ(got[1].body.size(), 300u);
    EXPECT_EQ(r.buffered(), 0u);
  }
}

std::string RawFrame(const std::string& header, uint32_t body_len = 0) {
  std::string out;
  auto put = [&out](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
  };
  put(static_cast<uint32_t>(header.size()));
  put(body_len);
  return out + header + std::string(body_len, 'b');
}

void ExpectRefused(const std::string& bytes, const std::string& needle) {
  FrameReader r;
  r.Feed(bytes);
  auto f = r.Next();
  ASSERT_FALSE(f) << "accepted: " << bytes;
  EXPECT_EQ(f.error().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(f.error().message().find(needle), std::string::npos) << f.error().message();
}

TEST(PoolProtocol, MalformedFramesAreRefusedNamingWhatIsWrong) {
  ExpectRefused(std::string("\0\0\0\0\0\0\0\0", 8), "frame header of 0 bytes");
  ExpectRefused(std::string("\x7f\0\0\0\0\0\0\0", 8), "limit");
  ExpectRefused(std::string("\0\0\0\x02\x7f\0\0\0{}", 10), "frame body");
  ExpectRefused(RawFrame("not json"), "not JSON");
  ExpectRefused(RawFrame("[1]"), "JSON object");
  ExpectRefused(RawFrame(R"({"type":"teleport"})"), "unknown message type 'teleport'");
  ExpectRefused(RawFrame(R"({"type":"ended","slot":"s","run":"r"})"), "job is missing");
  ExpectRefused(RawFrame(R"({"type":"activate","slot":"s","job":"1.0","run":"r"})"),
                "ad is missing");
  ExpectRefused(RawFrame(R"({"type":"hello","name":"x","slots":{}})"), "slots must be an array");
  ExpectRefused(RawFrame(R"({"type":"hello","name":"x","slots":[{"name":"s"}]})"), "ad is missing");
  ExpectRefused(RawFrame(R"({"type":"input","job":"1.0","run":"r","path":"a","offset":-1})"),
                "offset is out of range");
  ExpectRefused(
      RawFrame(R"({"type":"ended","slot":"s","job":"1.0","run":"r","exit":{"kind":"x"}})"),
      "exit.kind 'x'");
  ExpectRefused(RawFrame(R"({"type":"slot","slot":7,"ad":"[]"})"), "slot must be a string");
  ExpectRefused(RawFrame(R"({"type":"started","slot":"s","job":"1.0","run":"r","pid":-4})"),
                "pid is out of range");
  ExpectRefused(RawFrame(R"({"type":"started","slot":"s","job":"1.0","run":"r","pid":"4"})"),
                "pid must be an integer");
  ExpectRefused(RawFrame(R"({"type":"activate","slot":"s","job":"1.0","run":"r","ad":"[]",)"
                         R"("in_place":"work"})"),
                "in_place must be an absolute directory");
  ExpectRefused(RawFrame(R"({"type":"vacate","slot":"s","job":"1.0","run":"r","in_place":"/x"})"),
                "only in activate");
  // How remote I/O went: one of two words, and only when a run starts.
  ExpectRefused(
      RawFrame(R"({"type":"started","slot":"s","job":"1.0","run":"r","remote_io":"nfs"})"),
      "remote_io must be fuse or preload");
  ExpectRefused(RawFrame(R"({"type":"ended","slot":"s","job":"1.0","run":"r","remote_io":"fuse"})"),
                "only in started");
  auto ok =
      ParseMessage(R"({"type":"started","slot":"s","job":"1.0","run":"r","remote_io":"fuse"})");
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->remote_io, "fuse");
  EXPECT_NE(ToJson(*ok).find("\"remote_io\":\"fuse\""), std::string::npos);
}

TEST(PoolProtocol, FilePathsThatWouldLeaveTheSandboxAreRefused) {
  for (std::string bad : {"../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/.", "", "a/"}) {
    EXPECT_FALSE(CheckRelativePath(bad)) << bad;
    ExpectRefused(RawFrame(R"({"type":"output","job":"1.0","run":"r","path":")" + bad + "\"}"),
                  bad.empty() ? "path is empty" : "file path");
  }
  ExpectRefused(RawFrame(R"({"type":"activate","slot":"s","job":"1.0","run":"r","ad":"[]",)"
                         R"("files":[{"path":"../../.ssh/id_rsa"}]})"),
                "'..'");
  for (std::string good : {"a", "a/b", "..a", "a..", ".hidden/x"})
    EXPECT_TRUE(CheckRelativePath(good)) << good;
}

TEST(PoolProtocol, UnknownMembersAreIgnoredSoANewerPeerStillTalks) {
  auto f = ReadOne(RawFrame(R"({"type":"go","job":"1.0","run":"r","future":{"x":1}})"));
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->msg.type, MsgType::kGo);
}

}  // namespace
}  // namespace kite::pool
