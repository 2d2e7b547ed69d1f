// The grid path with a real GASS server (the gridmanager's side, run in-process here): stage-in of
// the executable and an input, stdout streamed while the job runs, and 100 MB of stdout arriving
// byte-identical.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "common/files.h"
#include "credentials/certificate.h"
#include "gass/server.h"
#include "site.h"
#include "tests/fixtures/kite_env.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;
using kite::testing::WaitUntil;
using kite::testing::WriteFile;

class GramGass : public ::testing::Test {
 protected:
  void SetUp() override {
    gass_dir_ = site_.dir() + "/gass";
    ASSERT_TRUE(MakeDirs(gass_dir_, 0755));
    // As a gridmanager's: the server presents the user's proxy (job managers check that it
    // speaks for the job's owner).
    gass::GassServerOptions o;
    o.credential = site_.proxy();
    o.verifier = site_.verifier();
    auto s = gass::GassServer::Create(io_, o);
    ASSERT_TRUE(s) << s.error().ToString();
    server_ = std::move(*s);
    thread_ = std::thread([this] { io_.run(); });
    client_ = site_.MakeClient();
    auto d = client_->Delegate("delegation");
    ASSERT_TRUE(d) << d.error().ToString();
    delegation_ = d->id;
  }
  void TearDown() override {
    server_->Close();
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  JobDescription GassJob(const std::string& gass_job) {
    JobDescription j;
    j.gass_url = server_->url() + "/jobs/" + gass_job;
    j.delegation_id = delegation_;
    return j;
  }

  Site site_{"gram-gass"};
  std::string gass_dir_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_{
      io_.get_executor()};
  std::unique_ptr<gass::GassServer> server_;
  std::thread thread_;
  std::unique_ptr<Client> client_;
  std::string delegation_;
};

TEST_F(GramGass, StagesInTheExecutableAndAnInputAndStagesOutStdout) {
  WriteFile(gass_dir_ + "/prog.sh", "#!/bin/sh\ncat input.dat\necho arg=$1\n", 0644);
  WriteFile(gass_dir_ + "/input.dat", "input bytes\n");
  ASSERT_TRUE(server_->AddJob(
      "job1", site_.user_dn(),
      {{"prog.sh", gass_dir_ + "/prog.sh"}, {"input.dat", gass_dir_ + "/input.dat"}},
      {{"out.txt", gass_dir_ + "/out.txt"}}));
  auto job = GassJob("job1");
  job.executable.gass = "prog.sh";
  job.arguments = {"x"};
  job.stage_in = {{"input.dat", "input.dat"}};
  job.stdout_file.gass = "out.txt";
  auto sub = client_->Submit("s", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(client_->Commit("c", sub->job_id));
  auto end = Site::WaitFor(*client_, sub->job_id, JobState::kDone);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(end->exit->code, 0);
  EXPECT_EQ(ReadFileOr(gass_dir_ + "/out.txt"), "input bytes\narg=x\n");
  EXPECT_EQ(end->stdout_offset, 18);
}

TEST_F(GramGass, StdoutIsStreamedWhileTheJobRuns) {
  ASSERT_TRUE(server_->AddJob("job2", site_.user_dn(), {}, {{"out.txt", gass_dir_ + "/out.txt"}}));
  std::string release = site_.dir() + "/release";
  auto job = GassJob("job2");
  job.executable.site = "/bin/sh";
  job.arguments = {"-c", "echo first line; while [ ! -e " + release +
                             " ]; do sleep 0.05; done; "
                             "echo last line"};
  job.stdout_file.gass = "out.txt";
  job.stream_output = true;
  auto sub = client_->Submit("s", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(client_->Commit("c", sub->job_id));
  // The first line reaches the GASS server while the job still runs (it waits for us).
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(gass_dir_ + "/out.txt") == "first line\n"; }, 10));
  EXPECT_EQ(client_->Status(sub->job_id)->state, JobState::kActive);
  WriteFile(release, "");
  auto end = Site::WaitFor(*client_, sub->job_id, JobState::kDone);
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(ReadFileOr(gass_dir_ + "/out.txt"), "first line\nlast line\n");
}

TEST_F(GramGass, HundredMegabytesOfStdoutArriveByteIdentical) {
  ASSERT_TRUE(server_->AddJob("job3", site_.user_dn(), {}, {{"out.bin", gass_dir_ + "/out.bin"}}));
  auto job = GassJob("job3");
  job.executable.site = "/bin/sh";
  // Varied bytes (not one repeated line) so a misplaced chunk would show.
  job.arguments = {"-c", "seq 1 20000000 | head -c 100000000"};
  job.stdout_file.gass = "out.bin";
  job.stream_output = true;
  auto sub = client_->Submit("s", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(client_->Commit("c", sub->job_id));
  auto end = Site::WaitFor(*client_, sub->job_id, JobState::kDone, 120);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(end->stdout_offset, 100000000);
  std::string local = site_.account_dir() + "/jobs/" + sub->job_id + "/.kite/stdout";
  auto a = ReadFile(local);
  auto b = ReadFile(gass_dir_ + "/out.bin");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 100000000u);
  EXPECT_TRUE(*a == *b) << "remote copy differs from the job's stdout";
}

// A job that ended whose output the GASS server refuses for a while (its registration is not
// there yet): the delivery is tried again with back-off until it goes through, and the job ends
// done -- never failed (a failed job would run again).
TEST_F(GramGass, ADeliveryRefusedForAWhileAfterTheEndIsTriedAgainNotTheJob) {
  std::string marks = site_.dir() + "/runs";
  ASSERT_TRUE(server_->AddJob("job5", site_.user_dn(), {}, {}));  // no out.txt yet
  auto job = GassJob("job5");
  job.executable.site = "/bin/sh";
  job.arguments = {"-c", "echo run >> " + marks + "; echo result"};
  job.stdout_file.gass = "out.txt";
  auto sub = client_->Submit("s", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(client_->Commit("c", sub->job_id));
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "run\n"; }, 10));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // refused once or twice meanwhile
  auto mid = client_->Status(sub->job_id);
  ASSERT_TRUE(mid);
  EXPECT_FALSE(IsTerminal(mid->state)) << JobStateName(mid->state) << ": " << mid->failure_message;
  ASSERT_TRUE(server_->AddJob("job5", site_.user_dn(), {}, {{"out.txt", gass_dir_ + "/out5.txt"}}));
  auto end = Site::WaitFor(*client_, sub->job_id, JobState::kDone, 30);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(ReadFileOr(gass_dir_ + "/out5.txt"), "result\n");
  EXPECT_EQ(ReadFileOr(marks), "run\n") << "the job ran once";
}

TEST_F(GramGass, ASignalMovesTheJobToANewGassServer) {
  ASSERT_TRUE(server_->AddJob("job4", site_.user_dn(), {}, {{"out.txt", gass_dir_ + "/out.txt"}}));
  std::string release = site_.dir() + "/release";
  auto job = GassJob("job4");
  job.executable.site = "/bin/sh";
  job.arguments = {"-c",
                   "cat $KITE_GASS_URL_FILE > url1; echo first; while [ ! -e " + release +
                       " ]; do sleep 0.05; done; cat $KITE_GASS_URL_FILE > url2; echo second"};
  job.stdout_file.gass = "out.txt";
  job.stream_output = true;
  auto sub = client_->Submit("s", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(client_->Commit("c", sub->job_id));
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(gass_dir_ + "/out.txt") == "first\n"; }, 10));
  // The gridmanager restarts: a new GASS server on a new port, and the old one gone.
  server_->Close();
  gass::GassServerOptions o;
  o.credential = site_.proxy();
  o.verifier = site_.verifier();
  auto moved = gass::GassServer::Create(io_, o);
  ASSERT_TRUE(moved);
  ASSERT_TRUE(MakeDirs(gass_dir_ + "2", 0755));
  ASSERT_TRUE(
      (*moved)->AddJob("job4", site_.user_dn(), {}, {{"out.txt", gass_dir_ + "2/out.txt"}}));
  SignalRequest sig;
  sig.gass_url = (*moved)->url() + "/jobs/job4";
  ASSERT_TRUE(client_->Signal("sig", sub->job_id, sig));
  WriteFile(release, "");
  auto end = Site::WaitFor(*client_, sub->job_id, JobState::kDone);
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  std::string jobdir = site_.account_dir() + "/jobs/" + sub->job_id;
  EXPECT_EQ(ReadFileOr(jobdir + "/url1"), job.gass_url + "\n");
  EXPECT_EQ(ReadFileOr(jobdir + "/url2"), sig.gass_url + "\n");
  // Everything reaches the new server (what the old one had acknowledged is sent again).
  EXPECT_EQ(ReadFileOr(gass_dir_ + "2/out.txt"), "first\nsecond\n");
  (*moved)->Close();
}

}  // namespace
}  // namespace kite::gram::testing
