// The REST endpoint's pieces without a socket: target parsing, the token check and file, listen
// addresses, the [rest] config keys, and RestService answering requests against a real queue.
#include "agent/rest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "agent/api.h"
#include "agent/config.h"
#include "agent/http_session.h"
#include "agent/rest_server.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;

TEST(RestTarget, SplitsAndDecodes) {
  auto t = ParseRestTarget("/api/v1/jobs?status=held%2Cidle&constraint=ProcId+%3D%3D+1&&x");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->path, "/api/v1/jobs");
  ASSERT_EQ(t->params.size(), 3u);
  EXPECT_EQ(t->params[0], (std::pair<std::string, std::string>{"status", "held,idle"}));
  EXPECT_EQ(t->params[1].second, "ProcId == 1");
  EXPECT_EQ(t->params[2], (std::pair<std::string, std::string>{"x", ""}));
  EXPECT_EQ(ParseRestTarget("/a%2Fb+c")->path, "/a/b+c");  // '+' is a space only in queries
}

TEST(RestTarget, RefusesMalformed) {
  for (const char* bad :
       {"", "api/v1/jobs", "/%", "/%4", "/%zz", "/?a=%g0", "/?a=%00", "/%00", "http://host/x"}) {
    EXPECT_FALSE(ParseRestTarget(bad)) << bad;
  }
}

TEST(RestToken, BearerMatchesOnlyTheToken) {
  std::string token(64, 'a');
  EXPECT_TRUE(BearerMatches("Bearer " + token, token));
  EXPECT_TRUE(BearerMatches("bearer " + token, token));
  EXPECT_FALSE(BearerMatches("Bearer " + token + "a", token));
  EXPECT_FALSE(BearerMatches("Bearer " + token.substr(1) + "b", token));
  EXPECT_FALSE(BearerMatches(token, token));
  EXPECT_FALSE(BearerMatches("Basic " + token + "x", token));
  EXPECT_FALSE(BearerMatches("", token));
  EXPECT_FALSE(BearerMatches("Bearer ", ""));
}

TEST(RestToken, MadeOncePrivateAndKept) {
  testing::TempDir dir("rest-token");
  std::string path = dir / "rest.token";
  auto a = LoadOrCreateRestToken(path);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->size(), 64u);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto b = LoadOrCreateRestToken(path);
  ASSERT_TRUE(b);
  EXPECT_EQ(*a, *b);
  testing::TempDir other("rest-token");
  EXPECT_NE(*LoadOrCreateRestToken(other / "rest.token"), *a);  // random, not fixed
  ::chmod(path.c_str(), 0640);
  auto open = LoadOrCreateRestToken(path);
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().code(), ErrorCode::kPermission);
  ::chmod(path.c_str(), 0600);
  std::ofstream(path) << "short\n";
  EXPECT_FALSE(LoadOrCreateRestToken(path));
}

TEST(RestListen, LoopbackUnlessAllowed) {
  EXPECT_EQ(ParseListenAddress("127.0.0.1:8080", false)->port(), 8080);
  EXPECT_TRUE(ParseListenAddress("127.0.0.2:0", false));
  EXPECT_TRUE(ParseListenAddress("[::1]:80", false));
  EXPECT_TRUE(ParseListenAddress("localhost:1", false)->address().is_loopback());
  for (const char* remote : {"0.0.0.0:80", "10.0.0.1:80", "[::]:80"}) {
    auto r = ParseListenAddress(remote, false);
    ASSERT_FALSE(r) << remote;
    EXPECT_NE(r.error().message().find("allow_remote"), std::string::npos);
    EXPECT_TRUE(ParseListenAddress(remote, true)) << remote;
  }
  for (const char* bad : {"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:8o", "example.org:80", "[::1:80", "[::1]80"})
    EXPECT_FALSE(ParseListenAddress(bad, true)) << bad;
}

TEST(RestConfig, KeysAndChecks) {
  auto o = ParseAgentOptions("/h", "[rest]\nlisten = \"0.0.0.0:9\"\nallow_remote = true\n",
                             "config.toml");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->rest_listen, "0.0.0.0:9");
  EXPECT_TRUE(o->rest_allow_remote);
  EXPECT_EQ(o->rest_token_path(), "/h/rest.token");
  struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"[rest]\n\nlisten = \"0.0.0.0:9\"\n",
       "config.toml:3: rest.listen: 0.0.0.0 is not a loopback"},
      {"[rest]\nlisten = 9\n", "config.toml:2: rest.listen: expected a string"},
      {"[rest]\nlisten = \"x:9\"\n", "config.toml:2: rest.listen: 'x' is not an IP address"},
      {"[rest]\nallow_remote = 1\n", "config.toml:2: rest.allow_remote: expected true or false"},
      {"[rest]\nport = 1\n", "config.toml:2: rest.port: unknown key"},
  };
  for (auto& c : cases) {
    auto r = ParseAgentOptions("/h", c.text, "config.toml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << r.error().message();
  }
}

class RestServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AgentOptions o;
    o.home = dir_.path();
    o.start_gridmanagers = false;
    o.pool.local_slots = 0;  // no startd: the pool is tested with real processes (pool_it)
    agent_ = std::make_unique<Agent>(o);
    ASSERT_TRUE(agent_->Start());
    auto c = agent_->queue().NewCluster();
    SubmitRequest req;
    req.cluster = *c;
    req.common = {{"Owner", "\"u\""}, {"Cmd", "\"/bin/true\""}, {"JobUniverse", "12"}};
    req.procs = {{{"ProcId", "0"}, {"JobStatus", "5"}}, {{"ProcId", "1"}}};
    ASSERT_TRUE(agent_->queue().Submit(req));
    service_ = std::make_unique<RestService>(*agent_, token_);
  }
  HttpResponse Ask(http::verb verb, const std::string& target, bool auth = true) {
    HttpRequest req{verb, target, 11};
    if (auth) req.set(http::field::authorization, "Bearer " + token_);
    return service_->Handle(req);
  }
  testing::TempDir dir_{"rest-service"};
  std::string token_ = std::string(64, 'f');
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<RestService> service_;
};

TEST_F(RestServiceTest, AnswersEachRoute) {
  struct {
    http::verb verb;
    std::string target;
    bool auth;
    int status;
    std::string contains;
  } cases[] = {
      {http::verb::get, "/healthz", false, 200, "ok"},
      {http::verb::get, "/", false, 200, "<title>Kite status</title>"},
      {http::verb::get, "/api/v1/jobs", false, 401, ""},
      {http::verb::get, "/nope", false, 401, ""},
      {http::verb::post, "/api/v1/jobs", false, 401, ""},
      {http::verb::post, "/healthz", false, 405, "read-only"},
      {http::verb::delete_, "/api/v1/jobs/1.0", true, 405, "read-only"},
      {http::verb::get, "/api/v1/jobs", true, 200, "\"ProcId\": 1"},
      {http::verb::get, "/api/v1/jobs?status=held", true, 200, "\"JobStatus\": 5"},
      {http::verb::get, "/api/v1/jobs?status=idle&cluster=1", true, 200, "\"ProcId\": 1"},
      {http::verb::get, "/api/v1/jobs?constraint=(", true, 400, "constraint: "},
      {http::verb::get, "/api/v1/jobs?cluster=1&cluster=1", true, 400, "given twice"},
      {http::verb::get, "/api/v1/jobs/1.1", true, 200, "\"ProcId\": 1"},
      {http::verb::get, "/api/v1/jobs/1.7", true, 404, "not found"},
      {http::verb::get, "/api/v1/jobs/1", true, 400, "CLUSTER.PROC"},
      {http::verb::get, "/api/v1/jobs/1.0/events", true, 200, "\"code\":0"},
      {http::verb::get, "/api/v1/jobs/1.0?x=1", true, 400, "no parameters"},
      {http::verb::get, "/api/v1/resources", true, 200, "[]"},
      {http::verb::get, "/api/v1/credentials", true, 200, "[]"},
      {http::verb::get, "/metrics", true, 200, "kite_jobs{status=\"held\"} 1"},
      {http::verb::get, "/metrics?x", true, 400, "no parameters"},
      {http::verb::get, "/api/v1/nothing", true, 404, "no such endpoint"},
      {http::verb::get, "/api/v1/jobs?constraint=%zz", true, 400, "percent-encoding"},
  };
  for (auto& c : cases) {
    auto res = Ask(c.verb, c.target, c.auth);
    EXPECT_EQ(res.result_int(), c.status) << c.target << ": " << res.body();
    EXPECT_NE(res.body().find(c.contains), std::string::npos) << c.target << ": " << res.body();
    if (c.status == 401) {
      EXPECT_EQ(res[http::field::www_authenticate], "Bearer");
      EXPECT_EQ(res.body(), "");
    }
  }
  EXPECT_EQ(service_->answered().at(401), 3u);
  // HEAD: a GET's length, no body.
  auto get = Ask(http::verb::get, "/api/v1/jobs");
  auto head = Ask(http::verb::head, "/api/v1/jobs");
  EXPECT_EQ(head.body(), "");
  EXPECT_EQ(head[http::field::content_length], std::to_string(get.body().size()));
}

// The agent's socket answers from one table of endpoints: each documented in docs/api.md, a path
// it does not hold is 404, another method 405 naming the right one, a body that is not a JSON
// object 400.
TEST_F(RestServiceTest, TheAgentsEndpointsAreOneTableAndEachIsDocumented) {
  std::ifstream in(std::string(KITE_SOURCE_DIR) + "/docs/api.md");
  std::stringstream doc;
  doc << in.rdbuf();
  ASSERT_FALSE(doc.str().empty());
  auto endpoints = ApiEndpoints();
  EXPECT_EQ(endpoints.size(), 18u);
  for (const auto& e : endpoints) {
    EXPECT_NE(doc.str().find("`" + e), std::string::npos) << e << " is not in docs/api.md";
  }
  auto ask = [&](http::verb verb, const std::string& target, const std::string& body) {
    HttpRequest req{verb, target, 11};
    req.body() = body;
    req.prepare_payload();
    HttpResponse out;
    HandleApiRequest(*agent_, req, [&](HttpResponse r) { out = std::move(r); });
    return out;
  };
  struct Case {
    http::verb verb;
    const char* target;
    const char* body;
    int status;
    const char* says;
  } cases[] = {
      {http::verb::post, "/v1/teleport", "{}", 404, "no such endpoint: /v1/teleport"},
      {http::verb::get, "/v1/events", "", 405, "use POST for /v1/events"},
      {http::verb::post, "/v1/ping", "", 405, "use GET for /v1/ping"},
      {http::verb::post, "/v1/events", "[1]", 400, "must be a JSON object"},
      {http::verb::get, "/v1/ping", "", 200, "\"agent\":\"kite-agent\""},
  };
  for (const auto& c : cases) {
    auto r = ask(c.verb, c.target, c.body);
    EXPECT_EQ(r.result_int(), c.status) << c.target << ": " << r.body();
    EXPECT_NE(r.body().find(c.says), std::string::npos) << c.target << ": " << r.body();
  }
}

TEST_F(RestServiceTest, GridManagerResourceReportsAreKeptAndShown) {
  auto post = [&](const std::string& body) {
    HttpRequest req{http::verb::post, "/v1/grid/update", 11};
    req.body() = body;
    req.prepare_payload();
    int status = 0;
    HandleApiRequest(*agent_, req, [&](HttpResponse r) { status = r.result_int(); });
    return status;
  };
  EXPECT_EQ(post(R"({"updates": [], "resources": [{"resource": "gk:9", "reachable": false,
                  "last_contact": 0, "last_error": "connection refused"}]})"),
            200);
  ASSERT_EQ(agent_->grid_resources().count("gk:9"), 1u);
  EXPECT_FALSE(agent_->grid_resources().at("gk:9").reachable);
  EXPECT_EQ(agent_->grid_resources().at("gk:9").last_error, "connection refused");
  EXPECT_EQ(post(R"({"updates": [], "resources": [{"resource": "gk:9", "reachable": true,
                  "last_contact": 1767225600.5}]})"),
            200);
  EXPECT_TRUE(agent_->grid_resources().at("gk:9").reachable);
  EXPECT_DOUBLE_EQ(agent_->grid_resources().at("gk:9").last_contact, 1767225600.5);
  // Malformed reports change nothing and fail the request.
  for (const char* bad : {R"({"updates": [], "resources": {}})",
                          R"({"updates": [], "resources": [{"resource": "gk:9"}]})",
                          R"({"updates": [], "resources": [{"resource": "", "reachable": true}]})",
                          R"({"updates": [], "resources": [{"resource": "x:1", "reachable": 1}]})",
                          R"({"updates": [], "resources": [{"resource": "gk:9", "reachable": false},
                              {"resource": "x:1", "reachable": true, "last_contact": "now"}]})"}) {
    EXPECT_EQ(post(bad), 400) << bad;
  }
  EXPECT_TRUE(agent_->grid_resources().at("gk:9").reachable);
  EXPECT_EQ(agent_->grid_resources().count("x:1"), 0u);
}

}  // namespace
}  // namespace kite::agent

namespace kite::agent {
namespace {

// The sessions waiting for a request: at most `cap`, the one waiting longest closed first, so
// connections that send nothing never keep out a client that sends its request at once.
TEST(IdleRoster, TheOldestWaitingSessionMakesRoom) {
  IdleRoster roster(3);
  std::vector<int> closed;
  std::vector<IdleRoster::Entry> entries;
  for (int i = 0; i < 3; ++i) entries.push_back(roster.Add([&closed, i] { closed.push_back(i); }));
  EXPECT_EQ(roster.size(), 3u);
  EXPECT_TRUE(closed.empty());
  roster.Remove(entries[0]);  // session 0 got its request: it no longer waits
  roster.Add([&closed] { closed.push_back(3); });
  EXPECT_TRUE(closed.empty());
  roster.Add([&closed] { closed.push_back(4); });  // full: session 1 waited longest
  EXPECT_EQ(closed, std::vector<int>{1});
  EXPECT_TRUE(roster.EvictOldest());
  EXPECT_EQ(closed, (std::vector<int>{1, 2}));
  EXPECT_EQ(roster.size(), 2u);
  EXPECT_EQ(roster.evicted(), 2u);
  IdleRoster empty(1);
  EXPECT_FALSE(empty.EvictOldest());
}

}  // namespace
}  // namespace kite::agent
