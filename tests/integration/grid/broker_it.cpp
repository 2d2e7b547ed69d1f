// The personal resource broker end to end (docs/broker.md): several test sites, each its own
// kite-gatekeeper with the fork adapter's test limits (`kite testgrid up --name --slots
// --start-delay`), the real agent asking them `info` and matching `grid_resource =
// $$(GridResource)` jobs, the real gridmanager running them. Every job appends one line to a
// shared file where it runs, so a job run twice, or run at two sites, is seen.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class Broker : public ::testing::Test {
 protected:
  void TearDown() override {
    env_.StopAgent();
    env_.Kite({"testgrid", "down"});
  }

  // `kite testgrid up --name NAME FLAGS...`: the site's grid_resource.
  std::string Site(const std::string& name, std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), {"--name", name});
    std::string r = env_.TestgridUp(flags);
    EXPECT_FALSE(r.empty()) << name;
    return r;
  }
  // config.toml with these sites and [broker] settings, then the agent.
  void Start(const std::vector<std::string>& sites, const std::string& broker) {
    std::string toml = "[broker]\nrefresh_interval = 1\n" + broker + "\n";
    for (const auto& s : sites) toml += "[[resource]]\ngrid_resource = \"" + s + "\"\n";
    WriteFile(env_.home() + "/config.toml", toml);
    env_.StartAgent();
  }
  // A cluster of `n` brokered jobs that each append "PROCESS DIR" to runs.txt (DIR: where the
  // site ran it) after sleeping `seconds`.
  int SubmitJobs(int n, const std::string& seconds, const std::string& extra = "") {
    runs_ = env_.dir() + "/runs.txt";
    env_.Write("job.sh", "#!/bin/sh\nsleep " + seconds + "\necho \"$1 $(pwd)\" >> " + runs_ + "\n",
               0755);
    return env_.Submit(
        "universe = grid\ngrid_resource = $$(GridResource)\n"
        "executable = " +
        env_.dir() +
        "/job.sh\ntransfer_executable = false\narguments = $(Process)\n"
        "requirements = TARGET.MaxWallTime >= 120\n"
        "rank = -TARGET.EstimatedWaitTime\nlog = job.log\n" +
        extra + "queue " + std::to_string(n) + "\n");
  }
  void WaitDone(int cluster, int seconds) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(seconds), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-nobatch"}).out
                              << env_.Kite({"status", "-grid"}).out;
  }
  // Site name (from the directory the job ran in) -> runs; every process exactly once.
  std::map<std::string, int> RunsBySite(int n) const {
    std::map<std::string, int> by_site;
    std::set<int> seen;
    std::istringstream in(ReadFileOr(runs_));
    std::string line;
    std::regex re("^([0-9]+) .*/testgrid/sites/([^/]+)/state/.*$");
    while (std::getline(in, line)) {
      std::smatch m;
      EXPECT_TRUE(std::regex_match(line, m, re)) << line;
      if (m.empty()) continue;
      EXPECT_TRUE(seen.insert(std::stoi(m[1])).second) << "job " << m[1] << " ran twice";
      ++by_site[m[2]];
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n)) << ReadFileOr(runs_);
    return by_site;
  }
  // `kite status -grid` as site -> its line.
  std::map<std::string, std::string> GridStatus() const {
    auto r = env_.Kite({"status", "-grid"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, std::string> out;
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("kite ")) out[line.substr(0, line.find(' ', 5))] = line;
    }
    return out;
  }
  std::string Port(const std::string& resource) const {
    return resource.substr(resource.rfind(':') + 1, resource.find('/') - resource.rfind(':') - 1);
  }

  KiteEnv env_{"broker"};
  std::string runs_;
};

// Three sites of different speeds: brokered jobs go mostly to the fastest, every one runs once,
// and `kite status -grid` shows what Kite observed at each.
TEST_F(Broker, ThreeSitesOfDifferentSpeedsFastestTakesMost) {
  std::string fast = Site("fast", {"--slots", "8"});
  std::string mid = Site("mid", {"--slots", "3", "--start-delay", "2"});
  std::string slow = Site("slow", {"--slots", "2", "--start-delay", "5"});
  Start({slow, mid, fast}, "");  // the fastest listed last: the order does not decide
  int c = SubmitJobs(300, "0.2");
  WaitDone(c, 400);
  auto by_site = RunsBySite(300);
  EXPECT_GT(by_site["fast"], by_site["mid"]);
  EXPECT_GT(by_site["fast"], by_site["slow"]);
  EXPECT_GT(by_site["fast"], 150) << by_site["fast"] << " " << by_site["mid"] << " "
                                  << by_site["slow"];
  auto status = GridStatus();
  ASSERT_EQ(status.size(), 3u);
  for (const auto& [site, line] : status) {
    EXPECT_NE(line.find("usable"), std::string::npos) << line;
  }
  // Waits were observed at the fast site (its P50 column is a duration, not "-").
  std::regex observed("fork +usable +[0-9]+/[0-9]+ +[0-9]+ +[0-9hms]+ +[0-9hms]+ +[0-9hms]+");
  EXPECT_TRUE(std::regex_search(status[fast], observed)) << status[fast];
  // The job ads say where each went.
  auto h = env_.Kite({"history", "-af", "MATCH_GridResource"});
  std::map<std::string, int> matched;
  std::istringstream in(h.out);
  for (std::string line; std::getline(in, line);) ++matched[line];
  EXPECT_EQ(matched[fast], by_site["fast"]);
  EXPECT_EQ(matched[mid], by_site["mid"]);
  EXPECT_EQ(matched[slow], by_site["slow"]);
}

// A site that stops starting jobs while Kite's wait there: after max_queue_wait they are
// cancelled there and run elsewhere, once; the user log shows each move.
TEST_F(Broker, JobsPendingAtADrainedSiteMoveAndRunOnce) {
  std::string a = Site("a", {"--slots", "2"});
  std::string b = Site("b", {"--slots", "2", "--start-delay", "1"});
  Start({a, b}, "max_queue_wait = 4\nmax_pending_per_site = 10\n");
  // B is drained once it has Kite's jobs waiting, before it starts them.
  auto drained =
      env_.Kite({"testgrid", "limits", "--name", "b", "--slots", "2", "--start-delay", "3600"});
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  int c = SubmitJobs(20, "0.3");
  WaitDone(c, 240);
  auto by_site = RunsBySite(20);
  EXPECT_EQ(by_site["b"], 0);
  EXPECT_EQ(by_site["a"], 20);
  // Every job that was at B moved, and says so.
  auto h = env_.Kite({"history", "-af", "ProcId", "NumGridMigrations"});
  int moved = 0;
  std::istringstream in(h.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.ends_with(" undefined")) ++moved;
  }
  EXPECT_GT(moved, 0) << h.out;
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  size_t events = 0;
  for (size_t p = log.find("Moved off grid resource " + b); p != std::string::npos;
       p = log.find("Moved off grid resource " + b, p + 1)) {
    ++events;
  }
  EXPECT_EQ(events, static_cast<size_t>(moved)) << log;
  EXPECT_NE(log.find("max_queue_wait"), std::string::npos);
}

// A site whose grid-mapfile does not list the user is never chosen for that proxy; once it does,
// it is used again. A site that does not answer is skipped, and used again when it answers.
TEST_F(Broker, RefusingAndUnreachableSitesAreSkippedUntilTheyServe) {
  std::string good = Site("good", {"--slots", "2", "--start-delay", "1"});
  std::string refusing = Site("refusing", {"--slots", "8"});
  std::string gone = Site("gone", {"--slots", "8"});
  std::string gridmap = env_.home() + "/testgrid/sites/refusing/grid-mapfile";
  std::string allowed = ReadFileOr(gridmap);
  WriteFile(gridmap, "\"/O=Grid/CN=someone else\" nobody\n");
  ASSERT_EQ(env_.Kite({"testgrid", "down", "--name", "gone"}).exit_code, 0);
  Start({good, refusing, gone}, "");
  int c = SubmitJobs(10, "0.1");
  WaitDone(c, 120);
  auto by_site = RunsBySite(10);
  EXPECT_EQ(by_site["good"], 10);
  auto status = GridStatus();
  EXPECT_NE(status[refusing].find("refused"), std::string::npos) << status[refusing];
  EXPECT_NE(status[gone].find("unreach"), std::string::npos) << status[gone];
  EXPECT_NE(ReadFileOr(env_.home() + "/agent.log").find(refusing + " refuses the identity"),
            std::string::npos);

  // The site maps the user again, and the other comes back on its port.
  WriteFile(gridmap, allowed);
  ASSERT_FALSE(Site("gone", {"--slots", "8", "--port", Port(gone)}).empty());
  std::string runs = runs_;
  int c2 = SubmitJobs(40, "0.1");
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto s = GridStatus();
        return s[refusing].find(" usable") != std::string::npos &&
               s[gone].find(" usable") != std::string::npos;
      },
      30))
      << env_.Kite({"status", "-grid"}).out;
  WaitDone(c2, 120);
  std::map<std::string, int> second;
  std::istringstream in(ReadFileOr(runs));
  for (std::string line; std::getline(in, line);) {
    for (const char* s : {"good", "refusing", "gone"}) {
      if (line.find("/sites/" + std::string(s) + "/") != std::string::npos) ++second[s];
    }
  }
  EXPECT_GT(second["refusing"] + second["gone"], 0) << ReadFileOr(runs);
}

// A site whose info ad is malformed (its administrator's attributes do not parse), claims an
// attribute only the agent sets, or numbers no site has, is unusable with the reason said; the
// other sites serve.
TEST_F(Broker, AMalformedSiteAdMakesTheSiteUnusableAndNothingElse) {
  std::string good = Site("good", {"--slots", "4"});
  env_.Write("bad.attrs", "Requirements = (((\n");
  std::string bad = Site("bad", {"--slots", "8", "--site-attributes", env_.dir() + "/bad.attrs"});
  env_.Write("liar.attrs", "EstimatedWaitTime = 0\n");
  std::string liar =
      Site("liar", {"--slots", "8", "--site-attributes", env_.dir() + "/liar.attrs"});
  env_.Write("picky.attrs", "Requirements = TARGET.Owner == \"nobody-at-all\"\n");
  std::string picky =
      Site("picky", {"--slots", "8", "--site-attributes", env_.dir() + "/picky.attrs"});
  // Issue 25, defect 14: numbers no site has (the probe's fake gatekeeper said 2^63 - 1 CPUs,
  // all free): refused with the reason, not a site that is "usable" but never gets a job.
  env_.Write("huge.attrs", "TotalCpus = 9223372036854775807\nFreeCpus = 9223372036854775807\n");
  std::string huge =
      Site("huge", {"--slots", "8", "--site-attributes", env_.dir() + "/huge.attrs"});
  Start({bad, liar, picky, huge, good}, "");
  int c = SubmitJobs(12, "0.1");
  WaitDone(c, 120);
  auto by_site = RunsBySite(12);
  EXPECT_EQ(by_site["good"], 12);  // picky's own Requirements refuse this user's jobs
  auto status = GridStatus();
  EXPECT_NE(status[bad].find("unusable"), std::string::npos) << status[bad];
  EXPECT_NE(status[bad].find("site ad:"), std::string::npos) << status[bad];
  EXPECT_NE(status[liar].find("only the agent sets"), std::string::npos) << status[liar];
  EXPECT_NE(status[picky].find(" usable"), std::string::npos) << status[picky];
  EXPECT_NE(status[huge].find("unusable"), std::string::npos) << status[huge];
  EXPECT_NE(status[huge].find("is more than"), std::string::npos) << status[huge];
  std::string log = ReadFileOr(env_.home() + "/agent.log");
  EXPECT_NE(log.find("broker: " + bad + ": site ad:"), std::string::npos) << log;
}

// Flooding (kite glidein flood): 200 idle vanilla jobs and no slot; glide-ins go to all three
// sites, never more than --max at once; the fast site's glide-ins take the jobs, the ones still
// pending at the slow sites are cancelled before they start, every job runs once, and no
// glide-in is left once the jobs are done and the idle timeout has passed.
TEST_F(Broker, FloodingPutsGlideinsEverywhereAndCancelsTheOnesNotNeeded) {
  std::string fast = Site("fast", {"--slots", "4"});
  std::string mid = Site("mid", {"--slots", "4", "--start-delay", "120"});
  std::string slow = Site("slow", {"--slots", "4", "--start-delay", "300"});
  std::string toml = "[pool]\nlocal_slots = 0\n[broker]\nrefresh_interval = 1\n";
  for (const auto& r : {fast, mid, slow}) toml += "[[resource]]\ngrid_resource = \"" + r + "\"\n";
  WriteFile(env_.home() + "/config.toml", toml);
  env_.StartAgent();
  runs_ = env_.dir() + "/runs.txt";
  env_.Write("vjob.sh", "#!/bin/sh\nsleep 0.2\necho \"$1 here\" >> " + runs_ + "\n", 0755);
  int c = env_.Submit(
      "universe = vanilla\nexecutable = vjob.sh\narguments = $(Process)\n"
      "log = vjob.log\nqueue 200\n");
  auto r = env_.Kite({"glidein", "flood", "--max", "4", "--cpus", "4", "--idle-timeout", "10s",
                      "--lifetime", "20m"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("flooding for idle jobs"), std::string::npos) << r.out;
  // Glide-ins pending or running: never more than --max, sampled while the jobs run.
  auto live = [&] {
    auto q = env_.Kite({"q", "-constraint", "KiteFlood =?= true", "-af", "JobStatus"});
    int n = 0;
    std::istringstream in(q.out);
    for (std::string line; std::getline(in, line);) n += line == "1" || line == "2";
    return n;
  };
  int most = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        most = std::max(most, live());
        return env_.JobStatus(std::to_string(c) + ".199") == 4 &&
               env_.Kite({"q", "-totals", std::to_string(c)}).out.find(" 0 jobs;") !=
                   std::string::npos;
      },
      300))
      << env_.Kite({"glidein", "q"}).out << env_.Kite({"glidein", "flood", "--status"}).out;
  EXPECT_LE(most, 4);
  EXPECT_GT(most, 0);
  // Every job ran once.
  std::set<int> seen;
  std::istringstream in(ReadFileOr(runs_));
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(seen.insert(std::stoi(line)).second) << "job " << line << " ran twice";
  }
  EXPECT_EQ(seen.size(), 200u);
  // The fast site's glide-ins leave once idle for their timeout, the others are cancelled: none is
  // left in the queue.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return env_.Kite({"q", "-constraint", "KiteFlood =?= true", "-af", "JobStatus"})
            .out.empty();
      },
      120))
      << env_.Kite({"glidein", "q"}).out;
  // Glide-ins went to every site; those at the slow sites were cancelled, never started.
  auto h = env_.Kite({"history", "-constraint", "KiteFlood =?= true", "-af", "GridResource",
                      "JobStatus", "JobCurrentStartDate"});
  std::map<std::string, std::vector<std::string>> by_site;
  std::istringstream hin(h.out);
  for (std::string line; std::getline(hin, line);) {
    by_site[line.substr(0, line.find(' ', 5))].push_back(line);
  }
  EXPECT_FALSE(by_site[fast].empty()) << h.out;
  for (const auto& site : {mid, slow}) {
    ASSERT_FALSE(by_site[site].empty()) << "no glide-in went to " << site << "\n" << h.out;
    for (const auto& line : by_site[site]) {
      EXPECT_NE(line.find(" 3 undefined"), std::string::npos)
          << "not cancelled unstarted: " << line;
    }
  }
  auto stop = env_.Kite({"glidein", "flood", "--stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.out, "not flooding\n");
}

}  // namespace
}  // namespace kite::testing
