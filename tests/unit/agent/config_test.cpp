#include "agent/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kite::agent {
namespace {

TEST(AgentConfig, DefaultsWhenEmpty) {
  auto o = ParseAgentOptions("/h", "", "config.toml");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->periodic_interval, 60);
  EXPECT_EQ(o->max_local_jobs, 200);
  EXPECT_EQ(o->queue_path(), "/h/queue.db");
}

TEST(AgentConfig, ReadsKnownKeys) {
  auto o = ParseAgentOptions("/h",
                             "[agent]\nlog_level = \"debug\"\nperiodic_interval = 0.5\n"
                             "max_local_jobs = 0\nkill_grace = 3\n",
                             "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->log_level, "debug");
  EXPECT_DOUBLE_EQ(o->periodic_interval, 0.5);
  EXPECT_EQ(o->max_local_jobs, 0);
  EXPECT_DOUBLE_EQ(o->kill_grace, 3);
}

TEST(AgentConfig, ResourcesAndBroker) {
  auto o = ParseAgentOptions("/h",
                             "[broker]\nrefresh_interval = \"30s\"\nmax_queue_wait = 600\n"
                             "max_pending_per_site = 4\n"
                             "[[resource]]\ngrid_resource = \"kite ce1.example.org:9618/slurm\"\n"
                             "[[resource]]\ngrid_resource = \"kite ce2.example.org:9618/sge\"\n"
                             "cost = 2.0\nsite = \"ce2\"\ngpu = true\nslots = 3\n",
                             "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_DOUBLE_EQ(o->broker.refresh_interval, 30);
  EXPECT_DOUBLE_EQ(o->broker.max_queue_wait, 600);
  EXPECT_EQ(o->broker.max_pending_per_site, 4);
  ASSERT_EQ(o->broker.resources.size(), 2u);
  EXPECT_EQ(o->broker.resources[0].grid_resource, "kite ce1.example.org:9618/slurm");
  const auto& list = o->broker.resources[1].attributes;
  std::map<std::string, std::string> attrs(list.begin(), list.end());
  EXPECT_EQ(attrs, (std::map<std::string, std::string>{
                       {"cost", "2.0"}, {"site", "\"ce2\""}, {"gpu", "true"}, {"slots", "3"}}));
  // Mistakes are said, with the line.
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"[[resource]]\ncost = 1\n", "grid_resource is required"},
           {"[[resource]]\ngrid_resource = \"gsiftp ce1:1\"\n", "is not one Kite runs"},
           {"[[resource]]\ngrid_resource = \"kite a:1\"\n[[resource]]\n"
            "grid_resource = \"kite a:1\"\n",
            "listed twice"},
           {"[[resource]]\ngrid_resource = \"kite a:1\"\nEstimatedWaitTime = 0\n",
            "sets EstimatedWaitTime itself"},
           {"[[resource]]\ngrid_resource = \"kite a:1\"\nlist = [1]\n", "expected a string"},
           {"resource = 1\n", "[[resource]] table"},
           {"[broker]\nmax_pending_per_site = 0\n", "out of range"},
       }) {
    auto bad = ParseAgentOptions("/h", text, "config.toml");
    ASSERT_FALSE(bad) << text;
    EXPECT_NE(bad.error().message().find(why), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("config.toml:"), std::string::npos);
  }
}

TEST(AgentConfig, PoolKeys) {
  auto o = ParseAgentOptions("/h", "[pool]\nlocal_slots = 0\nlocal_start = false\n", "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->pool.local_slots, 0);
  EXPECT_EQ(o->pool.local_start, "false");
  o = ParseAgentOptions("/h", "[pool]\nlocal_start = \"KeyboardIdle > 60\"\n", "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->pool.local_start, "KeyboardIdle > 60");
  EXPECT_EQ(o->pool.local_slots, -1);  // one per core
  auto bad = ParseAgentOptions("/h", "[pool]\nlocal_start = \"KeyboardIdle >\"\n", "c.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("c.toml:2: pool.local_start: "), std::string::npos)
      << bad.error().message();
  bad = ParseAgentOptions("/h", "[pool]\nlocal_slots = -1\n", "c.toml");
  ASSERT_FALSE(bad);
  // The rest of the owner's policy, HTCondor's defaults unless set.
  EXPECT_EQ(o->pool.local_policy, glidein::OwnerPolicy{});
  o = ParseAgentOptions("/h",
                        "[pool]\nlocal_suspend = \"KeyboardIdle < 60\"\nlocal_continue = false\n"
                        "local_preempt = true\nlocal_kill = \"Activity == \\\"Retiring\\\"\"\n"
                        "local_max_job_retirement_time = \"600\"\n",
                        "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->pool.local_policy.suspend, "KeyboardIdle < 60");
  EXPECT_EQ(o->pool.local_policy.cont, "false");
  EXPECT_EQ(o->pool.local_policy.preempt, "true");
  EXPECT_EQ(o->pool.local_policy.kill, "Activity == \"Retiring\"");
  EXPECT_EQ(o->pool.local_policy.retirement, "600");
  bad = ParseAgentOptions("/h", "[pool]\nlocal_preempt = \"Activity ==\"\n", "c.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("c.toml:2: pool.local_preempt: "), std::string::npos)
      << bad.error().message();
}

struct Bad {
  const char* text;
  const char* message;
};

TEST(AgentConfig, BadValuesNameKeyAndLine) {
  const Bad cases[] = {
      {"[agent]\nnope = 1\n", "config.toml:2: agent.nope: unknown key"},
      {"[agent]\n\nmax_local_jobs = \"x\"\n",
       "config.toml:3: agent.max_local_jobs: expected an integer"},
      {"[agent]\nmax_local_jobs = -1\n", "config.toml:2: agent.max_local_jobs: out of range"},
      {"[agent]\nperiodic_interval = 0\n",
       "config.toml:2: agent.periodic_interval: must be at least"},
      {"[agent]\nlog_level = \"loud\"\n", "config.toml:2: agent.log_level: must be one of"},
      {"[weird]\nx = 1\n", "config.toml:1: weird: unknown section"},
      {"[agent\n", "config.toml:1:"},
      {"[agent]\nkill_grace = \n", "config.toml:2:"},
      // Numbers that made the agent spin: not a number, infinite, or far past any sane value.
      {"[agent]\nperiodic_interval = nan\n", "agent.periodic_interval: must be at least 0.1"},
      {"[agent]\nperiodic_interval = inf\n", "agent.periodic_interval: must be at least 0.1"},
      {"[agent]\nperiodic_interval = 1e10\n", "and at most 86400"},
      {"[agent]\nkill_grace = -inf\n", "agent.kill_grace: must be at least 0"},
      {"[agent]\ncommit_delay_ms = 1000000000\n", "agent.commit_delay_ms: out of range (0 to"},
      {"[grid]\nprobe_interval = nan\n", "grid.probe_interval: must be at least"},
      {"[grid]\nmax_requests_per_resource = 100000\n", "out of range (1 to 1024)"},
  };
  for (auto& c : cases) {
    auto o = ParseAgentOptions("/h", c.text, "config.toml");
    ASSERT_FALSE(o) << c.text;
    EXPECT_EQ(o.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(o.error().message().find(c.message), std::string::npos)
        << c.text << " -> " << o.error().message();
  }
}

TEST(PoolConfig, DefaultsListenOnLoopbackWithTheUsersProxy) {
  auto o = ParseAgentOptions("/h", "", "config.toml");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->pool.listen, "127.0.0.1:0");
  EXPECT_FALSE(o->pool.allow_remote);
  EXPECT_EQ(o->pool.proxy, "");  // $X509_USER_PROXY, else /tmp/x509up_u<uid>, when used
  EXPECT_TRUE(o->pool.allow_identities.empty());
  EXPECT_EQ(o->pool.local_slots, -1);
  EXPECT_EQ(o->pool_address_path(), "/h/pool.address");
}

TEST(PoolConfig, ReadsTheTlsKeys) {
  auto o =
      ParseAgentOptions("/h",
                        "[pool]\nlisten = \"[::1]:9618\"\nproxy = \"glidein.pem\"\n"
                        "allow_identities = [\"/O=Grid/CN=Robot\", \"O=Lab, OU=Pool, CN=Eve\"]\n"
                        "local_slots = 0\nlocal_start = \"LoadAvg < 0.3\"\n",
                        "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->pool.listen, "[::1]:9618");
  EXPECT_EQ(o->pool.proxy, "/h/glidein.pem");  // relative to the home, like password_file
  // Kept in the Globus form that identities are compared in.
  EXPECT_EQ(o->pool.allow_identities,
            (std::vector<std::string>{"/O=Grid/CN=Robot", "/O=Lab/OU=Pool/CN=Eve"}));
  EXPECT_EQ(o->pool.local_slots, 0);
  EXPECT_EQ(o->pool.local_start, "LoadAvg < 0.3");
  auto off = ParseAgentOptions("/h", "[pool]\nlisten = \"\"\nproxy = \"/p/x\"\n", "config.toml");
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(off->pool.listen, "");
  EXPECT_EQ(off->pool.proxy, "/p/x");
}

TEST(PoolConfig, AnAddressOtherHostsReachNeedsAllowRemote) {
  auto refused = ParseAgentOptions("/h", "[pool]\nlisten = \"0.0.0.0:9618\"\n", "config.toml");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find(
                "config.toml:2: pool.listen: 0.0.0.0:9618 is not a loopback address; letting "
                "glide-ins on other hosts dial in needs [pool] allow_remote = true"),
            std::string::npos)
      << refused.error().message();
  // allow_remote may come before or after listen.
  for (const char* text : {"[pool]\nlisten = \"0.0.0.0:9618\"\nallow_remote = true\n",
                           "[pool]\nallow_remote = true\nlisten = \"0.0.0.0:0\"\n"}) {
    auto o = ParseAgentOptions("/h", text, "config.toml");
    ASSERT_TRUE(o) << text << o.error().ToString();
    EXPECT_TRUE(o->pool.allow_remote);
  }
}

TEST(PoolConfig, BadValuesNameKeyAndLine) {
  const Bad cases[] = {
      {"[pool]\nlisten = \"127.0.0.1\"\n", "config.toml:2: pool.listen: expected HOST:PORT"},
      {"[pool]\nlisten = \"127.0.0.1:99999\"\n", "config.toml:2: pool.listen: bad port"},
      {"[pool]\nlisten = \"agent.example.org:9618\"\n",
       "pool.listen: 'agent.example.org' is not an IP address"},
      {"[pool]\nlisten = 9618\n", "config.toml:2: pool.listen: expected a string"},
      {"[pool]\nallow_remote = \"yes\"\n", "pool.allow_remote: expected true or false"},
      {"[pool]\nallow_identities = \"/O=Grid/CN=Robot\"\n",
       "config.toml:2: pool.allow_identities: expected a list of DNs"},
      {"[pool]\nallow_identities = [1]\n", "pool.allow_identities: expected a list of DNs"},
      {"[pool]\n\nallow_identities = [\"Jane Doe\"]\n",
       "config.toml:3: pool.allow_identities: 'Jane Doe' is not a distinguished name"},
      {"[pool]\nproxy = \"a\\u0001b\"\n", "pool.proxy: control characters"},
      {"[pool]\nlocal_slots = -1\n", "pool.local_slots: out of range (0 to 4096)"},
      {"[pool]\nlocal_start = \"(\"\n", "config.toml:2: pool.local_start:"},
      {"[pool]\nlisten_on = \"x\"\n", "config.toml:2: pool.listen_on: unknown key"},
  };
  for (auto& c : cases) {
    auto o = ParseAgentOptions("/h", c.text, "config.toml");
    ASSERT_FALSE(o) << c.text;
    EXPECT_EQ(o.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(o.error().message().find(c.message), std::string::npos)
        << c.text << " -> " << o.error().message();
  }
}

TEST(AgentConfig, LaterSectionsAreLeftToTheirOwners) {
  auto o = ParseAgentOptions("/h", "[mail]\nsmtp_url = \"smtp://127.0.0.1:25\"\n", "config.toml");
  EXPECT_TRUE(o);
}

class MyProxyConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/kite-myproxy-config-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
    good_ = dir_ + "/good.pass";
    open_ = dir_ + "/open.pass";
    short_ = dir_ + "/short.pass";
    Write(good_, "long enough pass phrase\n", 0600);
    Write(open_, "long enough pass phrase\n", 0644);
    Write(short_, "abc\n", 0600);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void Write(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
  }
  std::string dir_, good_, open_, short_;
};

TEST_F(MyProxyConfig, ReadsTheRenewalSettings) {
  auto o = ParseAgentOptions("/h",
                             "[myproxy]\nserver = \"myproxy.example.org:7513\"\n"
                             "username = \"jane\"\ncredential_name = \"grid\"\n"
                             "passphrase_file = \"" +
                                 good_ +
                                 "\"\nrenew_before = \"2h\"\nlifetime = \"24:00\"\n"
                                 "retry_after = 30\n",
                             "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_TRUE(o->myproxy.enabled());
  EXPECT_EQ(o->myproxy.server, "myproxy.example.org:7513");
  EXPECT_EQ(o->myproxy.username, "jane");
  EXPECT_EQ(o->myproxy.credential_name, "grid");
  EXPECT_DOUBLE_EQ(o->myproxy.renew_before, 7200);
  EXPECT_DOUBLE_EQ(o->myproxy.lifetime, 86400);
  EXPECT_DOUBLE_EQ(o->myproxy.retry_after, 30);
  EXPECT_FALSE(ParseAgentOptions("/h", "", "config.toml")->myproxy.enabled());
}

TEST_F(MyProxyConfig, RefusesWhatCannotWorkWithKeyAndLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"[myproxy]\nserver = \"host:0\"\n", "config.toml:2: myproxy.server: 'host:0': bad port"},
      {"[myproxy]\nserver = \"host:70000\"\n", "config.toml:2: myproxy.server: 'host:70000'"},
      {"[myproxy]\nserver = \":7512\"\n", "config.toml:2: myproxy.server: ':7512': bad host"},
      {"[myproxy]\nserver = 7512\n", "config.toml:2: myproxy.server: expected a string"},
      {"[myproxy]\nserver = \"h\"\n", "config.toml:1: myproxy: passphrase_file is required"},
      {"[myproxy]\n\npassphrase_file = \"" + open_ + "\"\n",
       "config.toml:3: myproxy.passphrase_file: pass phrase file: " + open_ +
           " has mode 0644; it must be readable by its owner only"},
      {"[myproxy]\npassphrase_file = \"" + short_ + "\"\n", "shorter than 6 characters"},
      {"[myproxy]\npassphrase_file = \"" + dir_ + "/none\"\n", "does not exist"},
      {"[myproxy]\nrenew_before = \"soon\"\n",
       "config.toml:2: myproxy.renew_before: not a duration"},
      {"[myproxy]\nlifetime = 10\n", "config.toml:2: myproxy.lifetime: must be at least 60"},
      {"[myproxy]\nrenew_before = true\n", "myproxy.renew_before: expected seconds"},
      {"[myproxy]\nwhatever = 1\n", "config.toml:2: myproxy.whatever: unknown key"},
  };
  for (const auto& [text, message] : cases) {
    auto o = ParseAgentOptions("/h", text, "config.toml");
    ASSERT_FALSE(o) << text;
    EXPECT_NE(o.error().message().find(message), std::string::npos)
        << text << "\n -> " << o.error().message();
  }
}

}  // namespace
}  // namespace kite::agent
