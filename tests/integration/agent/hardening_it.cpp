// The attack on Kite, replayed against a real agent: each defect as the probe found it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/fixtures/flood.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

namespace json = boost::json;

std::string Sock(const KiteEnv& env) {
  return env.home() + "/agent.sock";
}

// A fresh cluster id from the raw API.
int NewCluster(const KiteEnv& env) {
  auto reply = RawUnixRequest(Sock(env), HttpPost("/v1/cluster", "{}"));
  auto at = reply.find("\"cluster\":");
  return at == std::string::npos ? 0 : std::stoi(reply.substr(at + 10));
}

std::string RawSubmit(const KiteEnv& env, const json::array& common, const json::array& procs) {
  json::object body{{"cluster", NewCluster(env)}, {"common", common}, {"procs", procs}};
  return RawUnixRequest(Sock(env), HttpPost("/v1/submit", json::serialize(body)));
}

size_t Queued(const KiteEnv& env) {
  auto r = env.Kite({"q", "-json"});
  if (r.exit_code != 0) return 0;
  return json::parse(r.out).as_array().size();
}

bool SleepsRunning(const std::string& marker) {
  auto r = RunCommand({"pgrep", "-f", marker});
  return r.exit_code == 0;
}

TEST(Hardening, ReservedAttributeNamesAreRefusedAtSubmitWithTheReason) {
  KiteEnv env("harden-names");
  env.StartAgent();
  for (const char* name : {"error", "true", "false", "undefined", "is", "isnt"}) {
    env.Write("bad.sub", std::string("executable = /bin/true\n+") + name + " = 1\nqueue 2\n");
    auto r = env.Kite({"submit", "bad.sub"});
    EXPECT_NE(r.exit_code, 0) << name;
    EXPECT_NE(r.err.find("reserved word"), std::string::npos) << name << ": " << r.err;
  }
  EXPECT_EQ(Queued(env), 0u);
}

TEST(Hardening, NamesTheRawApiCannotStoreAreRefusedAndNothingIsLost) {
  KiteEnv env("harden-raw");
  env.StartAgent();
  int good = env.Submit(
      "universe = local\nexecutable = /bin/sleep\narguments = 300\n"
      "+kite_marker = \"harden-raw\"\nqueue 2\n");
  ASSERT_GT(good, 0);
  for (const char* name : {"a\nb", "a b", "a=b", "a[", "caf\xc3\xa9", "", "error"}) {
    json::array common{json::array{"Cmd", "\"/bin/true\""}, json::array{name, "1"}};
    auto reply = RawSubmit(env, common, json::array{json::array{}});
    EXPECT_NE(reply.find("HTTP/1.1 400"), std::string::npos) << name << "\n" << reply;
    EXPECT_NE(reply.find("attribute name"), std::string::npos) << reply;
  }
  // States the agent cannot handle, duplicate and negative ProcIds.
  json::array common{json::array{"Cmd", "\"/bin/true\""}, json::array{"JobUniverse", "12"}};
  for (auto procs : {json::array{json::array{json::array{"ProcId", "0"}},
                                 json::array{json::array{"ProcId", "0"}}},
                     json::array{json::array{json::array{"ProcId", "-1"}}},
                     json::array{json::array{json::array{"JobStatus", "2"}}},
                     json::array{json::array{json::array{"JobStatus", "99"}}}}) {
    auto reply = RawSubmit(env, common, procs);
    EXPECT_NE(reply.find("HTTP/1.1 400"), std::string::npos) << reply;
  }
  env.StopAgent();
  env.StartAgent();
  EXPECT_EQ(Queued(env), 2u);  // the good cluster, whole
  EXPECT_EQ(env.JobStatus(std::to_string(good) + ".1"), 2);
  env.Kite({"rm", std::to_string(good)});
}

TEST(Hardening, AStoredAdThatDoesNotLoadHoldsItsJobsAndStopsTheirRuns) {
  KiteEnv env("harden-load");
  env.StartAgent();
  int c = env.Submit(
      "universe = local\nexecutable = /bin/sh\n"
      "arguments = \"-c 'sleep 120; : zq-marker-7f3a'\"\nqueue 2\n");
  ASSERT_TRUE(WaitUntil([&] { return env.JobStatus(std::to_string(c) + ".1") == 2; }, 20));
  ASSERT_TRUE(SleepsRunning("zq-marker-7f3a"));
  env.StopAgent();  // the jobs keep running under their wrappers
  // Damage the cluster's stored ad as the attack's unparsable names did.
  auto r = RunCommand({"sqlite3", env.home() + "/queue.db",
                       "UPDATE clusters SET ad = 'error = 1' || char(10) || ad WHERE cluster = " +
                           std::to_string(c)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  env.StartAgent();
  auto q = env.Kite({"q", std::to_string(c), "-json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto jobs = json::parse(q.out).as_array();
  ASSERT_EQ(jobs.size(), 2u) << q.out;
  for (auto& j : jobs) {
    EXPECT_EQ(j.as_object().at("JobStatus").as_int64(), 5);
    EXPECT_NE(std::string(j.as_object().at("HoldReason").as_string()).find("could not load"),
              std::string::npos);
  }
  // Held jobs do not run unmanaged: their wrappers are stopped.
  EXPECT_TRUE(WaitUntil([] { return !SleepsRunning("zq-marker-7f3a"); }, 30));
  EXPECT_EQ(env.Kite({"rm", std::to_string(c)}).exit_code, 0);
}

TEST(Hardening, IdsPast32BitsAreRefusedAndTheJobsTheyWrappedToAreUntouched) {
  KiteEnv env("harden-ids");
  env.StartAgent();
  int c = env.Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue 3\n");
  ASSERT_EQ(c, 1);
  ASSERT_TRUE(WaitUntil([&] { return env.JobStatus("1.2") == 2; }, 20));
  auto r = env.Kite({"rm", "4294967297"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("ids go up to 2147483647"), std::string::npos) << r.err;
  r = env.Kite({"hold", "4294967298.4294967297"});
  EXPECT_NE(r.exit_code, 0);
  r = env.Kite({"log", "1.4294967296"});
  EXPECT_NE(r.exit_code, 0);
  // The raw API and its body fields too.
  auto reply =
      RawUnixRequest(Sock(env), HttpPost("/v1/act", R"({"action":"rm","ids":["4294967297"]})"));
  EXPECT_NE(reply.find("HTTP/1.1 400"), std::string::npos) << reply;
  reply = RawUnixRequest(
      Sock(env), HttpPost("/v1/submit", R"({"cluster":4294967297,"common":[],"procs":[[]]})"));
  EXPECT_NE(reply.find("HTTP/1.1 400"), std::string::npos) << reply;
  for (int p = 0; p < 3; ++p) EXPECT_EQ(env.JobStatus("1." + std::to_string(p)), 2);
  env.Kite({"rm", "1"});
}

TEST(Hardening, AFifoAsTheProxyPathHangsNeitherTheCliNorTheAgent) {
  KiteEnv env("harden-fifo");
  std::string fifo = env.dir() + "/proxy.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto r = env.Kite({"proxy", "info", "-f", fifo});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  env.StartAgent();
  env.Submit(
      "universe = grid\ngrid_resource = kite 127.0.0.1:9/fork\nexecutable = /bin/true\n"
      "x509userproxy = " +
      fifo + "\nqueue\n");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(env.Kite({"q"}).exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  env.Kite({"rm", "--constraint", "true", "--forcex"});
}

TEST(Hardening, AKiteHomeLongerThanASocketPathWorks) {
  std::string base = MakeTempDir("harden-long");
  std::string home = base;
  while (home.size() < 150) home += "/deeper-directory";
  std::filesystem::create_directories(home);
  std::vector<std::string> envv = {"KITE_HOME=" + home};
  auto r = RunCommand({BinDir() + "/kite", "agent", "start"}, envv);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunCommand({BinDir() + "/kite", "q"}, envv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand({BinDir() + "/kite", "agent", "stop", "--stop-startd"}, envv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::remove_all(base);
}

TEST(Hardening, ConfigNumbersOutOfRangeAreRefusedAtStart) {
  for (const char* line : {"periodic_interval = nan", "periodic_interval = inf",
                           "periodic_interval = 1e10", "commit_delay_ms = 1000000000"}) {
    KiteEnv env("harden-config");
    std::filesystem::create_directories(env.home());
    WriteFile(env.home() + "/config.toml", std::string("[agent]\n") + line + "\n");
    auto r = env.Kite({"agent", "start"});
    EXPECT_NE(r.exit_code, 0) << line;
    EXPECT_NE(r.err.find("config.toml:2: agent."), std::string::npos) << line << ": " << r.err;
  }
}

TEST(Hardening, AnEmptiedQueueFileIsRefusedNamingItAndNotAnOldFailure) {
  KiteEnv env("harden-empty");
  env.StartAgent();
  env.Submit("executable = /bin/true\nhold = true\nqueue\n");
  env.StopAgent();
  ::truncate((env.home() + "/queue.db").c_str(), 0);
  // agent.out is appended to: an old failure in it must not be reported as this start's.
  WriteFile(env.home() + "/agent.out", "kite-agent: OLD FAILURE FROM LAST WEEK\n", 0600);
  auto r = env.Kite({"agent", "start"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("queue.db is empty"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("OLD FAILURE"), std::string::npos) << r.err;
}

TEST(Hardening, AnOpenHomeIsMadePrivate) {
  KiteEnv env("harden-mode");
  std::filesystem::create_directories(env.home());
  ::chmod(env.home().c_str(), 0755);
  env.StartAgent();
  struct stat sb {};
  ASSERT_EQ(::stat(env.home().c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0700u);
}

TEST(Hardening, IdleConnectionsPastTheFileLimitDoNotSpinTheAgent) {
  KiteEnv env("harden-fds");
  // The agent raises its soft limit to the hard one: cap the hard limit as a small account has.
  std::vector<std::string> argv = {"prlimit", "--nofile=256:256", BinDir() + "/kite", "agent",
                                   "start"};
  auto r = RunCommand(argv, env.Env(), env.dir());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  pid_t agent = env.AgentPid();
  ASSERT_GT(agent, 0);
  auto flood = ConnectionFlood::Unix(Sock(env), 1100);
  EXPECT_GT(flood.opened(), 256);  // past the agent's limit: its accept fails with EMFILE
  double before = CpuSeconds(agent);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  double used = CpuSeconds(agent) - before;
  EXPECT_LT(used, 0.5) << "the agent spun: " << used << " s of CPU in 3 s";
  auto log = ReadFileOr(env.home() + "/agent.log");
  EXPECT_LT(log.size(), 100000u) << "the agent's log grew to " << log.size() << " bytes";
  { auto gone = std::move(flood); }
  auto q = env.Kite({"q"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
}

// Issue 25, defect 17: 1,100 idle connections to agent.sock past a lowered descriptor limit no
// longer keep the owner's CLI out while they stay: the connections that only wait make room.
TEST(Hardening, TheOwnersCliIsServedWhileIdleConnectionsHoldTheFileLimit) {
  KiteEnv env("harden-fds-cli");
  std::vector<std::string> argv = {"prlimit", "--nofile=256:256", BinDir() + "/kite", "agent",
                                   "start"};
  auto r = RunCommand(argv, env.Env(), env.dir());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto flood = ConnectionFlood::Unix(Sock(env), 1100);
  EXPECT_GT(flood.opened(), 256);
  for (int i = 0; i < 3; ++i) {
    auto q = RunCommand({"timeout", "20", BinDir() + "/kite", "q"}, env.Env(), env.dir());
    EXPECT_EQ(q.exit_code, 0) << "kite q with the flood holding its connections: " << q.out
                              << q.err;
  }
  int c = env.Submit("executable = /bin/true\nhold = true\nqueue\n");
  EXPECT_GT(c, 0);
}

// Issue 25, defect 18: a job's ClusterId is its cluster's; a raw submit naming another is
// refused and nothing is queued.
TEST(Hardening, ARawSubmitCannotGiveAJobAnotherClusterId) {
  KiteEnv env("harden-clusterid");
  env.StartAgent();
  auto reply = RawSubmit(env, json::array{json::array{"Cmd", "\"/bin/true\""}},
                         json::array{json::array{json::array{"ClusterId", "1"}}});
  EXPECT_NE(reply.find("ClusterId is the cluster's"), std::string::npos) << reply;
  EXPECT_EQ(Queued(env), 0u);
}

TEST(Hardening, ACostlyConstraintNeitherFreezesTheAgentNorRunsLong) {
  KiteEnv env("harden-regex");
  env.StartAgent();
  env.Submit("executable = /bin/true\nhold = true\nqueue\n");
  // Back-references make a backtracking engine take exponential time: glibc takes ~70 s on this.
  std::string bomb = "regexp(\"(a*)\\\\1*b\", \"" + std::string(400, 'a') + "\")";
  auto t0 = std::chrono::steady_clock::now();
  std::thread costly([&] {
    auto reply = RawUnixRequest(
        Sock(env), HttpPost("/v1/query", json::serialize(json::object{{"constraint", bomb},
                                                                      {"format", "json"}})));
    EXPECT_NE(reply.find("HTTP/1.1 200"), std::string::npos) << reply;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto q0 = std::chrono::steady_clock::now();
  EXPECT_EQ(env.Kite({"q"}).exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - q0, std::chrono::seconds(2))
      << "another client waited on the costly constraint";
  costly.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

}  // namespace
}  // namespace kite::testing
