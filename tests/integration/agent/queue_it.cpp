// The queue as a user sees it through the CLI: submit errors, queries, actions, bad requests.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include <filesystem>
#include <string>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class Queue : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("queue");
    env_->StartAgent();
  }
  size_t QueuedJobs() {
    auto r = env_->Kite({"q", "-json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto v = boost::json::parse(r.out);
    return v.as_array().size();
  }
  std::unique_ptr<KiteEnv> env_;
};

struct BadSubmit {
  const char* name;
  const char* text;
  const char* expect;  // in stderr, after "job.sub:LINE: "
};

TEST_F(Queue, MalformedSubmitFilesQueueNothing) {
  const BadSubmit cases[] = {
      {"not a command", "executable = /bin/true\nthis is not a command\nqueue\n", "job.sub:2:"},
      {"unknown universe", "universe = martian\nexecutable = /bin/true\nqueue\n", "job.sub:1:"},
      {"bad expression", "executable = /bin/true\nrequirements = (Memory > \nqueue\n",
       "job.sub:2:"},
      {"missing executable", "executable = /no/such/program\nqueue\n", "job.sub:"},
      {"unreadable input",
       "universe = local\nexecutable = /bin/cat\ninput = /no/such/input\nqueue\n", "job.sub:"},
      {"bad queue", "executable = /bin/true\nqueue -3\n", "job.sub:2:"},
      {"unterminated queue list", "executable = /bin/true\nqueue X in (a, b\n", "job.sub:"},
      {"no queue", "executable = /bin/true\n", "job.sub"},
  };
  for (auto& c : cases) {
    env_->Write("job.sub", c.text);
    auto r = env_->Kite({"submit", "job.sub"});
    EXPECT_NE(r.exit_code, 0) << c.name;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << c.name << ": one line expected: " << r.err;
  }
  EXPECT_EQ(QueuedJobs(), 0u);
}

TEST_F(Queue, QueryByIdConstraintAndJson) {
  int c = env_->Submit(
      "executable = /bin/true\nhold = true\narguments = $(Item)\n"
      "+Color = \"$(Item)\"\nqueue Item in (red, green, blue)\n");
  ASSERT_GT(c, 0);
  std::string cs = std::to_string(c);
  auto r = env_->Kite({"q"});
  EXPECT_NE(r.out.find("ID: " + cs), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("Total for query: 3 jobs; 0 completed, 0 removed, 0 idle, 0 running, 3 held"),
      std::string::npos)
      << r.out;
  r = env_->Kite({"q", "-nobatch"});
  EXPECT_NE(r.out.find(cs + ".2"), std::string::npos) << r.out;
  r = env_->Kite({"q", "-constraint", "Color == \"green\"", "-json"});
  auto parsed = boost::json::parse(r.out);
  auto& a = parsed.as_array();
  ASSERT_EQ(a.size(), 1u) << r.out;
  EXPECT_EQ(a[0].as_object().at("ProcId").as_int64(), 1);
  EXPECT_EQ(a[0].as_object().at("ClusterId").as_int64(), c);
  EXPECT_EQ(a[0].as_object().at("Args").as_string(), "green");
  EXPECT_EQ(a[0].as_object().at("JobStatus").as_int64(), 5);
  r = env_->Kite({"q", cs + ".2", "-json"});
  auto one = boost::json::parse(r.out);
  EXPECT_EQ(one.as_array().size(), 1u);
  r = env_->Kite({"q", "-constraint", "((("});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("constraint"), std::string::npos) << r.err;
  r = env_->Kite({"q", "12.x"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad job id"), std::string::npos) << r.err;
}

TEST_F(Queue, ActionsReportWhatTheyDid) {
  int c = env_->Submit("executable = /bin/true\nhold = true\nqueue 2\n");
  std::string cs = std::to_string(c);
  auto r = env_->Kite({"release", cs + ".0", cs + ".7"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("1 job(s) released."), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Job " + cs + ".7 not found"), std::string::npos) << r.err;
  r = env_->Kite({"rm", "-constraint", "JobStatus == 5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 job(s) removed."), std::string::npos) << r.out;
  r = env_->Kite({"rm"});
  EXPECT_NE(r.exit_code, 0);
}

TEST_F(Queue, WaitReportsMissingAndTimesOut) {
  auto r = env_->Kite({"wait", "999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such job"), std::string::npos) << r.err;
  // Held, but a periodic_release might free it: the wait goes on until its timeout.
  int c = env_->Submit("executable = /bin/true\nhold = true\nperiodic_release = false\nqueue\n");
  r = env_->Kite({"wait", std::to_string(c), "--timeout", "0.5"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("0 of 1 job(s) done"), std::string::npos) << r.out;
  // Held with nothing to release it: the wait ends at once, saying why.
  int stuck = env_->Submit("executable = /bin/true\nhold = true\nqueue\n");
  r = env_->Kite({"wait", std::to_string(stuck), "-timeout", "30"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find(std::to_string(stuck) + ".0: submitted on hold"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing to release them"), std::string::npos) << r.err;
  r = env_->Kite({"wait", std::to_string(stuck), "-timeout", "nonsense"});
  EXPECT_EQ(r.exit_code != 0 && r.exit_code != 3 && r.exit_code != 4, true) << r.exit_code;
}

// Raw requests on the agent's socket: every malformed one gets an error, and the agent serves on.
std::string RawRequest(const std::string& socket, const std::string& bytes) {
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket s(io);
  s.connect(boost::asio::local::stream_protocol::endpoint(socket));
  boost::asio::write(s, boost::asio::buffer(bytes));
  s.shutdown(boost::asio::socket_base::shutdown_send);
  std::string out;
  boost::system::error_code ec;
  boost::asio::read(s, boost::asio::dynamic_buffer(out), ec);
  return out;
}

std::string Post(const std::string& target, const std::string& body) {
  return "POST " + target +
         " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

TEST_F(Queue, MalformedApiRequestsGetErrors) {
  std::string sock = env_->home() + "/agent.sock";
  struct {
    std::string request, status, text;
  } cases[] = {
      {"this is not http\r\n\r\n", "400", "malformed request"},
      {Post("/v1/query", "{not json"), "400", "not JSON"},
      {Post("/v1/query", "[1,2]"), "400", "JSON object"},
      {Post("/v1/query", "{\"ids\": 5}"), "400", "ids must be an array"},
      {Post("/v1/act", "{\"action\": \"explode\", \"ids\": [\"1\"]}"), "400",
       "rm, forcex, hold, release, vacate or checkpoint"},
      {Post("/v1/submit", "{\"cluster\": 77, \"common\": [], \"procs\": [[]]}"), "409",
       "not a fresh cluster id"},
      {Post("/v1/submit", "{\"cluster\": \"x\"}"), "400", "cluster must be an integer"},
      {Post("/v1/nowhere", "{}"), "404", "no such endpoint"},
      {"GET /v1/query HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "405", "use POST"},
      {"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{}", "413",
       "malformed request"},
  };
  for (auto& c : cases) {
    auto reply = RawRequest(sock, c.request);
    EXPECT_NE(reply.find("HTTP/1.1 " + c.status), std::string::npos) << c.request << "\n" << reply;
    EXPECT_NE(reply.find(c.text), std::string::npos) << c.request << "\n" << reply;
  }
  // A submit with a bad expression changes nothing.
  auto id = RawRequest(sock, Post("/v1/cluster", "{}"));
  auto cl = id.substr(id.find("\"cluster\":") + 10);
  int cluster = std::stoi(cl);
  auto reply = RawRequest(sock, Post("/v1/submit", "{\"cluster\": " + std::to_string(cluster) +
                                                       ", \"common\": [[\"Cmd\", \"(((\"]],"
                                                       " \"procs\": [[]]}"));
  EXPECT_NE(reply.find("HTTP/1.1 400"), std::string::npos) << reply;
  EXPECT_EQ(QueuedJobs(), 0u);
  EXPECT_EQ(env_->Kite({"agent", "status"}).exit_code, 0);
}

TEST(AgentConfig, BadConfigIsRefusedWithKeyAndLine) {
  KiteEnv env("config");
  std::filesystem::create_directories(env.home());
  WriteFile(env.home() + "/config.toml", "[agent]\nperiodic_interval = 60\nnope = 1\n");
  auto r = env.Kite({"agent", "start"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("config.toml:3: agent.nope: unknown key"), std::string::npos) << r.err;
  WriteFile(env.home() + "/config.toml", "[agent]\nmax_local_jobs = \"many\"\n");
  r = env.Kite({"agent", "start"});
  EXPECT_NE(r.err.find("config.toml:2: agent.max_local_jobs: expected an integer"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(env.AgentPid(), 0);
}

TEST(AgentLifecycle, StartStatusStop) {
  KiteEnv env("life");
  auto r = env.Kite({"agent", "status"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("not running"), std::string::npos);
  r = env.Kite({"q"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("kite agent start"), std::string::npos) << r.err;
  env.StartAgent();
  EXPECT_GT(env.AgentPid(), 0);
  r = env.Kite({"agent", "start"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("already running"), std::string::npos);
  struct stat sb;
  ASSERT_EQ(stat((env.home() + "/agent.sock").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  env.StopAgent();
  EXPECT_EQ(env.AgentPid(), 0);
}

}  // namespace
}  // namespace kite::testing
