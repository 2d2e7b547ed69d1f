// The GASS unit tests' world: CA, credentials, a served GassServer and a raw TLS client.
#include "gass_world.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "credentials/tls.h"

namespace kite::gass::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

RawReply RawRequest(uint16_t port, const credentials::Credential& cred,
                    std::shared_ptr<const credentials::Verifier> verifier,
                    const std::string& bytes) {
  RawReply reply;
  auto ctx = credentials::MakeClientContext(cred, verifier);
  if (!ctx) {
    reply.error = ctx.error().ToString();
    return reply;
  }
  asio::io_context io;
  asio::ssl::stream<tcp::socket> s(io, **ctx);
  boost::system::error_code ec;
  s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) {
    reply.error = ec.message();
    return reply;
  }
  timeval tv{10, 0};  // a test that gets no answer fails instead of hanging
  ::setsockopt(s.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  s.handshake(asio::ssl::stream_base::client, ec);
  if (!ec) asio::write(s, asio::buffer(bytes), ec);
  if (ec) {
    reply.error = ec.message();
    return reply;
  }
  boost::beast::flat_buffer buf;
  std::optional<http::response_parser<http::string_body>> parser;
  do {  // past interim responses (100 Continue)
    parser.emplace();
    parser->body_limit(64u << 20);
    parser->skip(bytes.starts_with("HEAD "));
    http::read(s, buf, *parser, ec);
    if (ec) {
      reply.error = ec.message();
      return reply;
    }
  } while (parser->get().result_int() / 100 == 1);
  auto& res = parser->get();
  reply.status = static_cast<int>(res.result_int());
  for (const auto& f : res) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    reply.headers[name] = std::string(f.value());
  }
  reply.body = res.body();
  return reply;
}

std::unique_ptr<GassWorld> GassWorld::Make(const std::function<void(GassServerOptions&)>& tweak) {
  auto w = std::make_unique<GassWorld>();
  credentials::CaOptions co;
  co.key = {credentials::KeyAlgorithm::kEcP256};
  auto ca = credentials::TestCa::Init(w->dir / "ca", co);
  EXPECT_TRUE(ca) << ca.error().ToString();
  w->ca = std::move(*ca);
  credentials::IssueOptions io;
  io.key = {credentials::KeyAlgorithm::kEcP256};
  auto host = w->ca.IssueHostCredential("localhost", io);
  auto jane = w->ca.IssueUserCredential("CN=Jane Doe", io);
  auto bob = w->ca.IssueUserCredential("CN=Bob Roe", io);
  EXPECT_TRUE(host && jane && bob);
  w->host = *host;
  w->jane = *jane;
  w->bob = *bob;
  w->jane_dn = w->jane.leaf().Subject();
  w->bob_dn = w->bob.leaf().Subject();
  auto proxy = credentials::CreateProxy(w->jane, {});
  EXPECT_TRUE(proxy) << proxy.error().ToString();
  w->jane_proxy = proxy->credential;
  auto v = credentials::Verifier::Create({.ca_dir = w->ca.trusted_dir()});
  EXPECT_TRUE(v) << v.error().ToString();
  w->verifier = *v;

  GassServerOptions options;
  options.credential = w->host;
  options.verifier = w->verifier;
  if (tweak) tweak(options);
  auto server = GassServer::Create(w->io, options);
  EXPECT_TRUE(server) << server.error().ToString();
  w->server = std::move(*server);
  w->work.emplace(w->io.get_executor());
  for (int i = 0; i < 2; ++i) w->threads.emplace_back([io = &w->io] { io->run(); });
  return w;
}

GassWorld::~GassWorld() {
  if (server) server->Close();
  work.reset();
  for (auto& t : threads) t.join();
}

}  // namespace kite::gass::testing
