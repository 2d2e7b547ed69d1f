// Glide-ins join the personal pool over mutual TLS (docs/pool.md, "Trust"): a real agent with no
// local slots listens on loopback with the user's proxy, real kite-startd processes dial it with
// real certificates from a test CA and a pool credential from the agent. The user's own startd runs
// a vanilla job whose output comes back byte-identical; a startd with no proxy, an expired one, one
// from another CA or of another user is refused, never gets a job, and the agent's log says why; a
// startd told another agent identity refuses the agent.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

#include "common/files.h"
#include "credentials/ca.h"
#include "credentials/proxy.h"
#include "tests/fixtures/kite_env.h"

extern char** environ;

namespace kite::testing {
namespace {

namespace cred = kite::credentials;
namespace json = boost::json;

constexpr int kIdle = 1, kCompleted = 4;

// A vanilla job that copies its input to its output, byte for byte, and says where it ran.
constexpr const char* kJob =
    "universe = vanilla\n"
    "executable = copy.sh\n"
    "arguments = in.dat out.dat\n"
    "transfer_input_files = in.dat\n"
    "should_transfer_files = YES\n"
    "when_to_transfer_output = ON_EXIT\n"
    "output = job.out\n"
    "error = job.err\n"
    "queue\n";

class PoolTls : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("pool-tls");
    dir_ = env_->dir();
    auto ca = cred::TestCa::Init(dir_ + "/ca", {.key = {cred::KeyAlgorithm::kEcP256}});
    ASSERT_TRUE(ca) << ca.error().ToString();
    ca_ = std::move(*ca);
    auto jane = ca_.IssueUserCredential("CN=Jane Doe", kEc);
    ASSERT_TRUE(jane);
    jane_ = std::move(*jane);
    jane_dn_ = jane_.leaf().Subject();
    // The agent presents the user's proxy; each glide-in gets a proxy of its own.
    agent_proxy_ = SaveProxy(jane_, "agent-proxy.pem");
    env_->AddEnv("X509_USER_PROXY=" + agent_proxy_);
    env_->AddEnv("X509_CERT_DIR=" + ca_.trusted_dir());
  }

  void TearDown() override {
    for (pid_t pid : startds_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "agent.log:\n%s\n", ReadFileOr(env_->home() + "/agent.log").c_str());
    }
    env_.reset();
  }

  // Starts the agent (no local slots, the TLS listener on a loopback port) and waits for the
  // address it wrote.
  void StartAgent(const std::string& extra_pool_config = "") {
    ASSERT_TRUE(MakeDirs(env_->home(), 0700));
    WriteFile(env_->home() + "/config.toml",
              "[pool]\nlocal_slots = 0\nlisten = \"127.0.0.1:0\"\n" + extra_pool_config);
    env_->StartAgent();
    WaitForAddress(10);
  }
  void WaitForAddress(double seconds) {
    std::string path = env_->home() + "/pool.address";
    ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(path).empty(); }, seconds))
        << ReadFileOr(env_->home() + "/agent.log");
    address_ = ReadFileOr(path);
    ASSERT_EQ(address_.back(), '\n');
    address_.pop_back();
    ASSERT_TRUE(address_.starts_with("127.0.0.1:")) << address_;
  }

  // A proxy signed by `issuer`, saved as DIR/NAME (0600).
  std::string SaveProxy(const cred::Credential& issuer, const std::string& name,
                        std::chrono::seconds lifetime = std::chrono::hours(12)) {
    auto p = cred::CreateProxy(issuer, {.lifetime = lifetime});
    EXPECT_TRUE(p) << p.error().ToString();
    std::string path = dir_ + "/" + name;
    EXPECT_TRUE(cred::SaveProxyFile(path, p->credential));
    return path;
  }

  struct Startd {
    pid_t pid = 0;
    std::string name, work, log;
  };
  // A real kite-startd dialling the agent over TLS with `proxy`, trusting the test CA.
  // It presents a pool credential the agent issued for it (kite pool credential create).
  Startd StartStartd(const std::string& name, const std::string& proxy,
                     const std::string& agent_identity) {
    Startd s{0, name, dir_ + "/work-" + name, dir_ + "/" + name + ".log"};
    std::string credential = dir_ + "/" + name + ".credential";
    auto issued = env_->Kite(
        {"pool", "credential", "create", "--name", name, "--slots", "2", "-o", credential});
    EXPECT_EQ(issued.exit_code, 0) << issued.out << issued.err;
    std::vector<std::string> args = {BinDir() + "/kite-startd",
                                     "--credential",
                                     credential,
                                     "--agent",
                                     "tls:" + address_,
                                     "--agent-identity",
                                     agent_identity,
                                     "--proxy",
                                     proxy,
                                     "--ca-dir",
                                     ca_.trusted_dir(),
                                     "--name",
                                     name,
                                     "--slots",
                                     "2",
                                     "--work",
                                     s.work,
                                     "--update-interval",
                                     "1",
                                     "--log",
                                     s.log};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    std::string err = dir_ + "/" + name + ".stderr";
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = posix_spawn(&s.pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << strerror(rc);
    startds_.push_back(s.pid);
    return s;
  }

  // The startd's exit code once it has exited, -1 while it runs.
  int ExitCode(const Startd& s) {
    if (exited_.contains(s.pid)) return exited_[s.pid];
    int status = 0;
    if (::waitpid(s.pid, &status, WNOHANG) != s.pid) return -1;
    std::erase(startds_, s.pid);
    return exited_[s.pid] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // The names of the slots `kite status -json` lists.
  std::vector<std::string> SlotNames() {
    auto r = env_->Kite({"status", "-json"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::vector<std::string> names;
    boost::system::error_code ec;
    auto v = json::parse(r.out, ec);
    if (ec || !v.is_array()) {
      ADD_FAILURE() << "kite status -json: " << r.out;
      return names;
    }
    for (auto& ad : v.as_array()) {
      if (auto* n = ad.as_object().if_contains("Name"); n && n->is_string())
        names.emplace_back(n->as_string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string AgentLog() { return ReadFileOr(env_->home() + "/agent.log"); }
  // The agent's log lines that let a startd in.
  std::vector<std::string> LetIn() {
    std::vector<std::string> lines;
    std::istringstream log(AgentLog());
    for (std::string line; std::getline(log, line);)
      if (line.find("agent: pool: a startd from 127.0.0.1:") != std::string::npos)
        lines.push_back(line);
    return lines;
  }

  // Submits the copy job with `size` random bytes of input; returns its id ("C.0").
  std::string SubmitCopyJob(size_t size) {
    std::mt19937 rng(42);
    input_.resize(size);
    for (auto& c : input_) c = static_cast<char>(rng());
    env_->Write("in.dat", input_);
    env_->Write("copy.sh", "#!/bin/sh\ncp \"$1\" \"$2\" && echo copied on \"$_CONDOR_SLOT\"\n",
                0755);
    int cluster = env_->Submit(kJob);
    EXPECT_GT(cluster, 0);
    return std::to_string(cluster) + ".0";
  }

  // A startd the agent refused: the refusal is logged with `reason`, its slots never appear, the
  // idle job never runs there and its work directory holds no sandbox.
  void ExpectRefused(const Startd& s, const std::string& reason) {
    std::string refused = "agent: pool: refused a startd from 127.0.0.1:";
    EXPECT_TRUE(WaitUntil(
        [&] {
          std::string log = AgentLog();
          return log.find(refused) != std::string::npos && log.find(reason) != std::string::npos;
        },
        15))
        << "wanted '" << refused << "...: ..." << reason << "'";
    // Long enough for a startd that got in to advertise (it does at once) and take the job.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_EQ(SlotNames(), std::vector<std::string>{});
    EXPECT_EQ(env_->JobStatus(job_), kIdle);
    EXPECT_EQ(LetIn(), std::vector<std::string>{});
    std::error_code ec;
    size_t sandboxes = 0;
    for (auto& e : std::filesystem::directory_iterator(s.work, ec))
      if (e.is_directory()) ++sandboxes;
    EXPECT_EQ(sandboxes, 0u) << s.work;
    EXPECT_FALSE(FileExists(dir_ + "/out.dat"));
  }

  static inline const cred::IssueOptions kEc{.key = {cred::KeyAlgorithm::kEcP256}};
  std::unique_ptr<KiteEnv> env_;
  std::string dir_;
  cred::TestCa ca_;
  cred::Credential jane_;
  std::string jane_dn_, agent_proxy_, address_, input_, job_;
  std::vector<pid_t> startds_;
  std::map<pid_t, int> exited_;
};

TEST_F(PoolTls, TheUsersGlideinAdvertisesAndRunsAVanillaJobWithItsFiles) {
  StartAgent();
  auto s = StartStartd("glide-ok", SaveProxy(jane_, "glidein.pem"), jane_dn_);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return SlotNames() == std::vector<std::string>{"slot1@glide-ok", "slot2@glide-ok"};
      },
      15))
      << ReadFileOr(s.log);
  auto in = LetIn();
  ASSERT_EQ(in.size(), 1u) << AgentLog();
  EXPECT_TRUE(in[0].ends_with(" speaks for " + jane_dn_)) << in[0];
  job_ = SubmitCopyJob(3 << 20);  // several frames' worth each way
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(job_) == kCompleted; }, 60))
      << ReadFileOr(s.log);
  std::string out = ReadFileOr(dir_ + "/out.dat", "(none)");
  EXPECT_EQ(out.size(), input_.size());
  EXPECT_TRUE(out == input_) << "the output differs from the input";
  EXPECT_TRUE(ReadFileOr(dir_ + "/job.out").starts_with("copied on slot"))
      << ReadFileOr(dir_ + "/job.out");
  auto q = env_->Kite({"history", job_, "-af", "LastRemoteHost"});
  EXPECT_NE(q.out.find("@glide-ok"), std::string::npos) << q.out << q.err;
  EXPECT_EQ(ExitCode(s), -1);  // still serving
}

TEST_F(PoolTls, AStartdWithoutAProxyIsRefused) {
  StartAgent();
  job_ = SubmitCopyJob(1000);
  auto s = StartStartd("glide-none", dir_ + "/no-such-proxy.pem", jane_dn_);
  ExpectRefused(s, "it presented no certificate");
  EXPECT_NE(ReadFileOr(s.log).find("dialing the agent without a credential"), std::string::npos)
      << ReadFileOr(s.log);
}

TEST_F(PoolTls, AStartdWithAnExpiredProxyIsRefused) {
  StartAgent();
  job_ = SubmitCopyJob(1000);
  std::string proxy = SaveProxy(jane_, "expired.pem", std::chrono::seconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  auto s = StartStartd("glide-expired", proxy, jane_dn_);
  ExpectRefused(s, "expired at");
}

TEST_F(PoolTls, AStartdWithAProxyFromAnotherCaIsRefused) {
  StartAgent();
  job_ = SubmitCopyJob(1000);
  // The same DN as the user's, from a CA the agent does not trust.
  auto rogue = cred::TestCa::Init(dir_ + "/rogue-ca", {.subject = "/O=Grid/OU=Kite/CN=Rogue CA",
                                                       .key = {cred::KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(rogue) << rogue.error().ToString();
  auto fake = rogue->IssueUserCredential("CN=Jane Doe", kEc);
  ASSERT_TRUE(fake);
  ASSERT_EQ(fake->leaf().Subject(), jane_dn_);
  auto s = StartStartd("glide-rogue", SaveProxy(*fake, "rogue.pem"), jane_dn_);
  ExpectRefused(s, "untrusted chain");
}

TEST_F(PoolTls, AnotherUsersStartdIsRefusedAndTold) {
  StartAgent();
  job_ = SubmitCopyJob(1000);
  auto john = ca_.IssueUserCredential("CN=John Roe", kEc);
  ASSERT_TRUE(john);
  auto s = StartStartd("glide-john", SaveProxy(*john, "john.pem"), jane_dn_);
  ExpectRefused(s, "its identity " + john->leaf().Subject() + " is neither this user's (" +
                       jane_dn_ + ") nor in [pool] allow_identities");
  // Past the handshake the agent tells it why; it leaves as on any refuse.
  ASSERT_TRUE(WaitUntil([&] { return ExitCode(s) != -1; }, 10)) << ReadFileOr(s.log);
  EXPECT_EQ(ExitCode(s), 2);
  EXPECT_NE(ReadFileOr(s.log).find("the agent refused this startd: its identity"),
            std::string::npos)
      << ReadFileOr(s.log);
}

TEST_F(PoolTls, AnIdentityInAllowIdentitiesIsLetIn) {
  auto robot = ca_.IssueUserCredential("CN=Pool Robot", kEc);
  ASSERT_TRUE(robot);
  StartAgent("allow_identities = [\"" + robot->leaf().Subject() + "\"]\n");
  auto s = StartStartd("glide-robot", SaveProxy(*robot, "robot.pem"), jane_dn_);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return SlotNames() == std::vector<std::string>{"slot1@glide-robot", "slot2@glide-robot"};
      },
      15))
      << ReadFileOr(s.log);
  auto in = LetIn();
  ASSERT_EQ(in.size(), 1u) << AgentLog();
  EXPECT_TRUE(in[0].ends_with(" speaks for " + robot->leaf().Subject())) << in[0];
}

TEST_F(PoolTls, AStartdToldAnotherAgentIdentityRefusesTheAgent) {
  StartAgent();
  job_ = SubmitCopyJob(1000);
  const std::string other = "/O=Grid/OU=Kite/CN=Somebody Else";
  auto s = StartStartd("glide-picky", SaveProxy(jane_, "glidein.pem"), other);
  ASSERT_TRUE(WaitUntil([&] { return ExitCode(s) != -1; }, 15)) << ReadFileOr(s.log);
  EXPECT_EQ(ExitCode(s), 2);
  EXPECT_NE(ReadFileOr(s.log).find("refusing the agent: tls:" + address_ + " speaks for " +
                                   jane_dn_ + ", not for " + other),
            std::string::npos)
      << ReadFileOr(s.log);
  EXPECT_EQ(SlotNames(), std::vector<std::string>{});
  EXPECT_EQ(env_->JobStatus(job_), kIdle);
  EXPECT_FALSE(FileExists(dir_ + "/out.dat"));
}

// A proxy of another CA where the agent looks (a shared machine, an old proxy): `kite glidein
// submit`, `kite status` and `kite q -analyze` say why glide-ins cannot join, which CA, and how to
// fix it; once a good proxy is there, `kite glidein submit` has the agent look again at once.
TEST_F(PoolTls, AProxyOfAnotherCaIsNamedAsTheReasonAndAGoodOneIsTakenAtOnce) {
  auto other = cred::TestCa::Init(dir_ + "/other-ca", {.key = {cred::KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(other);
  auto stranger = other->IssueUserCredential("CN=Jane Elsewhere", kEc);
  ASSERT_TRUE(stranger);
  std::string foreign = SaveProxy(*stranger, "foreign-proxy.pem");
  ASSERT_TRUE(MakeDirs(env_->home(), 0700));
  WriteFile(env_->home() + "/config.toml",
            "[pool]\nlocal_slots = 0\nlisten = \"127.0.0.1:0\"\nproxy = \"" + foreign + "\"\n");
  env_->StartAgent();
  const std::string why = "proxy " + foreign +
                          ": untrusted chain: /O=Grid/OU=Kite/CN=Jane Elsewhere is issued by " +
                          other->certificate().Subject() + ", which is not a CA trusted in ";
  auto submit = env_->Kite(
      {"glidein", "submit", "--resource", "kite 127.0.0.1:9/fork", "--proxy", agent_proxy_});
  EXPECT_NE(submit.exit_code, 0);
  EXPECT_NE(submit.err.find("glide-ins cannot join this agent's pool: " + why), std::string::npos)
      << submit.err;
  EXPECT_NE(submit.err.find("kite proxy init"), std::string::npos) << submit.err;
  EXPECT_EQ(env_->Kite({"q", "-af", "ClusterId"}).out, "") << "nothing was queued";
  EXPECT_NE(env_->Kite({"status"}).out.find("Glide-ins cannot join: " + why), std::string::npos)
      << env_->Kite({"status"}).out;
  int c = env_->Submit("universe = vanilla\nexecutable = /bin/true\nqueue\n");
  auto analyze = env_->Kite({"q", "-better-analyze", std::to_string(c)});
  EXPECT_NE(analyze.out.find("Glide-ins cannot join the pool: " + why), std::string::npos)
      << analyze.out;
  // A good proxy in its place: the next `kite glidein submit` finds the listener up, no wait.
  ASSERT_TRUE(cred::SaveProxyFile(foreign, cred::CreateProxy(jane_, {})->credential));
  submit = env_->Kite({"glidein", "submit", "--resource", "kite 127.0.0.1:9/fork", "--proxy",
                       agent_proxy_, "--count", "1"});
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_FALSE(ReadFileOr(env_->home() + "/pool.address").empty());
  EXPECT_NE(env_->Kite({"status"}).out.find("Glide-ins dial tls:127.0.0.1:"), std::string::npos);
  env_->Kite({"rm", "-all"});
}

// Without a usable proxy the listener stays off (said once), and comes up when the proxy appears.
TEST_F(PoolTls, TheListenerComesUpWhenTheProxyAppears) {
  std::string later = dir_ + "/later-proxy.pem";
  env_->AddEnv("X509_USER_PROXY=" + later);
  ASSERT_TRUE(MakeDirs(env_->home(), 0700));
  WriteFile(env_->home() + "/config.toml", "[pool]\nlocal_slots = 0\n");
  env_->StartAgent();
  ASSERT_TRUE(WaitUntil(
      [&] {
        return AgentLog().find("no TLS listener for glide-ins: proxy " + later) !=
               std::string::npos;
      },
      10))
      << AgentLog();
  EXPECT_FALSE(FileExists(env_->home() + "/pool.address"));
  EXPECT_EQ(env_->Kite({"status", "-json"}).exit_code, 0);  // the agent serves meanwhile
  ASSERT_TRUE(cred::SaveProxyFile(later, cred::CreateProxy(jane_, {})->credential));
  WaitForAddress(40);  // looked at again every 30 s
  auto s = StartStartd("glide-late", SaveProxy(jane_, "glidein.pem"), jane_dn_);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return SlotNames() == std::vector<std::string>{"slot1@glide-late", "slot2@glide-late"};
      },
      15))
      << ReadFileOr(s.log);
  // Said once, not at every look.
  std::string log = AgentLog();
  EXPECT_EQ(log.find("no TLS listener"), log.rfind("no TLS listener")) << log;
  env_->StopAgent();
  EXPECT_FALSE(FileExists(env_->home() + "/pool.address"));  // removed when it stops
}

}  // namespace
}  // namespace kite::testing
