// The attacks on the personal pool, replayed as the probes made them (issue 25): a real agent
// with its real TLS listener and Unix socket, and clients that are not Kite startds sending raw
// frames (tests/fixtures/raw_startd.h) with real certificates from a test CA. Each attack is
// refused, said in agent.log, and harms no job.
//
//   - joining with the user's proxy (full or limited) but no pool credential, with a forged
//     credential, under another name, with more slots than the credential gives;
//   - a credential that expires or is revoked while its startd is connected, a proxy that lapses;
//   - ending, feeding or making remote system calls for another startd's run;
//   - checkpoint files for a job that takes none, or named after its executable;
//   - a stored checkpoint changed, replaced by another job's, or made a symbolic link;
//   - an image a site made, restored on the desktop's own slot;
//   - malformed frames.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "common/files.h"
#include "common/strings.h"
#include "credentials/ca.h"
#include "credentials/proxy.h"
#include "pool/credential.h"
#include "rsc/wire.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/raw_startd.h"

namespace kite::testing {
namespace {

namespace cred = kite::credentials;
namespace json = boost::json;
using pool::Message;
using pool::MsgType;

constexpr int kIdle = 1, kRunning = 2, kCompleted = 4, kHeld = 5;
constexpr double kWait = 15;  // seconds for anything the agent does at once

class PoolAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("pool-attack");
    dir_ = env_->dir();
    auto ca = cred::TestCa::Init(dir_ + "/ca", {.key = {cred::KeyAlgorithm::kEcP256}});
    ASSERT_TRUE(ca) << ca.error().ToString();
    ca_ = std::move(*ca);
    auto jane = ca_.IssueUserCredential("CN=Jane Doe", kEc);
    ASSERT_TRUE(jane);
    jane_ = std::move(*jane);
    env_->AddEnv("X509_USER_PROXY=" + Proxy("agent-proxy.pem"));
    env_->AddEnv("X509_CERT_DIR=" + ca_.trusted_dir());
  }

  void TearDown() override {
    if (::testing::Test::HasFailure()) std::fprintf(stderr, "agent.log:\n%s\n", AgentLog().c_str());
    env_.reset();
  }

  // The agent with its TLS listener on loopback and `local_slots` slots of its own.
  void StartAgent(int local_slots = 0, const std::string& extra = "") {
    ASSERT_TRUE(MakeDirs(env_->home(), 0700));
    WriteFile(env_->home() + "/config.toml",
              "[pool]\nlocal_slots = " + std::to_string(local_slots) +
                  "\nlocal_start = \"true\"\nlisten = \"127.0.0.1:0\"\n" + extra);
    env_->StartAgent();
    std::string path = env_->home() + "/pool.address";
    ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(path).empty(); }, 10)) << AgentLog();
    address_ = std::string(Trim(ReadFileOr(path)));
  }

  // A proxy of Jane's (limited if asked), saved 0600.
  std::string Proxy(const std::string& name, bool limited = false,
                    std::chrono::seconds lifetime = std::chrono::hours(12)) {
    auto p = cred::CreateProxy(jane_, {.lifetime = lifetime, .limited = limited});
    EXPECT_TRUE(p) << p.error().ToString();
    std::string path = dir_ + "/" + name;
    EXPECT_TRUE(cred::SaveProxyFile(path, p->credential));
    return path;
  }

  // `kite pool credential create`: its text and id.
  std::pair<std::string, std::string> Credential(const std::string& name, int slots = 1,
                                                 const std::string& lifetime = "1h") {
    std::string file = dir_ + "/" + name + ".credential";
    auto r = env_->Kite({"pool", "credential", "create", "--name", name, "--slots",
                         std::to_string(slots), "--lifetime", lifetime, "-o", file});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::smatch m;
    std::regex re("credential ([0-9a-f]{32}) for startd");
    EXPECT_TRUE(std::regex_search(r.err, m, re)) << r.err;
    return {std::string(Trim(ReadFileOr(file))), m.size() > 1 ? m[1].str() : ""};
  }

  std::unique_ptr<RawStartd> Dial(const std::string& pem) {
    auto s = RawStartd::DialTls(address_, pem);
    EXPECT_TRUE(s) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }

  // A raw client that joins as `name` with a credential of its own: welcomed.
  std::unique_ptr<RawStartd> Join(const std::string& name, std::string ad_changes = "") {
    auto [text, id] = Credential(name);
    auto s = Dial(Proxy(name + ".pem"));
    if (!s) return nullptr;
    auto hello = RawStartd::Hello(name, 1, text);
    if (!ad_changes.empty()) {
      std::string& ad = hello.slots[0].ad;
      ad = ad.substr(0, ad.size() - 1) + "; " + ad_changes + "]";
    }
    EXPECT_TRUE(s->Send(hello));
    auto w = s->Next(kWait);
    EXPECT_TRUE(w && w->msg.type == MsgType::kWelcome)
        << (w ? std::string(pool::MsgTypeName(w->msg.type)) + " " + w->msg.reason
              : w.error().ToString());
    return s;
  }

  // Sends hello and expects `refuse` with `why`, then the connection's end; the log says it.
  void ExpectHelloRefused(RawStartd& s, const Message& hello, const std::string& why) {
    ASSERT_TRUE(s.Send(hello));
    auto r = s.Next(kWait);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->msg.type, MsgType::kRefuse);
    EXPECT_NE(r->msg.reason.find(why), std::string::npos) << r->msg.reason;
    EXPECT_TRUE(s.ClosedWithin(kWait));
    EXPECT_NE(AgentLog().find(why), std::string::npos);
  }

  std::string AgentLog() { return ReadFileOr(env_->home() + "/agent.log"); }
  bool LogSays(const std::string& text, double seconds = kWait) {
    return WaitUntil([&] { return AgentLog().find(text) != std::string::npos; }, seconds);
  }

  // One attribute of a job, as `kite q -af` prints it ("" when undefined or unknown).
  std::string Attr(const std::string& job, const std::string& attr) {
    auto r = env_->Kite({"q", job, "-af", attr});
    std::string v(Trim(r.out));
    return v == "undefined" ? "" : v;
  }

  // A vanilla job running `myprog.sh` with `extra` submit commands; returns "C.0".
  std::string SubmitJob(const std::string& extra = "") {
    env_->Write("myprog.sh", "#!/bin/sh\necho the user's own program\n", 0755);
    env_->Write("in.dat", "input bytes\n");
    int c = env_->Submit(
        "universe = vanilla\nexecutable = myprog.sh\n"
        "transfer_input_files = in.dat\noutput = job.out\nerror = job.err\n" +
        extra + "queue\n");
    EXPECT_GT(c, 0);
    return std::to_string(c) + ".0";
  }

  static Message About(MsgType type, const Message& activate) {
    return Message{.type = type, .slot = activate.slot, .job = activate.job, .run = activate.run};
  }

  static inline const cred::IssueOptions kEc{.key = {cred::KeyAlgorithm::kEcP256}};
  std::unique_ptr<KiteEnv> env_;
  std::string dir_, address_;
  cred::TestCa ca_;
  cred::Credential jane_;
};

// Defect 2 and its generalisation: the user's proxy, full or limited, delegated or not, is not
// enough to join; nor a credential another agent made, one for another name, or slots beyond it.
TEST_F(PoolAttack, OnlyACredentialThisAgentIssuedLetsAStartdIn) {
  StartAgent();
  std::string job = SubmitJob();
  {
    auto s = Dial(Proxy("full.pem"));
    ASSERT_TRUE(s);
    ExpectHelloRefused(*s, RawStartd::Hello("rogue", 1, ""), "it presented no pool credential");
  }
  {
    // A limited proxy: refused in the handshake's wake, before its hello counts.
    auto s = Dial(Proxy("limited.pem", /*limited=*/true));
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->Send(RawStartd::Hello("rogue", 1, Credential("rogue").first)));
    auto r = s->Next(kWait);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->msg.type, MsgType::kRefuse);
    EXPECT_NE(r->msg.reason.find("limited proxy"), std::string::npos) << r->msg.reason;
  }
  {
    // Signed with a key that is not this agent's.
    pool::CredentialClaims forged{.kind = pool::CredentialKind::kStartd,
                                  .name = "rogue",
                                  .slots = 1,
                                  .issued = 1,
                                  .expires = int64_t{1} << 35,
                                  .id = std::string(32, 'f')};
    auto s = Dial(Proxy("p2.pem"));
    ASSERT_TRUE(s);
    ExpectHelloRefused(
        *s,
        RawStartd::Hello("rogue", 1,
                         pool::SignCredential(forged, std::string(pool::kCredentialKeyBytes, 'x'))),
        "was not issued by this agent");
  }
  {
    auto s = Dial(Proxy("p3.pem"));
    ASSERT_TRUE(s);
    ExpectHelloRefused(*s, RawStartd::Hello("desktop", 1, Credential("laptop").first),
                       "but its credential is for 'laptop'");
  }
  {
    auto s = Dial(Proxy("p4.pem"));
    ASSERT_TRUE(s);
    ExpectHelloRefused(*s, RawStartd::Hello("node2", 3, Credential("node2", 2).first),
                       "slot 'slot3@node2' is not one its credential allows");
  }
  {
    // The local startd's credential is good on the local socket only.
    auto local = ReadFileOr(env_->home() + "/pool/local.credential");
    if (!local.empty()) {
      auto s = Dial(Proxy("p5.pem"));
      ASSERT_TRUE(s);
      auto claims = pool::ParseCredential(local);
      ASSERT_TRUE(claims);
      ExpectHelloRefused(*s, RawStartd::Hello(claims->name, 1, local), "over the network");
    }
  }
  // Nothing of it reached the job: it waits, and no slot was ever listed.
  EXPECT_EQ(env_->JobStatus(job), kIdle);
  auto st = env_->Kite({"status", "-json"});
  EXPECT_EQ(std::string(Trim(st.out)), "[]") << st.out;
}

// Defect 3: trust is checked on every message, not only at the handshake. A credential that
// expires, or is revoked, while its startd is connected; a proxy that lapses.
TEST_F(PoolAttack, ACredentialThatExpiresOrIsRevokedIsRefusedOnItsNextMessage) {
  StartAgent();
  auto [text, id] = Credential("brief", 1, "3s");
  auto s = Dial(Proxy("brief.pem"));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Send(RawStartd::Hello("brief", 1, text)));
  auto w = s->Next(kWait);
  ASSERT_TRUE(w && w->msg.type == MsgType::kWelcome);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  std::string job = SubmitJob();
  // Its next message: refused, told why, disconnected; the job never went to it.
  ASSERT_TRUE(s->Send(Message{.type = MsgType::kSlot,
                              .slot = "slot1@brief",
                              .ad = RawStartd::SlotAd("slot1@brief", "brief")}));
  auto r = s->Until(MsgType::kRefuse, kWait);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_NE(r->msg.reason.find("expired at"), std::string::npos) << r->msg.reason;
  EXPECT_TRUE(s->ClosedWithin(kWait));
  EXPECT_EQ(env_->JobStatus(job), kIdle);

  // Revoked: shown out at once, and refused when it comes back.
  auto [text2, id2] = Credential("revoked");
  auto t = Dial(Proxy("revoked.pem"));
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Send(RawStartd::Hello("revoked", 1, text2)));
  auto in = t->Next(kWait);
  ASSERT_TRUE(in && in->msg.type == MsgType::kWelcome);
  auto rv = env_->Kite({"pool", "credential", "revoke", id2});
  EXPECT_EQ(rv.exit_code, 0) << rv.out << rv.err;
  auto shown = t->Until(MsgType::kRefuse, kWait);
  ASSERT_TRUE(shown) << shown.error().ToString();
  EXPECT_NE(shown->msg.reason.find("was revoked"), std::string::npos) << shown->msg.reason;
  auto again = Dial(Proxy("revoked2.pem"));
  ASSERT_TRUE(again);
  ExpectHelloRefused(*again, RawStartd::Hello("revoked", 1, text2), "was revoked");
}

TEST_F(PoolAttack, AStartdWhoseProxyLapsesIsDisconnected) {
  StartAgent();
  auto [text, id] = Credential("lapse");
  auto s = Dial(Proxy("lapse.pem", false, std::chrono::seconds(4)));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Send(RawStartd::Hello("lapse", 1, text)));
  auto w = s->Next(kWait);
  ASSERT_TRUE(w && w->msg.type == MsgType::kWelcome);
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  (void)s->Send(Message{.type = MsgType::kSlot,
                        .slot = "slot1@lapse",
                        .ad = RawStartd::SlotAd("slot1@lapse", "lapse")});
  EXPECT_TRUE(s->ClosedWithin(kWait));
  EXPECT_TRUE(LogSays("the proxy it presented expired at"));
}

// Defects 4 and 5: a startd speaks only for the runs it was given. Another one's `output`,
// `ended` and `rsc` for them are refused and logged; the real run ends as it should.
TEST_F(PoolAttack, AStartdCannotEndFeedOrReadThroughAnotherStartdsRun) {
  StartAgent();
  auto owner = Join("owner");
  // The hijacker's slot never matches: it only talks about the owner's run.
  auto hijacker = Join("hijacker", "Start = false; Requirements = false");
  ASSERT_TRUE(owner && hijacker);
  env_->Write("secret.txt", "only for the job\n");
  std::string job = SubmitJob("want_remote_io = true\n");
  auto act = owner->Until(MsgType::kActivate, kWait);
  ASSERT_TRUE(act) << act.error().ToString();
  Message a = act->msg;
  EXPECT_EQ(a.slot, "slot1@owner");
  // Run ids are not to be guessed: QDate-C.P-N and 128 random bits.
  EXPECT_TRUE(std::regex_match(a.run, std::regex("[0-9]+-" + job + "-1-[0-9a-f]{32}"))) << a.run;
  ASSERT_TRUE(owner->Until(MsgType::kGo, kWait));
  ASSERT_TRUE(owner->Send(About(MsgType::kStarted, a)));
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(job) == kRunning; }, kWait));

  Message out = About(MsgType::kOutput, a);
  out.path = "_kite_stdout";
  out.last = true;
  ASSERT_TRUE(hijacker->Send(out, "FORGED OUTPUT\n"));
  Message ended = About(MsgType::kEnded, a);
  ended.slot = "slot1@hijacker";
  ended.exit.code = 42;
  ASSERT_TRUE(hijacker->Send(ended));
  rsc::Request open{.seq = 900001, .op = rsc::Op::kOpen, .path = dir_ + "/secret.txt"};
  Message call = About(MsgType::kRsc, a);
  call.chan = 777;
  ASSERT_TRUE(hijacker->Send(call, rsc::Encode(open)));
  auto reply = hijacker->Until(MsgType::kRscReply, kWait);
  ASSERT_TRUE(reply) << reply.error().ToString();
  auto decoded = rsc::DecodeReply(reply->body);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->error, EACCES);
  EXPECT_TRUE(LogSays("refused ended from startd 'hijacker'"));
  EXPECT_TRUE(LogSays("refused output from startd 'hijacker'"));
  EXPECT_TRUE(LogSays("refused rsc from startd 'hijacker'"));
  EXPECT_EQ(env_->JobStatus(job), kRunning);
  EXPECT_EQ(ReadFileOr(dir_ + "/job.out"), "");

  // The owner's own end is the job's.
  Message mine = About(MsgType::kOutput, a);
  mine.path = "_kite_stdout";
  mine.last = true;
  ASSERT_TRUE(owner->Send(mine, "the real output\n"));
  ASSERT_TRUE(owner->Send(About(MsgType::kEnded, a)));
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(job) == kCompleted; }, kWait));
  EXPECT_EQ(ReadFileOr(dir_ + "/job.out"), "the real output\n");
  auto code = env_->Kite({"history", job, "-af", "ExitCode"});
  EXPECT_EQ(std::string(Trim(code.out)), "0") << code.out << code.err;
}

// Defect 1: a startd sends a "checkpoint" for a job that takes none, named after its executable.
// Nothing is stored, the run is stopped, and the program the job runs next is the user's.
TEST_F(PoolAttack, CheckpointFilesNeverReplaceTheExecutable) {
  StartAgent();
  auto rogue = Join("rogue");
  ASSERT_TRUE(rogue);
  std::string job = SubmitJob();
  auto act = rogue->Until(MsgType::kActivate, kWait);
  ASSERT_TRUE(act);
  Message a = act->msg;
  ASSERT_TRUE(rogue->Until(MsgType::kGo, kWait));
  ASSERT_TRUE(rogue->Send(About(MsgType::kStarted, a)));
  Message piece = About(MsgType::kOutput, a);
  piece.path = "myprog.sh";
  piece.last = true;
  piece.checkpoint = true;
  piece.mode = 0755;
  ASSERT_TRUE(rogue->Send(piece, "#!/bin/sh\necho pwned > /tmp/kite-pwned\n"));
  ASSERT_TRUE(rogue->Send(About(MsgType::kCheckpointed, a)));
  auto vacate = rogue->Until(MsgType::kVacate, kWait);
  ASSERT_TRUE(vacate) << vacate.error().ToString();
  EXPECT_NE(vacate->msg.reason.find("a checkpoint for a job that takes none"), std::string::npos)
      << vacate->msg.reason;
  EXPECT_TRUE(LogSays("the job takes no checkpoints"));
  EXPECT_EQ(Attr(job, "NumCheckpoints"), "");
  std::string spool = env_->home() + "/spool/checkpoints/" + job;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(spool, ec))
    ADD_FAILURE() << "stored: " << e.path();
  // The job's next start (the same slot, after it said the run stopped) gets the user's program.
  ASSERT_TRUE(rogue->Send(About(MsgType::kVacated, a)));
  auto again = rogue->Until(MsgType::kActivate, 30);
  ASSERT_TRUE(again) << again.error().ToString();
  std::string program;
  for (;;) {
    auto f = rogue->Next(kWait);
    ASSERT_TRUE(f) << f.error().ToString();
    if (f->msg.type == MsgType::kInput && f->msg.path == "myprog.sh") program += f->body;
    if (f->msg.type == MsgType::kGo) break;
  }
  EXPECT_EQ(program, "#!/bin/sh\necho the user's own program\n");
}

// A job that does checkpoint: only the names it allows are kept, never its executable's; what
// is kept goes back byte for byte, and only while it is what was stored for this job (defects 1,
// 6 and 8).
TEST_F(PoolAttack, AStoredCheckpointGoesBackOnlyAsItWasStored) {
  StartAgent();
  auto s = Join("node");
  ASSERT_TRUE(s);
  // The executable among the names it allows: still never a checkpoint's.
  std::string job =
      SubmitJob("checkpoint_exit_code = 85\ntransfer_checkpoint_files = state.dat, myprog.sh\n");
  auto a = s->Until(MsgType::kActivate, kWait);
  ASSERT_TRUE(a);
  ASSERT_TRUE(s->Until(MsgType::kGo, kWait));
  ASSERT_TRUE(s->Send(About(MsgType::kStarted, a->msg)));
  auto checkpoint = [&](const std::string& name, const std::string& bytes) {
    Message p = About(MsgType::kOutput, a->msg);
    p.path = name;
    p.last = true;
    p.checkpoint = true;
    EXPECT_TRUE(s->Send(p, bytes));
    EXPECT_TRUE(s->Send(About(MsgType::kCheckpointed, a->msg)));
    auto ack = s->Until(MsgType::kAck, kWait);
    EXPECT_TRUE(ack && ack->msg.checkpoint);
  };
  checkpoint("myprog.sh", "#!/bin/sh\necho replaced\n");
  EXPECT_TRUE(LogSays("would take the place of the job's executable or an input file"));
  EXPECT_EQ(Attr(job, "NumCheckpoints"), "");
  checkpoint("other.dat", "x");
  EXPECT_TRUE(LogSays("is not among the job's transfer_checkpoint_files"));
  EXPECT_EQ(Attr(job, "NumCheckpoints"), "");
  checkpoint("state.dat", "step 41\n");
  ASSERT_TRUE(WaitUntil([&] { return Attr(job, "NumCheckpoints") == "1"; }, kWait));
  EXPECT_EQ(Attr(job, "CheckpointDigest").size(), 64u);  // hex SHA-256
  EXPECT_EQ(Attr(job, "CheckpointStartd"), "node");

  // Vacated: the next start has it back, as it was.
  auto restart = [&]() -> std::string {
    EXPECT_TRUE(s->Send(About(MsgType::kVacated, a->msg)));
    auto next = s->Until(MsgType::kActivate, 30);
    if (!next) return "(no activate: " + next.error().ToString() + ")";
    a = std::move(next);
    std::string state;
    for (;;) {
      auto f = s->Next(kWait);
      if (!f) return "(" + f.error().ToString() + ")";
      if (f->msg.type == MsgType::kInput && f->msg.path == "state.dat") state += f->body;
      if (f->msg.type == MsgType::kGo) return state;
      if (f->msg.type == MsgType::kVacate) {
        EXPECT_TRUE(s->Send(About(MsgType::kVacated, a->msg)));  // the slot is free again
        return "(vacated: " + f->msg.reason + ")";
      }
    }
  };
  EXPECT_EQ(restart(), "step 41\n");
  ASSERT_TRUE(s->Send(About(MsgType::kStarted, a->msg)));

  // Its bytes changed in the spool: held with the reason, never restored.
  std::string stored = env_->home() + "/spool/checkpoints/" + job + "/ckpt.1/state.dat";
  ASSERT_TRUE(FileExists(stored));
  WriteFile(stored, "step 99\n", 0600);
  std::string got = restart();
  EXPECT_TRUE(WaitUntil([&] { return env_->JobStatus(job) == kHeld; }, kWait)) << got;
  EXPECT_NE(Attr(job, "HoldReason").find("digest differs"), std::string::npos)
      << Attr(job, "HoldReason");

  // A link in its place (to a secret of the desktop's): held with the reason, not sent, not a
  // restart loop.
  ::unlink(stored.c_str());
  ASSERT_EQ(::symlink("/etc/passwd", stored.c_str()), 0);
  auto rel = env_->Kite({"release", job});
  EXPECT_EQ(rel.exit_code, 0) << rel.out << rel.err;
  EXPECT_TRUE(WaitUntil(
      [&] { return Attr(job, "HoldReason").find("not a regular file") != std::string::npos; },
      kWait))
      << Attr(job, "HoldReason");
  EXPECT_EQ(env_->JobStatus(job), kHeld);
  // No restart loop: it stays held, and only the two runs whose program started count as starts
  // (the two refused restores never got to `go`).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(env_->JobStatus(job), kHeld);
  EXPECT_EQ(Attr(job, "NumJobStarts"), "2");
}

// An image a site wrote is the program's whole memory: by default it is never restored on the
// desktop's own slot, and the job waits for a glide-in, saying why.
TEST_F(PoolAttack, ASitesImageIsNotRestoredOnTheDesktop) {
  StartAgent(/*local_slots=*/1);
  auto site = Join("site");
  ASSERT_TRUE(site);
  env_->Write("sim.sh", "#!/bin/sh\nsleep 600\n", 0755);
  int c = env_->Submit(
      "universe = vanilla\nexecutable = sim.sh\ncheckpoint = transparent\n"
      "requirements = TARGET.Machine == \"site\"\nqueue\n");
  std::string job = std::to_string(c) + ".0";
  auto a = site->Until(MsgType::kActivate, kWait);
  ASSERT_TRUE(a) << a.error().ToString();
  ASSERT_TRUE(site->Until(MsgType::kGo, kWait));
  ASSERT_TRUE(site->Send(About(MsgType::kStarted, a->msg)));
  Message img = About(MsgType::kOutput, a->msg);
  img.path = "kite_ckpt.img";
  img.last = true;
  img.checkpoint = true;
  ASSERT_TRUE(site->Send(img, "KITECKP1 whatever the site wants to run"));
  ASSERT_TRUE(site->Send(About(MsgType::kCheckpointed, a->msg)));
  ASSERT_TRUE(WaitUntil([&] { return Attr(job, "NumCheckpoints") == "1"; }, kWait));
  EXPECT_EQ(Attr(job, "CheckpointFromSite"), "true");
  auto edit = env_->Kite({"qedit", job, "Requirements", "true"});
  EXPECT_EQ(edit.exit_code, 0) << edit.out << edit.err;
  ASSERT_TRUE(site->Send(About(MsgType::kVacated, a->msg)));
  ASSERT_TRUE(site->Send(Message{.type = MsgType::kBye, .reason = "leaving"}));
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(job) == kIdle; }, kWait));
  // The desktop's own slot is there and free, and the job's requirements (edited above) allow
  // any machine.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = env_->Kite({"status", "-af", "Name", "State"});
        return st.out.find("Unclaimed") != std::string::npos &&
               st.out.find("@site") == std::string::npos;
      },
      kWait))
      << env_->Kite({"status"}).out;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // several negotiations' time
  EXPECT_EQ(env_->JobStatus(job), kIdle) << "the site's image went to the desktop's slot";
  auto why = env_->Kite({"q", "-better-analyze", job});
  EXPECT_NE(why.out.find("local_restore_site_checkpoints"), std::string::npos) << why.out;
}

// The probes' malformed frames (poolfuzz.py): each ends its connection with the reason logged;
// the agent goes on serving.
TEST_F(PoolAttack, MalformedFramesEndTheirConnectionOnly) {
  StartAgent();
  std::string garbage(4096, '\x5a');
  std::string huge("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
  std::string big_header("\x00\x10\x00\x01\x00\x00\x00\x00", 8);
  std::string deep = "[" + std::string(100000, '[') + std::string(100001, ']');
  std::string deep_frame = std::string("\x00\x03\x0d\x42\x00\x00\x00\x00", 8) + deep;
  for (const std::string& bytes :
       {garbage, huge, big_header, deep_frame,
        pool::EncodeFrame(Message{
            .type = MsgType::kActivate, .slot = "x", .job = "1.0", .run = "r", .ad = "[]"})}) {
    auto s = Dial(Proxy("fz.pem"));
    ASSERT_TRUE(s);
    (void)s->SendRaw(bytes);
    EXPECT_TRUE(s->ClosedWithin(kWait));
  }
  auto st = env_->Kite({"q"});
  EXPECT_EQ(st.exit_code, 0) << st.out << st.err;
  EXPECT_TRUE(LogSays("a startd was dropped before its hello"));
}

}  // namespace
}  // namespace kite::testing
