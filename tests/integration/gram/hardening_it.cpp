// The attack on the site, replayed against a real gatekeeper: authorisation on every request, and
// idle connections past the file limit (a shortage, never a refusal; no spinning, no log flood).
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <thread>

#include "credentials/proxy.h"
#include "credentials/tls.h"
#include "gram/protocol.h"
#include "site.h"
#include "tests/fixtures/flood.h"
#include "tests/fixtures/kite_env.h"

namespace kite::gram::testing {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using kite::testing::ConnectionFlood;
using kite::testing::CpuSeconds;
using kite::testing::ReadFileOr;

// One kept-alive mutual-TLS connection to the gatekeeper, driven by hand.
class RawConnection {
 public:
  RawConnection(const Site& site, const credentials::Credential& cred)
      : ctx_(*credentials::MakeClientContext(cred, site.verifier())), s_(io_, *ctx_) {
    s_.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), site.port()));
    credentials::SetPeerHost(s_.native_handle(), "localhost");
    s_.handshake(asio::ssl::stream_base::client);
    timeval tv{5, 0};
    ::setsockopt(s_.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // Sends GET /ping; returns the status line, or "closed" when the server has hung up.
  std::string Ping() {
    std::string req = "GET /ping HTTP/1.1\r\nHost: localhost\r\n" + std::string(kProtocolHeader) +
                      ": " + std::to_string(kProtocolVersion) + "\r\n\r\n";
    boost::system::error_code ec;
    asio::write(s_, asio::buffer(req), ec);
    if (ec) return "closed";
    std::string out;
    char buf[4096];
    while (out.find("\r\n\r\n") == std::string::npos) {
      size_t n = s_.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    if (out.empty()) return "closed";
    auto cl = out.find("Content-Length: ");
    size_t head = out.find("\r\n\r\n");
    size_t want = cl == std::string::npos ? 0 : std::stoul(out.substr(cl + 16));
    while (!ec && out.size() < head + 4 + want) {
      size_t n = s_.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
    }
    return out.substr(0, out.find("\r\n")) + " " + out.substr(head + 4);
  }

 private:
  asio::io_context io_;
  credentials::SslContextPtr ctx_;
  asio::ssl::stream<tcp::socket> s_;
};

TEST(GatekeeperAuthorisation, NoRequestIsServedPastTheClientsProxyExpiry) {
  Site site("gk-expiry");
  auto brief = credentials::CreateProxy(
      site.proxy(), {.lifetime = std::chrono::seconds(4), .backdate = std::chrono::seconds(0)});
  ASSERT_TRUE(brief);
  RawConnection conn(site, brief->credential);
  EXPECT_NE(conn.Ping().find("200"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  // The same kept-alive connection, after the proxy expired: refused or closed, never served.
  std::string second = conn.Ping();
  EXPECT_EQ(second.find("200"), std::string::npos) << second;
  EXPECT_TRUE(second == "closed" || second.find("401") != std::string::npos) << second;
  // And the client's way: a submit with the expired proxy does not get a job in.
  auto c = site.MakeClient(brief->credential);
  auto r = c->Submit("late", Site::ShellJob("true"));
  EXPECT_FALSE(r);
}

TEST(GatekeeperAuthorisation, ADnTakenOutOfTheGridMapfileIsRefusedOnOpenConnections) {
  Site site("gk-unmap");
  auto c = site.MakeClient();
  ASSERT_TRUE(c->Ping());
  size_t opened = c->connections_opened();
  site.WriteGridMap("# Jane is gone\n");
  auto r = c->Ping();  // on the connection already open
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kAuthFailed);
  EXPECT_NE(r.error().message().find("not in this site's grid-mapfile"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(c->connections_opened(), opened) << "the refusal came on the kept-alive connection";
  site.WriteGridMap("\"" + site.user_dn() + "\" root\n");
  auto again = c->Ping();  // mapped again: served again
  EXPECT_TRUE(again) << again.error().ToString();
}

TEST(GatekeeperShortage, IdleConnectionsPastTheFileLimitAreAShortageNotARefusal) {
  Site site("gk-fds", {.nofile = 256});
  auto c = site.MakeClient();
  ASSERT_TRUE(c->Ping());
  // 1,100 idle connections from 8 addresses: each address stays under the per-peer limit, so
  // the gatekeeper runs out of descriptors.
  auto flood = ConnectionFlood::Tcp(site.port(), 1100, 8);
  EXPECT_GT(flood.opened(), 256);
  size_t log_before = ReadFileOr(site.dir() + "/gatekeeper.log").size();
  double cpu_before = CpuSeconds(site.gatekeeper_pid());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  double cpu = CpuSeconds(site.gatekeeper_pid()) - cpu_before;
  EXPECT_LT(cpu, 0.5) << "the gatekeeper spun: " << cpu << " s of CPU in 3 s";
  // A request meanwhile may wait or fail as unavailable; it is never told it is not allowed.
  auto fresh = site.MakeClient();
  auto r = fresh->Submit("during-flood", Site::ShellJob("true"));
  if (!r) {
    EXPECT_NE(r.error().code(), ErrorCode::kAuthFailed) << r.error().ToString();
  }
  size_t log_growth = ReadFileOr(site.dir() + "/gatekeeper.log").size() - log_before;
  EXPECT_LT(log_growth, 200000u) << "the gatekeeper's log grew by " << log_growth << " bytes";
  { auto gone = std::move(flood); }
  // Once the connections are gone, everything is served again.
  EXPECT_TRUE(
      kite::testing::WaitUntil([&] { return static_cast<bool>(site.MakeClient()->Ping()); }, 20));
}

TEST(GatekeeperShortage, OnePeerCannotHoldMoreThanItsShare) {
  Site site("gk-peer");
  auto flood = ConnectionFlood::Tcp(site.port(), 600, 1, 2);  // all from 127.0.0.2
  EXPECT_EQ(flood.opened(), 600);
  // 127.0.0.2 holds its 256; the rest are closed at once, and the log says so once, not 344 times.
  EXPECT_TRUE(kite::testing::WaitUntil(
      [&] {
        return ReadFileOr(site.dir() + "/gatekeeper.log").find("the limit per peer") !=
               std::string::npos;
      },
      10));
  EXPECT_TRUE(site.MakeClient()->Ping());  // another address is served
  auto log = ReadFileOr(site.dir() + "/gatekeeper.log");
  size_t refusals = 0;
  for (size_t at = log.find("the limit per peer"); at != std::string::npos;
       at = log.find("the limit per peer", at + 1))
    ++refusals;
  EXPECT_LE(refusals, 2u);
}

}  // namespace
}  // namespace kite::gram::testing
