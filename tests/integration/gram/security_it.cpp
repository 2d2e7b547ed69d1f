// The gatekeeper's front door: who is refused and how, and bad input that gets an error while the
// gatekeeper keeps serving.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "credentials/proxy.h"
#include "credentials/tls.h"
#include "gram/https_connection.h"
#include "site.h"
#include "tests/fixtures/kite_env.h"

namespace kite::gram::testing {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Sends `bytes` over a fresh mutual-TLS connection and returns everything the server answers
// until it closes (or 5 s pass).
std::string RawExchange(const Site& site, const std::string& bytes) {
  auto ctx = credentials::MakeClientContext(site.proxy(), site.verifier());
  EXPECT_TRUE(ctx);
  asio::io_context io;
  asio::ssl::stream<tcp::socket> s(io, **ctx);
  s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), site.port()));
  EXPECT_TRUE(credentials::SetPeerHost(s.native_handle(), "localhost"));
  s.handshake(asio::ssl::stream_base::client);
  boost::system::error_code ec;
  asio::write(s, asio::buffer(bytes), ec);
  std::string out;
  char buf[4096];
  timeval tv{5, 0};
  ::setsockopt(s.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  while (true) {
    size_t n = s.read_some(asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
    // One full response is enough when the server keeps the connection open.
    auto head = out.find("\r\n\r\n");
    auto cl = out.find("Content-Length: ");
    if (head != std::string::npos && cl != std::string::npos &&
        out.size() >= head + 4 + std::stoul(out.substr(cl + 16))) {
      break;
    }
  }
  return out;
}

TEST(GramSecurity, ADnNotInTheGridMapfileIsRefusedWithAClearMessage) {
  Site site("gram-sec-dn");
  auto stranger =
      site.ca().IssueUserCredential("CN=Mallory", {.key = {credentials::KeyAlgorithm::kEcP256}});
  ASSERT_TRUE(stranger);
  auto proxy = credentials::CreateProxy(*stranger, {});
  ASSERT_TRUE(proxy);
  auto c = site.MakeClient(proxy->credential);
  auto r = c->Submit("s", Site::ShellJob("true"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kAuthFailed);
  EXPECT_NE(r.error().message().find("CN=Mallory is not in this site's grid-mapfile"),
            std::string::npos)
      << r.error().message();
  EXPECT_TRUE(site.MakeClient()->Ping());  // Jane still gets in
}

TEST(GramSecurity, AnExpiredProxyIsRefusedDuringTheHandshake) {
  Site site("gram-sec-expired");
  credentials::ProxyOptions po;
  po.lifetime = std::chrono::seconds(1);
  po.backdate = std::chrono::seconds(0);
  auto user = site.ca().IssueUserCredential(
      "CN=Jane Doe", {.key = {credentials::KeyAlgorithm::kEcP256}, .overwrite = true});
  ASSERT_TRUE(user);
  auto proxy = credentials::CreateProxy(*user, po);
  ASSERT_TRUE(proxy);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  // The client library notices first...
  auto r = site.MakeClient(proxy->credential)->Ping();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kProxyExpired);
  // ...and the gatekeeper refuses one that is presented anyway.
  auto ctx = credentials::MakeClientContext(proxy->credential, site.verifier());
  ASSERT_TRUE(ctx);
  auto conn = HttpsConnection::Open(*ctx, "localhost", site.port(), std::chrono::seconds(5));
  Result<HttpReply> reply = Fail(ErrorCode::kInternal, "no connection");
  if (conn) {
    bool nothing = false;
    reply = (*conn)->RoundTrip("GET", "/ping", "", {}, std::chrono::seconds(5), &nothing);
  }
  ASSERT_FALSE(conn && reply) << "an expired proxy got an answer";
  ErrorCode code = conn ? reply.error().code() : conn.error().code();
  EXPECT_TRUE(code == ErrorCode::kProxyExpired || code == ErrorCode::kAuthFailed)
      << (conn ? reply.error().ToString() : conn.error().ToString());
  EXPECT_TRUE(site.MakeClient()->Ping());
}

TEST(GramSecurity, MalformedAndOversizedRequestsGetErrorsAndTheGatekeeperKeepsServing) {
  Site site("gram-sec-input");
  std::string garbage = RawExchange(site, "THIS IS NOT HTTP\r\n\r\n");
  EXPECT_NE(garbage.find("400"), std::string::npos) << garbage;

  std::string big = "POST /jobs HTTP/1.1\r\nHost: x\r\nKite-Protocol: 1\r\nContent-Length: " +
                    std::to_string(2u << 20) + "\r\n\r\n" + std::string(64 * 1024, 'x');
  std::string too_large = RawExchange(site, big);
  EXPECT_NE(too_large.find("413"), std::string::npos) << too_large;

  std::string wrong =
      RawExchange(site, "GET /ping HTTP/1.1\r\nHost: x\r\nKite-Protocol: 2\r\n\r\n");
  EXPECT_NE(wrong.find("400"), std::string::npos);
  EXPECT_NE(wrong.find("protocol version mismatch"), std::string::npos) << wrong;

  std::string body = "{\"request_id\": \"r\", \"job\": {\"executable\": 7}}";
  std::string bad_json = RawExchange(site,
                                     "POST /jobs HTTP/1.1\r\nHost: x\r\nKite-Protocol: 1\r\n"
                                     "Content-Length: " +
                                         std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_NE(bad_json.find("400"), std::string::npos);
  EXPECT_NE(bad_json.find("executable"), std::string::npos) << bad_json;

  // A forged identity header is replaced by the verified one.
  std::string forged = RawExchange(site,
                                   "GET /ping HTTP/1.1\r\nHost: x\r\nKite-Protocol: 1\r\n"
                                   "Kite-Identity: /O=Grid/CN=root\r\n\r\n");
  EXPECT_NE(forged.find("200 OK"), std::string::npos) << forged;

  auto c = site.MakeClient();
  auto sub = c->Submit("s", Site::ShellJob("exit 0"));
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(c->Commit("c", sub->job_id));
  EXPECT_EQ(Site::WaitFor(*c, sub->job_id, JobState::kDone)->state, JobState::kDone);
}

}  // namespace
}  // namespace kite::gram::testing
