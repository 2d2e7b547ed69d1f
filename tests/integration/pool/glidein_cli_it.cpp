// `kite glidein submit|q|rm` against the embedded test grid, up to the startd's start: the
// glide-in job is submitted through the agent, its binaries are staged to the site over GASS,
// the bootstrap checks them there and execs kite-startd. The startd dials nowhere useful here
// (--agent names a closed port), so this holds with or without the pool's TLS listener; the
// whole way to running vanilla jobs is glidein_it.cpp.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class GlideinCli : public ::testing::Test {
 protected:
  void SetUp() override {
    resource_ = env_.TestgridUp();
    ASSERT_FALSE(resource_.empty());
    WriteFile(env_.home() + "/config.toml", "[pool]\nlocal_slots = 0\n");
    env_.StartAgent();
  }
  void TearDown() override {
    env_.StopAgent();
    env_.Kite({"testgrid", "down"});
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    auto r = env_.Kite({history ? "history" : "q", "-json", id});
    std::smatch m;
    std::regex re("\"" + attr + "\": ([^\n]+?),?\n");
    return std::regex_search(r.out, m, re) ? std::string(m[1]) : "";
  }
  int SubmitGlideins(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"glidein", "submit",  "--resource",
                                     resource_, "--agent", "127.0.0.1:1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = env_.Kite(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("glide-in\\(s\\) submitted to cluster (\\d+)\\.")))
      return -1;
    return std::stoi(m[1]);
  }

  KiteEnv env_{"glidein-cli"};
  std::string resource_;
};

TEST_F(GlideinCli, SubmitsAGlideinWhoseBootstrapStartsTheStartdAtTheSite) {
  int c = SubmitGlideins({"--lifetime", "20s", "--idle-timeout", "2s", "--count", "2", "--cpus",
                          "3", "--start", "TARGET.Owner =!= \"x y\""});
  ASSERT_GT(c, 0);
  std::string id = std::to_string(c) + ".1";
  EXPECT_EQ(Attr(id, "KiteGlidein", false), "true");
  EXPECT_EQ(Attr(id, "GlideinResource", false), "\"" + resource_ + "\"");
  EXPECT_EQ(Attr(id, "BatchRuntime", false), "320");
  EXPECT_EQ(Attr(id, "RequestCpus", false), "3");
  std::string args = Attr(id, "Arguments", false);
  EXPECT_NE(args.find("--name glidein-" + id), std::string::npos) << args;
  EXPECT_NE(args.find("--agent tls:127.0.0.1:1"), std::string::npos) << args;

  auto q = env_.Kite({"glidein", "q"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find(std::to_string(c) + ".0"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("2 glide-in(s), 0 slot(s)"), std::string::npos) << q.out;

  // At the site: staged, checked, and kite-startd exec'd (it writes to the job's error file;
  // the bootstrap would have written one "kite-glidein-bootstrap: ..." line instead).
  std::string err = env_.home() + "/glidein/" + id + ".err";
  ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(err).empty(); }, 60))
      << env_.Kite({"q", "-grid"}).out;
  EXPECT_EQ(ReadFileOr(err).find("kite-glidein-bootstrap:"), std::string::npos) << ReadFileOr(err);
  EXPECT_EQ(env_.Kite({"glidein", "rm", "-all"}).exit_code, 0);
}

TEST_F(GlideinCli, RmRemovesGlideinsOnly) {
  int glidein = SubmitGlideins({"--lifetime", "10m", "--idle-timeout", "10m"});
  ASSERT_GT(glidein, 0);
  int other = env_.Submit("universe = local\nexecutable = /bin/sleep\narguments = 60\nqueue\n");
  auto r = env_.Kite({"glidein", "rm", std::to_string(glidein), std::to_string(other)});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("job " + std::to_string(other) + ".0 is not a glide-in"), std::string::npos)
      << r.err;
  EXPECT_NE(env_.JobStatus(std::to_string(glidein) + ".0"), 3) << "removed despite the refusal";
  EXPECT_NE(env_.JobStatus(std::to_string(other) + ".0"), 3);

  r = env_.Kite({"glidein", "rm", std::to_string(glidein)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 glide-in(s) removed."), std::string::npos) << r.out;
  EXPECT_EQ(env_.Kite({"glidein", "rm", "-all"}).out, "0 glide-in(s) removed.\n");
  EXPECT_NE(env_.JobStatus(std::to_string(other) + ".0"), 3) << "-all took a job not a glide-in";
  env_.Kite({"rm", std::to_string(other)});
}

// Without --agent, glide-ins dial what the agent wrote to $KITE_HOME/pool.address; with no such
// file there is nothing to dial, and nothing is submitted.
TEST_F(GlideinCli, DialsTheAddressTheAgentWrote) {
  std::string file = env_.home() + "/pool.address";
  std::string address = ReadFileOr(file);
  if (address.empty()) {
    auto r = env_.Kite({"glidein", "submit", "--resource", resource_});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("pool.address is missing"), std::string::npos) << r.err;
    address = "127.0.0.1:2\n";
    WriteFile(file, address);
  }
  auto r = env_.Kite({"glidein", "submit", "--resource", resource_, "--idle-timeout", "1s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string args = Attr("1.0", "Arguments", false);
  EXPECT_NE(args.find("--agent tls:" + address.substr(0, address.find('\n')) + " "),
            std::string::npos)
      << args;
  env_.Kite({"glidein", "rm", "-all"});
}

}  // namespace
}  // namespace kite::testing
