// The ARC link's decisions on replies a real A-REX seldom gives: a submit whose answer is cut off,
// a CE that sends what is not its JSON, a state Kite does not know. The link runs for real
// (libcurl, mutual TLS with a test CA's certificates) against a scripted CE on loopback: the seam
// is the CE, whose answers the test chooses, and which records every request it gets.
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <mutex>
#include <thread>

#include "credentials/proxy.h"
#include "credentials/tls.h"
#include "grid/site_link.h"
#include "tests/unit/credentials/test_util.h"

namespace kite::grid {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct HttpAnswer {
  int status = 200;
  std::string body;
};
using Script = std::function<HttpAnswer(const std::string& method, const std::string& target,
                                        const std::string& body)>;

// An HTTPS server on loopback that answers every request through `script`, a thread per
// connection (libcurl keeps several open), and keeps "METHOD TARGET" of each request.
class ScriptedCe {
 public:
  ScriptedCe(credentials::SslContextPtr ctx, Script script)
      : ctx_(std::move(ctx)),
        script_(std::move(script)),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accept_ = std::thread([this] {
      for (;;) {
        auto s = std::make_shared<asio::ssl::stream<tcp::socket>>(io_, *ctx_);
        boost::system::error_code ec;
        acceptor_.accept(s->next_layer(), ec);
        if (ec || stopping_) return;
        std::lock_guard lock(mu_);
        sockets_.push_back(s);
        serving_.emplace_back([this, s] { Serve(*s); });
      }
    });
  }
  ~ScriptedCe() {
    stopping_ = true;
    boost::system::error_code ec;
    tcp::socket poke(io_);
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
    accept_.join();
    std::vector<std::thread> serving;
    {
      std::lock_guard lock(mu_);
      // Wakes a thread still waiting for a request (shutdown is a system call on the socket).
      for (auto& s : sockets_) s->lowest_layer().shutdown(tcp::socket::shutdown_both, ec);
      serving.swap(serving_);
    }
    for (auto& t : serving) t.join();
  }
  uint16_t port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  size_t Count(const std::string& request) {
    auto all = requests();
    return static_cast<size_t>(std::count(all.begin(), all.end(), request));
  }

 private:
  void Serve(asio::ssl::stream<tcp::socket>& s) {
    boost::system::error_code ec;
    s.handshake(asio::ssl::stream_base::server, ec);
    asio::streambuf buf;
    while (!ec && !stopping_) {
      size_t n = asio::read_until(s, buf, "\r\n\r\n", ec);
      if (ec) return;
      std::string head(asio::buffers_begin(buf.data()), asio::buffers_begin(buf.data()) + n);
      buf.consume(n);
      std::string method = head.substr(0, head.find(' '));
      std::string target = head.substr(method.size() + 1);
      target = target.substr(0, target.find(' '));
      size_t length = 0;
      for (std::string key : {"Content-Length: ", "content-length: "}) {
        if (auto at = head.find(key); at != std::string::npos) {
          length = std::stoul(head.substr(at + key.size()));
        }
      }
      while (buf.size() < length && !ec) asio::read(s, buf, asio::transfer_at_least(1), ec);
      std::string body(asio::buffers_begin(buf.data()),
                       asio::buffers_begin(buf.data()) + static_cast<std::ptrdiff_t>(length));
      buf.consume(length);
      HttpAnswer a;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(method + " " + target);
        a = script_(method, target, body);
      }
      std::string reply = "HTTP/1.1 " + std::to_string(a.status) +
                          " Scripted\r\nContent-Length: " + std::to_string(a.body.size()) +
                          "\r\n\r\n" + a.body;
      asio::write(s, asio::buffer(reply), ec);
    }
  }

  credentials::SslContextPtr ctx_;
  Script script_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::vector<std::shared_ptr<asio::ssl::stream<tcp::socket>>> sockets_;
  std::vector<std::thread> serving_;
  std::thread accept_;
};

constexpr char kRest[] = "/arex/rest/1.0/";

class ArcLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = credentials::testing::World::Make();
    auto host =
        world_->ca.IssueHostCredential("localhost", {.key = {credentials::KeyAlgorithm::kEcP256}});
    ASSERT_TRUE(host) << host.error().ToString();
    auto ctx = credentials::MakeServerContext(*host, world_->verifier);
    ASSERT_TRUE(ctx) << ctx.error().ToString();
    server_ctx_ = *ctx;
    auto proxy = credentials::CreateProxy(world_->user, {});
    ASSERT_TRUE(proxy) << proxy.error().ToString();
    proxy_ = proxy->credential;
  }

  void Start(Script script) {
    ce_ = std::make_unique<ScriptedCe>(server_ctx_, std::move(script));
    auto r = ParseGridResource("arc https://localhost:" + std::to_string(ce_->port()) + "/arex");
    ASSERT_TRUE(r) << r.error().ToString();
    auto link = ConnectSite(
        *r, {.credential = &proxy_, .verifier = world_->verifier, .pool = &pool_, .io = &io_});
    ASSERT_TRUE(link) << link.error().ToString();
    link_ = *link;
  }

  // Sends one request and waits for its answer (on io_, as the engine would).
  Result<SiteAnswer> Send(SiteRequest req) {
    std::optional<Result<SiteAnswer>> answer;
    link_->Send(req, [&](Result<SiteAnswer> a) { answer = std::move(a); });
    for (int i = 0; i < 1000 && !answer; ++i) {
      io_.restart();  // run_for returns at once while nothing is posted yet
      io_.run_for(std::chrono::milliseconds(10));
      if (!answer) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!answer) return Fail(ErrorCode::kTimeout, "no answer from the link");
    return std::move(*answer);
  }

  static SiteRequest Submit(const std::string& name) {
    SiteRequest r{.op = SiteRequest::Op::kSubmit, .request_id = name};
    r.job.executable.site = "/bin/true";
    r.files = std::make_shared<JobFiles>();
    return r;
  }
  static SiteRequest Status(const std::string& id) {
    SiteRequest r{.op = SiteRequest::Op::kStatus, .job_id = id};
    r.files = std::make_shared<JobFiles>();
    return r;
  }

  void TearDown() override {
    link_.reset();  // closes its connections: the CE's threads end
    pool_.join();
    ce_.reset();
  }

  std::unique_ptr<credentials::testing::World> world_;
  credentials::SslContextPtr server_ctx_;
  credentials::Credential proxy_;
  asio::thread_pool pool_{2};
  asio::io_context io_;
  std::unique_ptr<ScriptedCe> ce_;
  std::shared_ptr<SiteLink> link_;
};

// The CE made the job but its answer came back cut off: the link says "no answer" (tried again
// after a back-off), and the resend finds the job by its name instead of making a second one.
TEST_F(ArcLinkTest, ASubmitWhoseAnswerWasCutOffIsFoundByNameNotSentAgain) {
  bool made = false;
  Start([&](const std::string& method, const std::string& target, const std::string& body) {
    std::string rest = target.substr(std::string(kRest).size());
    if (method == "GET" && rest == "jobs") {
      return made ? HttpAnswer{200, R"({"job":{"id":"J1"}})"} : HttpAnswer{200, ""};
    }
    if (rest == "jobs?action=new") {
      made = true;
      EXPECT_NE(body.find("(jobname=\"kite-1-1.0-0/submit\")"), std::string::npos) << body;
      return HttpAnswer{201, R"({"job":{"status-code":"201","reason":"Created","id":"J)"};
    }
    if (rest == "jobs?action=info") {
      return HttpAnswer{201, R"({"job":{"status-code":"200","id":"J1","info_document":)"
                             R"({"ComputingActivity":{"Name":"kite-1-1.0-0/submit"}}}})"};
    }
    if (rest == "jobs?action=status") {
      return HttpAnswer{201, R"({"job":{"status-code":"200","id":"J1","state":"RUNNING"}})"};
    }
    return HttpAnswer{404, ""};
  });
  auto first = Send(Submit("kite-1-1.0-0/submit"));
  ASSERT_FALSE(first);
  EXPECT_TRUE(SiteDown(first.error())) << first.error().ToString();
  EXPECT_NE(first.error().message().find("could not be read"), std::string::npos)
      << first.error().ToString();

  auto again = Send(Submit("kite-1-1.0-0/submit"));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(again->job.job_id, "J1");
  EXPECT_EQ(again->job.state, gram::JobState::kActive);
  EXPECT_EQ(ce_->Count(std::string("POST ") + kRest + "jobs?action=new"), 1u)
      << "the job was submitted twice";
}

// Replies that are not the CE's JSON decide nothing (no answer: tried again later); a state Kite
// does not know keeps the job waiting; a per-job refusal of a description holds it.
TEST_F(ArcLinkTest, UnreadableRepliesDecideNothingAndUnknownStatesWait) {
  std::string status_reply = "<html>502 Bad Gateway</html>";
  Start([&](const std::string& method, const std::string& target, const std::string&) {
    std::string rest = target.substr(std::string(kRest).size());
    if (method == "GET" && rest == "jobs") return HttpAnswer{200, ""};
    if (rest == "jobs?action=status") return HttpAnswer{201, status_reply};
    if (rest == "jobs?action=new") {
      return HttpAnswer{201, R"({"job":{"status-code":"500","reason":"emies:adl parsing error"}})"};
    }
    return HttpAnswer{404, ""};
  });
  auto garbled = Send(Status("J7"));
  ASSERT_FALSE(garbled);
  EXPECT_TRUE(SiteDown(garbled.error())) << garbled.error().ToString();

  status_reply = R"({"job":[{"status-code":"200","id":"J8","state":"RUNNING"}])";
  auto left_out = Send(Status("J7"));
  ASSERT_FALSE(left_out);
  EXPECT_TRUE(SiteDown(left_out.error())) << "a job left out of a reply is not a lost job";

  status_reply = R"({"job":{"status-code":"200","id":"J7","state":"TELEPORTING"}})";
  auto unknown = Send(Status("J7"));
  ASSERT_TRUE(unknown) << unknown.error().ToString();
  EXPECT_EQ(unknown->job.state, gram::JobState::kPending);

  status_reply = R"({"job":{"status-code":"404","reason":"Job not found","id":"J7"}})";
  auto gone = Send(Status("J7"));
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);

  auto refused = Send(Submit("kite-1-2.0-0/submit"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(refused.error().message().find("emies:adl parsing error"), std::string::npos);
}

}  // namespace
}  // namespace kite::grid
