// The crash test for task graphs: kill -9 of the agent at random moments while a 500-node
// DAG of local and grid nodes runs (grid nodes through a real gatekeeper from `kite testgrid up`,
// with real TLS, GASS staging and the fork job manager). Every node must run exactly once (each
// appends its name to a side-effect file) and the DAG must complete.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

TEST(DagGrid, KillNineOfTheAgentWhileA500NodeDagOfLocalAndGridNodesRunsRunsEachNodeOnce) {
  KiteEnv env("dag-grid-kill");
  std::string resource = env.TestgridUp();
  ASSERT_FALSE(resource.empty());
  env.StartAgent();
  std::string ran = env.dir() + "/ran.txt";
  // Both kinds append NODE to ran.txt; a grid node's program is staged to the site by GASS and
  // runs there (the same machine, so it can reach the file by its absolute path).
  // Each takes a little while (0.1 to 0.3 s), so that the kills below fall while the DAG runs.
  env.Write("node.sh", "#!/bin/sh\necho \"$1\" >> \"$2\"\nsleep 0.$3\n", 0755);
  env.Write("local.sub", "universe = local\nexecutable = node.sh\narguments = \"$(node) " + ran +
                             " $(nap)\"\nqueue\n");
  env.Write("grid.sub", "universe = grid\ngrid_resource = " + resource +
                            "\nexecutable = node.sh\narguments = \"$(node) " + ran +
                            " $(nap)\"\nqueue\n");
  env.Write("post.sh", "#!/bin/sh\necho \"$1\" >> posts.txt\n", 0755);
  // Ten chains of fifty under a root and into a last node; every fifth node is a grid node, every
  // seventh has a POST script.
  std::mt19937 rng(std::random_device{}());
  std::string dag = "JOB root local.sub\nJOB last local.sub\n";
  int nodes = 2, grid = 0, posts = 0;
  for (int c = 0; c < 10; ++c) {
    for (int i = 0; i < 50 - (c == 0 ? 2 : 0); ++i) {
      std::string n = "n" + std::to_string(c) + "_" + std::to_string(i);
      bool on_grid = i % 5 == 2;
      dag += "JOB " + n + (on_grid ? " grid.sub\n" : " local.sub\n");
      dag += "VARS " + n + " nap=\"" + std::to_string(1 + rng() % 3) + "\"\n";
      dag += i == 0 ? "PARENT root CHILD " + n + "\n"
                    : "PARENT n" + std::to_string(c) + "_" + std::to_string(i - 1) + " CHILD " + n +
                          "\n";
      if (i % 7 == 3) {
        dag += "SCRIPT POST " + n + " post.sh $JOB\n";
        ++posts;
      }
      ++nodes;
      grid += on_grid;
    }
    dag +=
        "PARENT n" + std::to_string(c) + "_" + std::to_string(c == 0 ? 47 : 49) + " CHILD last\n";
  }
  dag += "VARS ALL_NODES node=\"$(JOB)\"\nVARS root nap=\"0\"\nVARS last nap=\"0\"\n";
  ASSERT_EQ(nodes, 500);
  env.Write("big.dag", dag);
  auto r = env.Kite({"dag", "submit", "-maxjobs", "30", "big.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("submitted to cluster ([0-9]+)"))) << r.out;
  std::string id = m[1].str() + ".0";
  const int kills = 6;
  int mid_dag = 0;  // kills while nodes were left to run
  std::string at;   // how many nodes had run at each kill
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng() % 1000));
    size_t done = 0;
    for (char c : ReadFileOr(ran)) done += c == '\n';
    mid_dag += done < static_cast<size_t>(nodes);
    at += std::to_string(done) + " ";
    env.KillAgent();
    env.StartAgent();
  }
  // The test means something only if the kills came while the DAG ran.
  EXPECT_GE(mid_dag, 3) << "nodes run at each kill: " << at;
  auto w = env.Kite({"wait", id, "--timeout", "400"});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << env.Kite({"q", "-dag"}).out;
  auto h = env.Kite({"history", id, "-af", "ExitCode"});
  EXPECT_EQ(h.out, "0\n") << h.err << ReadFileOr(env.dir() + "/big.dag.dagman.out");
  std::map<std::string, int> times;
  std::istringstream in(ReadFileOr(ran));
  for (std::string line; std::getline(in, line);) ++times[line];
  EXPECT_EQ(static_cast<int>(times.size()), nodes);
  for (auto& [n, k] : times) EXPECT_EQ(k, 1) << "node " << n << " ran " << k << " times";
  std::map<std::string, int> post_times;
  std::istringstream pin(ReadFileOr(env.dir() + "/posts.txt"));
  for (std::string line; std::getline(pin, line);) ++post_times[line];
  // A POST script running at a kill runs again after the restart (DAGMan's rule too), so each
  // ran at least once; the node's job, never twice.
  EXPECT_EQ(static_cast<int>(post_times.size()), posts);
  // The grid nodes really went through the gatekeeper: their jobs carry the site's job id.
  auto g = env.Kite({"history", "-constraint", "JobUniverse == 9 && DAGManJobId == " + m[1].str(),
                     "-af", "GridJobId"});
  int with_id = 0;
  std::istringstream gin(g.out);
  for (std::string line; std::getline(gin, line);)
    with_id += line.find("https://") != std::string::npos;
  EXPECT_EQ(with_id, grid) << g.out.substr(0, 500);
  std::printf(
      "dag kill -9: %d nodes (%d grid), %d kills (nodes run by then: %s), every node once\n", nodes,
      grid, kills, at.c_str());
  env.StopAgent();
  env.Kite({"testgrid", "down"});
}

}  // namespace
}  // namespace kite::testing
