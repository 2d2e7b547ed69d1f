// A DAG's CONFIG file (the DAGMan settings Kite applies) and the DOT text of a DAG.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dag/config.h"

namespace kite::dag {
namespace {

TEST(DagConfig, TheSettingsKiteAppliesAreReadOthersAreNamedAsNotApplied) {
  auto c = ParseDagConfig("d.config",
                          "# a comment\n\n"
                          "DAGMAN_MAX_JOBS_SUBMITTED = 5\n"
                          "dagman_max_jobs_idle=10\r\n"
                          "DAGMAN_MAX_PRE_SCRIPTS = \\\n  3\n"
                          "DAGMAN_MAX_POST_SCRIPTS = 0\n"
                          "DAGMAN_ALWAYS_RUN_POST = yes\n"
                          "DAGMAN_SUBMIT_DEPTH_FIRST = True\n"
                          "DAGMAN_MAX_SUBMIT_ATTEMPTS = 2\n");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->max_jobs, 5);
  EXPECT_EQ(c->max_idle, 10);
  EXPECT_EQ(c->max_pre, 3);
  EXPECT_EQ(c->max_post, 0);
  EXPECT_EQ(c->always_run_post, true);
  EXPECT_EQ(c->depth_first, true);
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0], "d.config:10: DAGMAN_MAX_SUBMIT_ATTEMPTS is not applied by Kite");
  // Nothing said: nothing set (the command line's or Kite's defaults hold).
  auto empty = ParseDagConfig("e.config", "");
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->max_jobs || empty->always_run_post);
  for (const char* v : {"False", "f", "NO", "0"}) {
    auto b = ParseDagConfig("b", std::string("DAGMAN_ALWAYS_RUN_POST = ") + v);
    ASSERT_TRUE(b) << v;
    EXPECT_EQ(b->always_run_post, false) << v;
  }
}

TEST(DagConfig, WhatIsNotASettingOrNotOfItsKindIsRefusedNamingTheLine) {
  const std::map<std::string, std::string> cases = {
      {"DAGMAN_MAX_JOBS_IDLE = many\n", "c:1: DAGMAN_MAX_JOBS_IDLE must be a whole number"},
      {"\nDAGMAN_MAX_JOBS_SUBMITTED = -1\n", "c:2: DAGMAN_MAX_JOBS_SUBMITTED must be"},
      {"DAGMAN_MAX_PRE_SCRIPTS = 99999999999\n", "c:1: DAGMAN_MAX_PRE_SCRIPTS must be"},
      {"DAGMAN_ALWAYS_RUN_POST = sometimes\n", "c:1: DAGMAN_ALWAYS_RUN_POST must be True or False"},
      {"just some words\n", "c:1: not a setting (NAME = value)"},
      {"= 3\n", "c:1: not a setting"},
      {std::string("A = 1\0\n", 7), "c:1: a NUL byte"},
  };
  for (const auto& [text, want] : cases) {
    auto c = ParseDagConfig("c", text);
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().message().find(want), std::string::npos) << c.error().message();
  }
}

TEST(DagDot, EveryNodeAndLinkWithItsStateAndTheHeader) {
  Dag d;
  d.nodes.resize(3);
  d.nodes[0].name = "A";
  d.nodes[1].name = "B \"quoted\"";
  d.nodes[2].name = "C";
  d.nodes[0].children = {1, 2};
  std::vector<std::string> states = {"done", "submitted", "not ready"};
  std::string dot = DotText(d, "DAG", "  size=\"8,8\";", &states);
  EXPECT_EQ(dot,
            "digraph \"DAG\" {\n"
            "  size=\"8,8\";\n"
            "    \"A\" [label=\"A - done\"];\n"
            "    \"B \\\"quoted\\\"\" [label=\"B \\\"quoted\\\" - submitted\"];\n"
            "    \"C\" [label=\"C - not ready\"];\n"
            "    \"A\" -> \"B \\\"quoted\\\"\";\n"
            "    \"A\" -> \"C\";\n"
            "}\n");
  // Without states a node's label is its name.
  EXPECT_NE(DotText(d, "x", "", nullptr).find("    \"A\" [label=\"A\"];\n"), std::string::npos);
}

}  // namespace
}  // namespace kite::dag
