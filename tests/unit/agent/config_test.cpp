#include "agent/config.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kite::agent
