// Mutual TLS over loopback with the context factories: Asio on both ends, and libcurl as client.
#include "credentials/tls.h"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <thread>

#include "credentials/proxy.h"
#include "test_util.h"

namespace kite::credentials {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using testing::World;

// What the server saw of one connection.
struct ServerSaw {
  bool handshake_ok = false;
  std::string identity;
  std::string verify_error;
};

// Accepts one connection on a loopback port, answers one HTTP request with "ok".
class OneShotServer {
 public:
  explicit OneShotServer(SslContextPtr ctx, int connections = 1)
      : ctx_(std::move(ctx)),
        connections_(connections),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] {
      ServerSaw saw;
      for (int i = 0; i < connections_; ++i) saw = Serve();
      promise_.set_value(saw);
    });
  }
  ~OneShotServer() {
    // A test that failed before connecting must not hang here: wake the accept with a connection.
    asio::io_context io;
    tcp::socket poke(io);
    boost::system::error_code ec;
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  // Waits for the (last) connection's outcome; if the client never connected, pokes the acceptor
  // so the test fails instead of hanging.
  ServerSaw Result() {
    auto f = promise_.get_future();
    if (f.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
      asio::io_context io;
      tcp::socket poke(io);
      boost::system::error_code ec;
      poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
    }
    return f.get();
  }

 private:
  ServerSaw Serve() {
    ServerSaw saw;
    asio::ssl::stream<tcp::socket> s(io_, *ctx_);
    acceptor_.accept(s.next_layer());
    boost::system::error_code ec;
    s.handshake(asio::ssl::stream_base::server, ec);
    saw.verify_error = PeerVerifyError(s.native_handle());
    if (ec) return saw;
    saw.handshake_ok = true;
    if (auto id = PeerIdentity(s.native_handle())) saw.identity = id->subject;
    asio::streambuf buf;
    asio::read_until(s, buf, "\r\n\r\n", ec);
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    asio::write(s, asio::buffer(reply), ec);
    s.shutdown(ec);
    return saw;
  }

  SslContextPtr ctx_;
  int connections_ = 1;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::promise<ServerSaw> promise_;
  std::thread thread_;
};

struct Tls : ::testing::Test {
  void SetUp() override {
    w = World::Make();
    auto h = w->ca.IssueHostCredential("localhost", {.key = {KeyAlgorithm::kEcP256}});
    ASSERT_TRUE(h);
    host = *h;
    auto p = CreateProxy(w->user, {});
    ASSERT_TRUE(p);
    proxy = p->credential;
    auto ctx = MakeServerContext(host, w->verifier);
    ASSERT_TRUE(ctx) << ctx.error().ToString();
    server_ctx = *ctx;
  }

  // Client handshake; returns "" on success or why it failed. With `session`, offers the session
  // it holds (if any) and keeps the connection's session there afterwards; `reused` says whether
  // the server resumed it.
  std::string Connect(uint16_t port, const std::optional<Credential>& cred, const std::string& name,
                      std::string* server_identity = nullptr, SSL_SESSION** session = nullptr,
                      bool* reused = nullptr) {
    auto ctx = MakeClientContext(cred, w->verifier);
    if (!ctx) return ctx.error().ToString();
    asio::io_context io;
    asio::ssl::stream<tcp::socket> s(io, **ctx);
    s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    if (auto st = SetPeerHost(s.native_handle(), name); !st) return st.error().ToString();
    if (session && *session) SSL_set_session(s.native_handle(), *session);
    boost::system::error_code ec;
    s.handshake(asio::ssl::stream_base::client, ec);
    if (reused) *reused = SSL_session_reused(s.native_handle()) == 1;
    if (ec) {
      std::string why = PeerVerifyError(s.native_handle());
      return why.empty() ? ec.message() : why;
    }
    if (server_identity) {
      if (auto id = PeerIdentity(s.native_handle())) *server_identity = id->leaf_subject;
    }
    asio::write(s, asio::buffer(std::string("GET / HTTP/1.1\r\n\r\n")), ec);
    char b[256];
    s.read_some(asio::buffer(b), ec);  // TLS 1.3: the server's verdict arrives after our Finished
    if (session) {
      s.shutdown(ec);  // a session is kept for resumption only after a clean close
      if (*session) SSL_SESSION_free(*session);
      *session = SSL_get1_session(s.native_handle());
    }
    return ec && ec != asio::error::eof && ec != asio::ssl::error::stream_truncated ? ec.message()
                                                                                    : "";
  }

  std::unique_ptr<World> w;
  Credential host, proxy;
  SslContextPtr server_ctx;
};

TEST_F(Tls, MutualAuthenticationExposesBothIdentities) {
  OneShotServer server(server_ctx);
  std::string server_id;
  EXPECT_EQ(Connect(server.port(), proxy, "localhost", &server_id), "");
  EXPECT_EQ(server_id, "/O=Grid/OU=Kite/CN=host/localhost");
  auto saw = server.Result();
  EXPECT_TRUE(saw.handshake_ok) << saw.verify_error;
  EXPECT_EQ(saw.identity, "/O=Grid/OU=Kite/CN=Jane Doe");
}

TEST_F(Tls, ClientFromAnUntrustedCaIsRefusedDuringTheHandshake) {
  auto stranger = World::Make("/O=Grid/OU=Kite/CN=Rogue CA");
  auto p = CreateProxy(stranger->user, {});
  ASSERT_TRUE(p);
  OneShotServer server(server_ctx);
  EXPECT_NE(Connect(server.port(), p->credential, "localhost"), "");
  auto saw = server.Result();
  EXPECT_FALSE(saw.handshake_ok);
  EXPECT_NE(saw.verify_error.find("not a CA trusted"), std::string::npos) << saw.verify_error;
}

TEST_F(Tls, ClientWithoutACertificateIsRefused) {
  OneShotServer server(server_ctx);
  EXPECT_NE(Connect(server.port(), std::nullopt, "localhost"), "");
  EXPECT_FALSE(server.Result().handshake_ok);
}

TEST_F(Tls, ServerWithTheWrongNameIsRefusedByTheClient) {
  OneShotServer server(server_ctx);
  std::string why = Connect(server.port(), proxy, "gatekeeper.example.org");
  EXPECT_NE(why.find("does not name host gatekeeper.example.org"), std::string::npos) << why;
  server.Result();
}

size_t Collect(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

// A client that offers the session of its last connection (libcurl does, per host and port) gets
// a full handshake: every connection's chain is verified again (a proxy may have expired since),
// and none fails for want of a session id context. Every Kite TLS listener's context comes from
// MakeServerContext.
TEST_F(Tls, AClientOfferingAnEarlierSessionGetsAFullHandshake) {
  for (auto version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version == TLS1_2_VERSION ? "TLS 1.2" : "TLS 1.3");
    auto ctx = MakeServerContext(host, w->verifier);
    ASSERT_TRUE(ctx);
    SSL_CTX_set_max_proto_version((*ctx)->native_handle(), version);
    OneShotServer server(*ctx, 2);
    SSL_SESSION* session = nullptr;
    bool reused = true;
    EXPECT_EQ(Connect(server.port(), proxy, "localhost", nullptr, &session, &reused), "");
    EXPECT_FALSE(reused);
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(Connect(server.port(), proxy, "localhost", nullptr, &session, &reused), "");
    EXPECT_FALSE(reused) << "the server resumed a session without verifying the chain again";
    SSL_SESSION_free(session);
    auto saw = server.Result();
    EXPECT_TRUE(saw.handshake_ok);
    EXPECT_EQ(saw.identity, "/O=Grid/OU=Kite/CN=Jane Doe");
  }
}

// The same through libcurl, which keeps sessions in its handle as the GASS client does.
TEST_F(Tls, CurlReusingItsHandleConnectsAgain) {
  OneShotServer server(server_ctx, 2);
  CurlTls tls{proxy, w->verifier};
  CURL* curl = curl_easy_init();
  ASSERT_TRUE(ConfigureCurl(curl, tls));
  std::string url = "https://localhost:" + std::to_string(server.port()) + "/";
  for (int i = 0; i < 2; ++i) {
    std::string body;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);  // a new connection each time
    CURLcode rc = curl_easy_perform(curl);
    EXPECT_EQ(rc, CURLE_OK) << "connection " << i << ": " << curl_easy_strerror(rc);
    EXPECT_EQ(body, "ok");
  }
  curl_easy_cleanup(curl);
  EXPECT_TRUE(server.Result().handshake_ok);
}

TEST_F(Tls, CurlClientUsesTheSameRules) {
  OneShotServer server(server_ctx);
  CurlTls tls{proxy, w->verifier};
  CURL* curl = curl_easy_init();
  ASSERT_TRUE(ConfigureCurl(curl, tls));
  std::string url = "https://localhost:" + std::to_string(server.port()) + "/";
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  EXPECT_EQ(rc, CURLE_OK) << curl_easy_strerror(rc);
  EXPECT_EQ(body, "ok");
  EXPECT_EQ(server.Result().identity, "/O=Grid/OU=Kite/CN=Jane Doe");
}

}  // namespace
}  // namespace kite::credentials
