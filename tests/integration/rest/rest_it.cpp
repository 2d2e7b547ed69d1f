// The agent's REST status endpoint as a user and a monitoring system meet it: a real kite-agent
// started with `kite agent start --rest 127.0.0.1:0`, real TCP on loopback, raw HTTP requests
// (so malformed ones can be sent too), and the status page loaded in headless Chromium.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "credentials/ca.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

namespace json = boost::json;

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string raw;
};

// A connection to 127.0.0.1:port whose reads time out after `seconds`; -1 when it fails.
int DialLoopback(int port, int seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `raw` bytes to 127.0.0.1:port and reads until the server closes.
HttpReply Exchange(int port, const std::string& raw) {
  HttpReply r;
  int fd = DialLoopback(port, 20);
  if (fd < 0) return r;
  size_t off = 0;
  while (off < raw.size()) {
    ssize_t n = ::send(fd, raw.data() + off, raw.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading everything
    off += static_cast<size_t>(n);
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    r.raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  auto end = r.raw.find("\r\n\r\n");
  if (r.raw.compare(0, 9, "HTTP/1.1 ") != 0 || end == std::string::npos) return r;
  r.status = std::stoi(r.raw.substr(9, 3));
  std::istringstream head(r.raw.substr(0, end));
  std::string line;
  std::getline(head, line);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  r.body = r.raw.substr(end + 4);
  return r;
}

std::string Str(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

class Rest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("rest");
    env_->AddEnv("X509_CERT_DIR=" + env_->home() + "/ca/certificates");
    Start();
  }
  void Start() {
    auto r = env_->Kite({"agent", "start", "--rest", "127.0.0.1:0"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ASSERT_NE(r.out.find("REST status endpoint: http://127.0.0.1:"), std::string::npos) << r.out;
    std::smatch m;
    std::string url = ReadFileOr(env_->home() + "/rest.address");
    ASSERT_TRUE(std::regex_search(url, m, std::regex("^http://127\\.0\\.0\\.1:([0-9]+)/"))) << url;
    port_ = std::stoi(m[1]);
    token_ = ReadFileOr(env_->home() + "/rest.token");
    while (!token_.empty() && token_.back() == '\n') token_.pop_back();
  }
  HttpReply Get(const std::string& target, const std::string& auth = "default",
                const std::string& method = "GET") {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    std::string a = auth == "default" ? "Bearer " + token_ : auth;
    if (!a.empty()) req += "Authorization: " + a + "\r\n";
    req += "Connection: close\r\n\r\n";
    return Exchange(port_, req);
  }
  json::value GetJson(const std::string& target) {
    auto r = Get(target);
    EXPECT_EQ(r.status, 200) << target << "\n" << r.raw;
    boost::system::error_code ec;
    auto v = json::parse(r.body, ec);
    EXPECT_FALSE(ec) << target << ": " << r.body;
    return v;
  }
  // "C.P" of every job in a JSON array of job ads.
  static std::vector<std::string> Ids(const json::value& v) {
    std::vector<std::string> out;
    if (!v.is_array()) return out;
    for (auto& j : v.as_array()) {
      auto& o = j.as_object();
      out.push_back(std::to_string(o.at("ClusterId").to_number<int64_t>()) + "." +
                    std::to_string(o.at("ProcId").to_number<int64_t>()));
    }
    return out;
  }
  // A proxy of a test CA's user, saved at dir()/NAME.
  std::string MakeProxy(const std::string& name) {
    auto ca = credentials::TestCa::Open(env_->home() + "/ca");
    if (!ca) ca = credentials::TestCa::Init(env_->home() + "/ca");
    EXPECT_TRUE(ca) << ca.error().ToString();
    if (!ca) return "";
    auto user = ca->IssueUserCredential("CN=Rest Tester");
    EXPECT_TRUE(user) << user.error().ToString();
    credentials::ProxyOptions po;
    po.lifetime = std::chrono::hours(2);
    auto proxy = credentials::CreateProxy(*user, po);
    EXPECT_TRUE(proxy) << proxy.error().ToString();
    std::string path = env_->dir() + "/" + name;
    EXPECT_TRUE(credentials::SaveProxyFile(path, proxy->credential));
    return path;
  }

  std::unique_ptr<KiteEnv> env_;
  int port_ = 0;
  std::string token_;
};

const char* kProtected[] = {
    "/api/v1/jobs",          "/api/v1/jobs/1.0",         "/api/v1/jobs/1.0/events",
    "/api/v1/resources",     "/api/v1/credentials",      "/metrics",
    "/api/v1/no-such-thing", "/api/v1/jobs?status=held", "/api/v1/dags",
    "/api/v1/dags/1"};

TEST_F(Rest, EveryEndpointButHealthzNeedsTheToken) {
  std::string wrong = token_;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  for (const char* path : kProtected) {
    for (const std::string& auth :
         std::vector<std::string>{"", "Bearer " + wrong, "Bearer", "Basic " + token_,
                                  "Bearer " + token_ + "x", token_}) {
      auto r = Get(path, auth);
      EXPECT_EQ(r.status, 401) << path << " with '" << auth << "'\n" << r.raw;
      EXPECT_EQ(r.headers["www-authenticate"], "Bearer") << path;
      EXPECT_EQ(r.body, "") << path;  // nothing else
    }
    // Writing methods without the token are refused the same way.
    EXPECT_EQ(Get(path, "", "DELETE").status, 401) << path;
    EXPECT_NE(Get(path).status, 401) << path;  // the right token opens it
  }
  auto h = Get("/healthz", "");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, "ok\n");
  // The page itself holds no data; it is served without the token and asks for it.
  auto page = Get("/", "");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<title>Kite status</title>"), std::string::npos);
}

TEST_F(Rest, TokenFileIsPrivateStableAndListenerIsLoopback) {
  struct stat st;
  ASSERT_EQ(::stat((env_->home() + "/rest.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(std::regex_match(token_, std::regex("[0-9a-f]{64}"))) << token_;
  // The listening socket is bound to 127.0.0.1 (0100007F in /proc/net/tcp), not to any address.
  char local[32];
  std::snprintf(local, sizeof local, "0100007F:%04X 00000000:0000 0A", port_);
  EXPECT_NE(ReadFileOr("/proc/net/tcp").find(local), std::string::npos);
  std::string old = token_;
  env_->StopAgent();
  EXPECT_FALSE(std::filesystem::exists(env_->home() + "/rest.address"));
  Start();
  EXPECT_EQ(token_, old);
  EXPECT_EQ(Get("/api/v1/jobs").status, 200);
  // `kite agent status` says where the endpoint is.
  auto s = env_->Kite({"agent", "status"});
  EXPECT_NE(s.out.find("REST status endpoint: http://127.0.0.1:" + std::to_string(port_)),
            std::string::npos)
      << s.out;
}

TEST_F(Rest, ConfigListenAndItsChecks) {
  env_->StopAgent();
  // Without --rest the configured address is used.
  WriteFile(env_->home() + "/config.toml", "[rest]\nlisten = \"127.0.0.1:0\"\n");
  env_->StartAgent();
  EXPECT_NE(ReadFileOr(env_->home() + "/rest.address").find("http://127.0.0.1:"),
            std::string::npos);
  env_->StopAgent();
  // A non-loopback address needs allow_remote, and the error names the file, line and key.
  WriteFile(env_->home() + "/config.toml", "[rest]\n\nlisten = \"0.0.0.0:8080\"\n");
  auto r = env_->Kite({"agent", "start"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("config.toml:3: rest.listen: 0.0.0.0 is not a loopback address"),
            std::string::npos)
      << r.err;
  WriteFile(env_->home() + "/config.toml", "[rest]\nlisten = \"127.0.0.1:x\"\n");
  r = env_->Kite({"agent", "start"});
  EXPECT_NE(r.err.find("config.toml:2: rest.listen: bad port 'x'"), std::string::npos) << r.err;
  WriteFile(env_->home() + "/config.toml", "[rest]\nallow_remote = \"yes\"\n");
  r = env_->Kite({"agent", "start"});
  EXPECT_NE(r.err.find("config.toml:2: rest.allow_remote: expected true or false"),
            std::string::npos)
      << r.err;
  // --rest is checked the same way.
  WriteFile(env_->home() + "/config.toml", "");
  r = env_->Kite({"agent", "start", "--rest", "10.1.2.3:80"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a loopback address"), std::string::npos) << r.err;
  // A token file others can read is refused, not used.
  ::chmod((env_->home() + "/rest.token").c_str(), 0644);
  r = env_->Kite({"agent", "start", "--rest", "127.0.0.1:0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("must be private to its owner (mode 0644)"), std::string::npos) << r.err;
  ::chmod((env_->home() + "/rest.token").c_str(), 0600);
  Start();
}

TEST_F(Rest, OnlyReadsNothingChangesAJob) {
  int c = env_->Submit("universe = local\nexecutable = /bin/true\nhold = true\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  for (const char* m : {"POST", "PUT", "DELETE", "PATCH"}) {
    for (std::string path : std::vector<std::string>{"/api/v1/jobs", "/api/v1/jobs/" + id,
                                                     "/metrics", "/healthz", "/"}) {
      auto r = Get(path, "default", m);
      EXPECT_EQ(r.status, 405) << m << " " << path << "\n" << r.raw;
      EXPECT_EQ(r.headers["allow"], "GET, HEAD") << m << " " << path;
    }
  }
  EXPECT_EQ(env_->JobStatus(id), 5);
  // HEAD: the headers of a GET, no body.
  auto get = Get("/api/v1/jobs/" + id);
  auto head = Get("/api/v1/jobs/" + id, "default", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers["content-length"], std::to_string(get.body.size()));
  EXPECT_EQ(head.body, "");
}

TEST_F(Rest, JobsFiltersOneJobAndEvents) {
  int held = env_->Submit("universe = local\nexecutable = /bin/true\nhold = true\nqueue 2\n");
  int running = env_->Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue\n",
                             "run.sub");
  int done = env_->Submit("universe = local\nexecutable = /bin/true\nqueue\n", "done.sub");
  std::string h0 = std::to_string(held) + ".0", h1 = std::to_string(held) + ".1";
  std::string r0 = std::to_string(running) + ".0", d0 = std::to_string(done) + ".0";
  ASSERT_EQ(env_->Kite({"wait", std::to_string(done), "--timeout", "30"}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(r0) == 2; }, 20));

  auto all = Ids(GetJson("/api/v1/jobs"));
  EXPECT_EQ(all, (std::vector<std::string>{h0, h1, r0}));
  EXPECT_EQ(Ids(GetJson("/api/v1/jobs?status=held")), (std::vector<std::string>{h0, h1}));
  EXPECT_EQ(Ids(GetJson("/api/v1/jobs?status=running,idle")), (std::vector<std::string>{r0}));
  EXPECT_EQ(Ids(GetJson("/api/v1/jobs?cluster=" + std::to_string(running))),
            (std::vector<std::string>{r0}));
  EXPECT_EQ(Ids(GetJson("/api/v1/jobs?constraint=ProcId%20%3D%3D%201")),
            (std::vector<std::string>{h1}));
  EXPECT_EQ(Ids(GetJson("/api/v1/jobs?status=held&constraint=ProcId+%3D%3D+0")),
            (std::vector<std::string>{h0}));
  EXPECT_EQ(Ids(GetJson("/api/v1/jobs?history=true&status=completed")),
            (std::vector<std::string>{d0}));

  auto bad = Get("/api/v1/jobs?constraint=ProcId%20%3D%3D");
  EXPECT_EQ(bad.status, 400) << bad.raw;
  EXPECT_NE(bad.body.find("\"error\":\"constraint: "), std::string::npos) << bad.body;
  for (const std::string& q :
       std::vector<std::string>{"status=sleeping", "cluster=x", "cluster=0", "colour=red",
                                "status=held&status=idle", "limit=5", "history=maybe"}) {
    auto r = Get("/api/v1/jobs?" + q);
    EXPECT_EQ(r.status, 400) << q << "\n" << r.raw;
    EXPECT_NE(r.body.find("\"error\""), std::string::npos) << q;
  }

  auto one = GetJson("/api/v1/jobs/" + h1).as_object();
  EXPECT_EQ(one.at("JobStatus").to_number<int64_t>(), 5);
  EXPECT_EQ(one.at("ProcId").to_number<int64_t>(), 1);
  // A job that has left the queue is answered from history.
  auto finished = GetJson("/api/v1/jobs/" + d0).as_object();
  EXPECT_EQ(finished.at("JobStatus").to_number<int64_t>(), 4);
  EXPECT_EQ(finished.at("ExitCode").to_number<int64_t>(), 0);
  EXPECT_EQ(Get("/api/v1/jobs/999.0").status, 404);
  EXPECT_EQ(Get("/api/v1/jobs/999.0/events").status, 404);
  EXPECT_EQ(Get("/api/v1/jobs/" + std::to_string(held)).status, 400);
  EXPECT_EQ(Get("/api/v1/jobs/1.x").status, 400);

  auto events = GetJson("/api/v1/jobs/" + d0 + "/events").as_array();
  std::vector<int64_t> codes;
  for (auto& e : events) codes.push_back(e.as_object().at("code").to_number<int64_t>());
  // Submitted, executing, terminated: the job's user-log events.
  EXPECT_EQ(codes, (std::vector<int64_t>{0, 1, 5}));
  ASSERT_EQ(env_->Kite({"rm", r0}).exit_code, 0);
}

TEST_F(Rest, CredentialsResourcesAndMetrics) {
  std::string proxy = MakeProxy("x509up");
  env_->Submit("universe = local\nexecutable = /bin/true\nhold = true\nx509userproxy = " + proxy +
               "\nqueue 2\n");
  int lost = env_->Submit(
      "universe = local\nexecutable = /bin/true\nhold = true\nx509userproxy = missing.pem\nqueue\n",
      "lost.sub");
  // A grid job at a gatekeeper nobody listens on: its gridmanager reports the site unreachable.
  int g = env_->Submit(
      "universe = grid\ngrid_resource = kite 127.0.0.1:1/fork\n"
      "executable = /bin/true\ntransfer_executable = false\nx509userproxy = " +
          proxy + "\nqueue\n",
      "grid.sub");

  auto creds = GetJson("/api/v1/credentials").as_array();
  ASSERT_EQ(creds.size(), 2u) << json::serialize(creds);
  bool first_is_good = Str(creds[0].as_object().at("path")) == proxy;
  auto& good = creds[first_is_good ? 0 : 1].as_object();
  auto& bad = creds[first_is_good ? 1 : 0].as_object();
  EXPECT_TRUE(good.at("readable").as_bool());
  EXPECT_EQ(good.at("job_count").to_number<int64_t>(), 3);
  EXPECT_NE(std::string(good.at("identity").as_string()).find("CN=Rest Tester"), std::string::npos);
  int64_t left = good.at("seconds_left").to_number<int64_t>();
  EXPECT_GT(left, 7000);
  EXPECT_LE(left, 7200);
  // The credential monitor's view of it (default settings: no alarms, no MyProxy).
  EXPECT_EQ(good.at("min_lifetime").to_number<int64_t>(), 600);
  EXPECT_EQ(json::serialize(good.at("alarms")), "[]");
  EXPECT_FALSE(good.at("myproxy_renewal").as_bool());
  EXPECT_FALSE(bad.at("readable").as_bool());
  EXPECT_EQ(Str(bad.at("path")), env_->dir() + "/missing.pem");
  EXPECT_EQ(json::serialize(bad.at("jobs")), "[\"" + std::to_string(lost) + ".0\"]");

  std::string gid = std::to_string(g) + ".0";
  json::object res;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto v = GetJson("/api/v1/resources");
        if (!v.is_array() || v.as_array().size() != 1) return false;
        res = v.as_array()[0].as_object();
        return res.at("reachable").is_bool();
      },
      30))
      << json::serialize(res) << ReadFileOr(env_->home() + "/gridmanager.log");
  EXPECT_EQ(Str(res.at("resource")), "kite 127.0.0.1:1/fork");
  EXPECT_EQ(Str(res.at("contact")), "127.0.0.1:1");
  EXPECT_FALSE(res.at("reachable").as_bool());
  EXPECT_NE(std::string(res.at("last_error").as_string()), "");
  EXPECT_EQ(res.at("total").to_number<int64_t>(), 1);
  EXPECT_EQ(res.at("jobs").as_object().at("idle").to_number<int64_t>(), 1);

  auto m = Get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  for (const std::string& line : std::vector<std::string>{
           "kite_jobs{status=\"held\"} 3", "kite_jobs{status=\"idle\"} 1",
           "kite_jobs_submitted_total 4", "kite_jobs_completed_total 0",
           "kite_grid_resource_up{resource=\"127.0.0.1:1\"} 0",
           "kite_proxy_readable{path=\"" + env_->dir() + "/missing.pem\"} 0",
           "kite_rest_requests_total{code=\"200\"} ", "# TYPE kite_jobs gauge",
           "# TYPE kite_queue_commits_total counter", "process_start_time_seconds "}) {
    EXPECT_NE(m.body.find("\n" + line), std::string::npos) << line << "\n" << m.body;
  }
  std::smatch sm;
  ASSERT_TRUE(std::regex_search(
      m.body, sm, std::regex("kite_proxy_seconds_left\\{path=\"" + proxy + "\"\\} ([0-9]+)\n")))
      << m.body;
  EXPECT_GT(std::stol(sm[1]), 7000);
  ASSERT_EQ(env_->Kite({"rm", gid}).exit_code, 0);
}

// A reachable site: `kite testgrid up` gives a real gatekeeper on loopback; its gridmanager
// reports it reachable with the time of its last answer.
TEST_F(Rest, ReachableResourceWithLastContact) {
  env_->AddEnv("X509_USER_PROXY=" + env_->dir() + "/x509up");
  auto up = env_->Kite({"testgrid", "up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  // The test grid goes down however the test ends.
  struct Down {
    const KiteEnv* env;
    ~Down() { env->Kite({"testgrid", "down"}); }
  } down{env_.get()};
  std::smatch m;
  ASSERT_TRUE(std::regex_search(up.out, m, std::regex("grid_resource = (kite [^\n]+)"))) << up.out;
  std::string resource = m[1];
  env_->StopAgent();  // again, with the test grid's environment
  Start();
  double before = static_cast<double>(::time(nullptr)) - 1;
  env_->Write("wait.sh", "#!/bin/sh\nsleep 300\n", 0755);
  int c = env_->Submit("universe = grid\ngrid_resource = " + resource +
                       "\nexecutable = wait.sh\nqueue\n");
  json::object res;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto v = GetJson("/api/v1/resources");
        if (!v.is_array() || v.as_array().size() != 1) return false;
        res = v.as_array()[0].as_object();
        return res.at("reachable").is_bool() && res.at("reachable").as_bool() &&
               res.at("jobs").as_object().at("running").to_number<int64_t>() == 1;
      },
      60))
      << json::serialize(res) << ReadFileOr(env_->home() + "/gridmanager.log");
  EXPECT_EQ(Str(res.at("resource")), resource);
  EXPECT_GE(res.at("last_contact").to_number<double>(), before);
  EXPECT_EQ(Str(res.at("last_error")), "");
  auto metrics = Get("/metrics").body;
  EXPECT_NE(metrics.find("kite_grid_resource_up{resource=\"" + Str(res.at("contact")) + "\"} 1"),
            std::string::npos)
      << metrics;
  ASSERT_EQ(env_->Kite({"rm", std::to_string(c)}).exit_code, 0);
  EXPECT_EQ(env_->Kite({"wait", std::to_string(c), "--timeout", "60"}).exit_code, 0);
  env_->StopAgent();
}

TEST_F(Rest, MalformedRequestsAreRefusedAndTheAgentServesOn) {
  auto garbage = Exchange(port_, "GARBAGE\r\n\r\n");
  EXPECT_GE(garbage.status, 400);
  EXPECT_LT(garbage.status, 500);
  auto bad_line = Exchange(port_, "GET /api/v1/jobs HTTP/9.9\r\n\r\n");
  EXPECT_GE(bad_line.status, 400);
  EXPECT_LT(bad_line.status, 500);
  auto huge =
      Exchange(port_, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 << 10, 'a') +
                          "\r\n\r\n");
  EXPECT_EQ(huge.status, 431) << huge.raw.substr(0, 200);
  auto body =
      Exchange(port_, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
  EXPECT_EQ(body.status, 413) << body.raw.substr(0, 200);
  for (const std::string& target :
       std::vector<std::string>{"/api/v1/jobs?constraint=%zz", "/api/v1/jobs?constraint=%4",
                                "/api/v1/jobs/%", "/api/v1/jobs?status=%00"}) {
    auto r = Get(target);
    EXPECT_EQ(r.status, 400) << target << "\n" << r.raw;
  }
  // Without the token, a malformed target is still only a 401.
  EXPECT_EQ(Get("/api/v1/jobs?constraint=%zz", "").status, 401);
  // A client that connects and says nothing does not stop the others.
  int idle = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(idle, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(Get("/healthz", "").status, 200);
  auto q = env_->Kite({"q"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("Total for query"), std::string::npos);
  ::close(idle);
}

// Issue 25, defect 10: slow connections from loopback without a token (all local users share
// 127.0.0.1) no longer keep everyone out. Each trickles a header line now and then; the others'
// requests are answered meanwhile, and each slow one is closed once its request is 10 s late.
TEST_F(Rest, SlowConnectionsWithoutTheTokenKeepNobodyOut) {
  auto dial = [&] {
    int fd = DialLoopback(port_, 1);
    if (fd < 0) return -1;
    std::string start = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    (void)!::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    return fd;
  };
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    int fd = dial();
    if (fd >= 0) slow.push_back(fd);
  }
  ASSERT_GE(slow.size(), 100u);
  auto started = std::chrono::steady_clock::now();
  int answered = 0;
  for (int round = 0; round < 6; ++round) {
    for (int fd : slow) (void)!::send(fd, "X-a: b\r\n", 8, MSG_NOSIGNAL);
    EXPECT_EQ(Get("/healthz", "").status, 200) << "round " << round;
    auto jobs = Get("/api/v1/jobs");
    EXPECT_EQ(jobs.status, 200) << "round " << round << ": " << jobs.raw.substr(0, 200);
    answered += jobs.status == 200;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(answered, 6);
  // None of the slow ones got more than 10 s (and a little) to finish its request.
  std::this_thread::sleep_until(started + std::chrono::seconds(12));
  size_t open = 0;
  for (int fd : slow) {
    char c;
    ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++open;
    ::close(fd);
  }
  EXPECT_EQ(open, 0u) << "slow connections still open after their request's 10 s";
}

TEST_F(Rest, StatusPageInHeadlessChromiumShowsJobsAndCredentials) {
  std::string chromium = "/usr/bin/chromium";
  ASSERT_TRUE(std::filesystem::exists(chromium))
      << "Debian's chromium is needed (scripts/deps.d/rest.txt; run scripts/deps)";
  std::string proxy = MakeProxy("x509up");
  int held = env_->Submit(
      "universe = local\nexecutable = /bin/true\nhold = true\nx509userproxy = " + proxy +
      "\narguments = \"<img src=x onerror=document.title='pwned'>\"\nqueue 2\n");
  int running = env_->Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue\n",
                             "run.sub");
  std::string r0 = std::to_string(running) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(r0) == 2; }, 20));
  std::string profile = env_->dir() + "/chromium-profile";
  auto r =
      RunCommand({chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--user-data-dir=" + profile, "--virtual-time-budget=5000", "--dump-dom",
                  "http://127.0.0.1:" + std::to_string(port_) + "/#token=" + token_},
                 {"HOME=" + env_->dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& dom = r.out;
  for (int p : {0, 1}) {
    std::string id = std::to_string(held) + "." + std::to_string(p);
    std::regex row("<tr data-job=\"" + std::regex_replace(id, std::regex("\\."), "\\.") +
                   "\"><td>[^<]*</td><td>[^<]*</td><td class=\"st-Held\">Held</td>");
    EXPECT_TRUE(std::regex_search(dom, row)) << id << "\n" << dom;
  }
  EXPECT_NE(dom.find("<tr data-job=\"" + r0 + "\"><td>" + r0 + "</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<td class=\"st-Running\">Running</td><td>/bin/sleep 300</td>"),
            std::string::npos)
      << dom;
  // The credential line: the file, whose it is, and the time left (about 2 h).
  std::regex cred(proxy +
                  " — [^<]*CN=Rest Tester — </span><span[^>]*>(01:59:[0-9]{2}|02:00:00) left");
  EXPECT_TRUE(std::regex_search(dom, cred)) << dom;
  // Job attributes are shown as text, never as markup.
  EXPECT_NE(dom.find("&lt;img src=x onerror=document.title=pwned&gt;"), std::string::npos) << dom;
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_NE(dom.find("<title>Kite status</title>"), std::string::npos);
  // Without a token the page asks for one and shows no job.
  auto bare =
      RunCommand({chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--user-data-dir=" + profile + "2", "--virtual-time-budget=3000", "--dump-dom",
                  "http://127.0.0.1:" + std::to_string(port_) + "/"},
                 {"HOME=" + env_->dir()});
  EXPECT_NE(bare.out.find("<form id=\"login\">"), std::string::npos) << bare.out;
  EXPECT_EQ(bare.out.find("data-job="), std::string::npos);
  ASSERT_EQ(env_->Kite({"rm", r0}).exit_code, 0);
}

TEST_F(Rest, DagsAreListedWithTheirCountsAndOneDagWithItsNodes) {
  env_->Write("node.sub",
              "universe = local\nexecutable = /bin/sh\narguments = \"-c 'exit 0'\"\nqueue\n");
  env_->Write("slow.sub", "universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue\n");
  env_->Write(
      "d.dag",
      "JOB A node.sub\nJOB S slow.sub\nJOB Z node.sub\nPARENT A CHILD S\nPARENT S CHILD Z\n");
  auto r = env_->Kite({"dag", "submit", "d.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("submitted to cluster ([0-9]+)"))) << r.out;
  int dag = std::stoi(m[1]);
  // Once S runs: A done, S queued, Z waiting.
  json::value one;
  ASSERT_TRUE(WaitUntil(
      [&] {
        one = GetJson("/api/v1/dags/" + std::to_string(dag));
        return one.is_object() && one.as_object().at("DAG_NodesDone").to_number<int64_t>() == 1 &&
               one.as_object().at("DAG_NodesQueued").to_number<int64_t>() == 1;
      },
      20))
      << json::serialize(one);
  auto& o = one.as_object();
  EXPECT_EQ(o.at("cluster").to_number<int64_t>(), dag);
  EXPECT_EQ(o.at("file").as_string(), env_->dir() + "/d.dag");
  EXPECT_EQ(o.at("status").as_string(), "running");
  EXPECT_EQ(o.at("DAG_NodesTotal").to_number<int64_t>(), 3);
  EXPECT_EQ(o.at("DAG_NodesDone").to_number<int64_t>(), 1);
  auto& nodes = o.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].as_object().at("name").as_string(), "A");
  EXPECT_EQ(nodes[0].as_object().at("state").as_string(), "done");
  EXPECT_EQ(nodes[1].as_object().at("state").as_string(), "submitted");
  EXPECT_TRUE(nodes[1].as_object().at("job").is_string()) << json::serialize(one);
  EXPECT_EQ(nodes[2].as_object().at("state").as_string(), "not ready");
  EXPECT_TRUE(nodes[2].as_object().at("job").is_null());
  auto all = GetJson("/api/v1/dags");
  ASSERT_TRUE(all.is_array());
  ASSERT_EQ(all.as_array().size(), 1u);
  EXPECT_EQ(all.as_array()[0].as_object().at("cluster").to_number<int64_t>(), dag);
  EXPECT_FALSE(all.as_array()[0].as_object().contains("nodes"));
  // Refusals: not a cluster, a job id, no such DAG, parameters.
  EXPECT_EQ(Get("/api/v1/dags/x").status, 400);
  EXPECT_EQ(Get("/api/v1/dags/" + std::to_string(dag) + ".0").status, 400);
  EXPECT_EQ(Get("/api/v1/dags/99999").status, 404);
  EXPECT_EQ(Get("/api/v1/dags?status=held").status, 400);
  ASSERT_EQ(env_->Kite({"rm", std::to_string(dag)}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return GetJson("/api/v1/dags").as_array().empty(); }, 20));
}

}  // namespace
}  // namespace kite::testing
