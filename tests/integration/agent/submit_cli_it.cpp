// `kite submit` with condor_submit's habits: -dry-run without an agent, -terse, -append,
// NAME=value words, standard input, -batch-name, and single-dash long options.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class SubmitCli : public ::testing::Test {
 protected:
  void SetUp() override { env_ = std::make_unique<KiteEnv>("submit-cli"); }
  // The only job of cluster `c` in `kite q -json`, as a JSON object.
  boost::json::object Job(const std::string& id) {
    auto r = env_->Kite({"q", id, "-json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto v = boost::json::parse(r.out);
    EXPECT_EQ(v.as_array().size(), 1u) << r.out;
    return v.as_array().empty() ? boost::json::object{} : v.as_array()[0].as_object();
  }
  std::unique_ptr<KiteEnv> env_;
};

const char* kJob = "executable = /bin/echo\narguments = $(word)\nqueue $(N)\n";

// -dry-run needs no agent (none runs here) and prints every job's ad.
TEST_F(SubmitCli, DryRunPrintsTheAdsWithoutAnAgent) {
  env_->Write("job.sub", kJob);
  auto r = env_->Kite({"submit", "-dry-run", "-", "job.sub", "N=2", "word=hi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Cmd = \"/bin/echo\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Args = \"hi\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ProcId = 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("2 job(s) dry-run"), std::string::npos) << r.err;

  r = env_->Kite({"submit", "-dry-run", "job.sub", "N=1", "word=x", "-terse"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Args = \"x\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n1.0 - 1.0\n"), std::string::npos) << r.out;

  r = env_->Kite({"submit", "-dry-run", "ads.txt", "job.sub", "N=1", "word=y"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ads = RunCommand({"cat", env_->dir() + "/ads.txt"});
  EXPECT_NE(ads.out.find("Args = \"y\"\n"), std::string::npos) << ads.out;
}

TEST_F(SubmitCli, AppendAndBatchNameAndStandardInput) {
  auto r = env_->Kite({"submit", "-dry-run", "-", "-a", "request_cpus = 3", "-append",
                       "description = appended", "-batch-name", "nightly", "N=1", "word=z"},
                      kJob);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("RequestCpus = 3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("JobDescription = \"appended\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("JobBatchName = \"nightly\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("JobSubmitFile = \"<stdin>\"\n"), std::string::npos) << r.out;
}

// An unknown single-dash long option is refused by its name, never read as short flags
// (-terce would otherwise be -t with the value "erce").
TEST_F(SubmitCli, UnknownSingleDashOptionIsRefusedByName) {
  env_->Write("job.sub", kJob);
  auto r = env_->Kite({"submit", "-terce", "job.sub"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("terce"), std::string::npos) << r.err;
}

// A command word kite does not know is named, with the nearest command or Kite's name for an
// HTCondor tool; one HTCondor has and Kite has not yet is said so.
TEST_F(SubmitCli, AnUnknownCommandIsNamedWithTheNearestOne) {
  auto r = env_->Kite({"stauts"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("kite: unknown command 'stauts'; did you mean 'kite status'?"),
            std::string::npos)
      << r.err;
  r = env_->Kite({"condor_submit_dag", "x.dag"});
  EXPECT_NE(r.err.find("did you mean 'kite dag submit'?"), std::string::npos) << r.err;
  r = env_->Kite({"tail", "1.0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("unknown command 'tail' (HTCondor's condor_tail has no Kite equivalent yet)"),
      std::string::npos)
      << r.err;
  r = env_->Kite({"xyzzy"});
  EXPECT_NE(r.err.find("unknown command 'xyzzy'\n'kite --help' lists the commands."),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST_F(SubmitCli, RefusedCommandQueuesNothing) {
  env_->Write("job.sub",
              "universe = docker\ndocker_image = debian\nexecutable = /bin/true\nqueue\n");
  auto r = env_->Kite({"submit", "-dry-run", "job.sub"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("job.sub:1: universe = docker is not supported by Kite"), std::string::npos)
      << r.err;
}

// A submit that fails (a file that does not parse, a missing executable) uses up no cluster id:
// the next good submit gets the id the failed one would have had.
TEST_F(SubmitCli, FailedSubmitsUseUpNoClusterIds) {
  env_->StartAgent();
  env_->Write("good.sub", "universe = local\nexecutable = /bin/true\nhold = true\nqueue\n");
  env_->Write("bad.sub", "universe = local\nexecutable = /bin/true\n+x = [\nqueue\n");
  env_->Write("gone.sub", "universe = local\nexecutable = /nonexistent/program\nqueue\n");
  EXPECT_EQ(env_->Submit("universe = local\nexecutable = /bin/true\nhold = true\nqueue\n"), 1);
  for (const char* f : {"bad.sub", "gone.sub", "bad.sub"}) {
    auto r = env_->Kite({"submit", f});
    EXPECT_NE(r.exit_code, 0) << f;
  }
  auto r = env_->Kite({"submit", "good.sub"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted to cluster 2."), std::string::npos) << r.out;
}

TEST_F(SubmitCli, TerseSubmitAndNameValueWords) {
  env_->StartAgent();
  env_->Write("job.sub", "executable = /bin/echo\nhold = true\narguments = $(word)\nqueue $(N)\n");
  auto r = env_->Kite({"submit", "-terse", "job.sub", "N=3", "word=hello", "-batch-name", "b1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto dash = r.out.find(".0 - ");
  ASSERT_NE(dash, std::string::npos) << r.out;
  std::string cluster = r.out.substr(0, dash);
  EXPECT_EQ(r.out, cluster + ".0 - " + cluster + ".2\n");
  auto job = Job(cluster + ".2");
  EXPECT_EQ(job.at("Args").as_string(), "hello");
  EXPECT_EQ(job.at("JobBatchName").as_string(), "b1");
  EXPECT_EQ(job.at("JobStatus").as_int64(), 5);

  r = env_->Kite({"submit"}, "executable = /bin/true\nhold = true\nqueue\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 job(s) submitted to cluster"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kite::testing
