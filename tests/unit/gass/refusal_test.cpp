// What the GASS server refuses, and that it keeps serving afterwards: other identities, names
// and jobs not registered, path tricks, symlinks swapped in, malformed and oversized requests.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <thread>

#include "gass/protocol.h"
#include "gass_world.h"

namespace kite::gass {
namespace {

using testing::GassWorld;
using testing::ReadAll;

constexpr const char* kSecret = "the secret is 42";

struct Refusal : ::testing::Test {
  void SetUp() override {
    w = GassWorld::Make();
    input = w->File("input", "input data");
    output = w->dir / "output";
    secret = w->File("secret", kSecret);
    ASSERT_TRUE(w->server->AddJob("J", w->jane_dn, {{"input", input}}, {{"output", output}}));
    ASSERT_TRUE(w->server->AddJob("J2", w->jane_dn, {{"secret", secret}}, {}));
    ASSERT_TRUE(w->server->RemoveJob("J2"));  // registered once, gone now
  }
  // The server still answers a good request on a new connection.
  void ExpectStillServing() {
    GassClient c = w->Client(w->jane_proxy);
    auto got = c.GetRange(MakeTarget("J", "input"), 0, 100);
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_EQ(*got, "input data");
  }
  std::unique_ptr<GassWorld> w;
  std::string input, output, secret;
};

TEST_F(Refusal, AnotherUserOfTheSameCaIsRefused) {
  GassClient bob = w->Client(w->bob);
  auto get = bob.GetRange(MakeTarget("J", "input"), 0, 10);
  ASSERT_FALSE(get);
  EXPECT_EQ(get.error().code(), ErrorCode::kAuthFailed) << get.error().ToString();
  auto put = bob.PutAt(MakeTarget("J", "output"), 0, "forged");
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code(), ErrorCode::kAuthFailed);
  EXPECT_FALSE(std::filesystem::exists(output));
  auto size = bob.Size(MakeTarget("J", "nonexistent-name"));  // names are not revealed to Bob
  EXPECT_EQ(size.error().code(), ErrorCode::kAuthFailed);
  EXPECT_GE(w->server->stats().refused, 3u);
  ExpectStillServing();
}

TEST_F(Refusal, UnregisteredJobsAndNamesAreNotFound) {
  GassClient c = w->Client(w->jane_proxy);
  EXPECT_EQ(c.Size(MakeTarget("J2", "secret")).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(c.Size(MakeTarget("nope", "input")).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(c.Size(MakeTarget("J", "secret")).error().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(c.PutAt(MakeTarget("J", "output"), 0, "out"));
  EXPECT_EQ(*c.Size(MakeTarget("J", "output")), 3u);        // a writer may ask for the size...
  auto read = c.GetRange(MakeTarget("J", "output"), 0, 3);  // ...but not read a write-only file
  EXPECT_EQ(read.error().code(), ErrorCode::kNotFound);
  auto put = c.PutAt(MakeTarget("J", "input"), 0, "overwrite");  // read-only
  EXPECT_EQ(put.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(ReadAll(input), "input data");
  auto newname = c.PutAt(MakeTarget("J", "new"), 0, "x");
  EXPECT_EQ(newname.error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(w->dir / "new"));
  EXPECT_EQ(c.connections(), 1u);  // refused bodies are drained; the connection stays
  ExpectStillServing();
}

TEST_F(Refusal, PathTricksNeverReachTheDisk) {
  for (const char* target :
       {"/jobs/J/../J2/secret", "/jobs/J/%2e%2e/secret", "/jobs/J/%2E%2E%2Fsecret",
        "/jobs/J/..%2fsecret", "/jobs/J//etc/passwd", "/jobs/J/input?x=../secret", "/etc/passwd",
        "/jobs/J/./input", "/jobs/../jobs/J/input", "/jobs/J/input/..",
        "http://127.0.0.1/jobs/J/input", "/jobs/J/%69nput", "//jobs/J/input", "*"}) {
    auto r = w->Raw(std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(r.status, 404) << target << " " << r.error;
    EXPECT_EQ(r.body.find(kSecret), std::string::npos) << target;
    EXPECT_EQ(r.body.find("input data"), std::string::npos) << target;
    EXPECT_NE(r.body.find("\"error\""), std::string::npos) << target;  // a JSON error
  }
  auto put = w->Raw(
      "PUT /jobs/J/../J/%2e%2e/secret HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
      "Content-Range: bytes 0-2/*\r\n\r\nbad");
  EXPECT_EQ(put.status, 404);
  EXPECT_EQ(ReadAll(secret), kSecret);
  // Registering a path outside a clean absolute form is refused up front.
  EXPECT_FALSE(w->server->AddJob("K", w->jane_dn, {{"x", w->dir / "../etc/passwd"}}, {}));
  EXPECT_FALSE(w->server->AddJob("K", w->jane_dn, {{"x", "etc/passwd"}}, {}));
  EXPECT_FALSE(w->server->AddJob("K", w->jane_dn, {{"../x", input}}, {}));
  ExpectStillServing();
}

TEST_F(Refusal, ASymlinkSwappedInIsNotFollowed) {
  GassClient c = w->Client(w->jane_proxy);
  std::filesystem::remove(input);
  std::filesystem::create_symlink(secret, input);
  auto got = c.GetRange(MakeTarget("J", "input"), 0, 100);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kAuthFailed) << got.error().ToString();
  EXPECT_EQ(c.Get(MakeTarget("J", "input"), w->dir / "copy").error().code(),
            ErrorCode::kAuthFailed);
  EXPECT_EQ(ReadAll(w->dir / "copy").find(kSecret), std::string::npos);

  std::filesystem::create_symlink(secret, output);  // a dangling write target is refused too
  auto put = c.PutAt(MakeTarget("J", "output"), 0, "overwritten");
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code(), ErrorCode::kAuthFailed);
  EXPECT_EQ(ReadAll(secret), kSecret);

  std::filesystem::remove(input);  // and a FIFO does not stall the server
  ASSERT_EQ(::mkfifo(input.c_str(), 0600), 0);
  EXPECT_EQ(c.Size(MakeTarget("J", "input")).error().code(), ErrorCode::kAuthFailed);
  std::filesystem::remove(input);
  testing::WriteAll(input, "input data");
  ExpectStillServing();
}

TEST_F(Refusal, NoFolderBeneathATreeIsASymlinkOrAFile) {
  std::filesystem::path tree = w->dir / "tree";
  std::filesystem::create_directories(tree);
  std::filesystem::create_symlink(std::filesystem::path(secret).parent_path(), tree / "away");
  testing::WriteAll(tree / "plain", "a file");
  ASSERT_TRUE(w->server->AddJob("T", w->jane_dn, {}, {{"output/tree", tree, true}}));
  GassClient c = w->Client(w->jane_proxy);
  std::string name = std::filesystem::path(secret).filename();
  auto through = c.PutAt(MakeTarget("T", "output/tree/away/" + name), 0, "overwritten");
  ASSERT_FALSE(through);
  EXPECT_EQ(through.error().code(), ErrorCode::kAuthFailed) << through.error().ToString();
  EXPECT_EQ(ReadAll(secret), kSecret);
  auto under_file = c.PutAt(MakeTarget("T", "output/tree/plain/x"), 0, "x");
  ASSERT_FALSE(under_file);
  EXPECT_EQ(under_file.error().code(), ErrorCode::kAuthFailed);
  EXPECT_EQ(ReadAll(tree / "plain"), "a file");
  std::filesystem::create_symlink(secret, tree / "link");  // nor the file itself
  EXPECT_FALSE(c.PutAt(MakeTarget("T", "output/tree/link"), 0, "overwritten"));
  EXPECT_EQ(ReadAll(secret), kSecret);
  // Folders are made only where a tree allows, never through a link or over a file.
  EXPECT_EQ(c.MakeFolder(MakeTarget("T", "output/tree/away/new")).error().code(),
            ErrorCode::kAuthFailed);
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(secret).parent_path() / "new"));
  EXPECT_EQ(c.MakeFolder(MakeTarget("T", "output/tree/plain")).error().code(),
            ErrorCode::kAuthFailed);
  EXPECT_EQ(c.MakeFolder(MakeTarget("J", "output")).error().code(), ErrorCode::kAuthFailed);
  EXPECT_FALSE(std::filesystem::is_directory(output));
  auto body = w->Raw(
      "PUT /jobs/T/output/tree/n HTTP/1.1\r\nHost: x\r\nKite-Folder: 1\r\n"
      "Content-Length: 1\r\nContent-Range: bytes 0-0/*\r\n\r\nx");
  EXPECT_EQ(body.status, 400);
  EXPECT_FALSE(std::filesystem::exists(tree / "n"));
  ExpectStillServing();
}

TEST_F(Refusal, MalformedRequestsGet400AndTheServerGoesOn) {
  for (const char* bytes : {
           "GARBAGE\r\n\r\n",
           "GET /jobs/J/input HTTP/9.9\r\n\r\n",
           "GET /jobs/J/input HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
           "GET /jobs/J/input HTTP/1.1\r\nBad Header\r\n\r\n",
           "GET /jobs/J/input HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       }) {
    auto r = w->Raw(bytes);
    EXPECT_EQ(r.status, 400) << bytes << " " << r.error;
    ExpectStillServing();
  }
  auto range = w->Raw("GET /jobs/J/input HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1,4-5\r\n\r\n");
  EXPECT_EQ(range.status, 400);
  auto version = w->Raw("GET /jobs/J/input HTTP/1.1\r\nKite-Gass-Version: 2\r\n\r\n");
  EXPECT_EQ(version.status, 400);
  auto method = w->Raw("DELETE /jobs/J/input HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(ReadAll(input), "input data");
  auto huge = w->Raw("GET /jobs/J/input HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(huge.status, 431);
  ExpectStillServing();
}

TEST_F(Refusal, BadPutsChangeNothing) {
  auto too_big = w->Raw("PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                        std::to_string(kMaxPutBody + 1) + "\r\nContent-Range: bytes 0-" +
                        std::to_string(kMaxPutBody) + "/*\r\n\r\n");
  EXPECT_EQ(too_big.status, 413);
  auto chunked = w->Raw(
      "PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(chunked.status, 411);
  auto no_range = w->Raw("PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(no_range.status, 400);
  auto mismatch = w->Raw(
      "PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
      "Content-Range: bytes 0-9/*\r\n\r\nabc");
  EXPECT_EQ(mismatch.status, 400);
  auto with_size = w->Raw(
      "PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
      "Content-Range: bytes 0-2/3\r\n\r\nabc");
  EXPECT_EQ(with_size.status, 400);
  auto bad_cut = w->Raw(
      "PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
      "Content-Range: bytes 0-2/*\r\nKite-Truncate: 1\r\n\r\nabc");
  EXPECT_EQ(bad_cut.status, 400);
  EXPECT_FALSE(std::filesystem::exists(output));

  GassClient c = w->Client(w->jane_proxy);
  auto local = c.PutAt(MakeTarget("J", "output"), 0, std::string(kMaxPutBody + 1, 'x'));
  EXPECT_EQ(local.error().code(), ErrorCode::kInvalidInput);
  EXPECT_FALSE(std::filesystem::exists(output));

  auto good = w->Raw(
      "PUT /jobs/J/output HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
      "Content-Range: bytes 2-4/*\r\nExpect: 100-continue\r\n\r\nabc");
  EXPECT_EQ(good.status, 200);  // the raw client reads past the interim 100 response
  EXPECT_EQ(good.headers["kite-file-size"], "5");
  EXPECT_EQ(ReadAll(output), std::string("\0\0abc", 5));
  ExpectStillServing();
}

TEST_F(Refusal, StrangersFailTheHandshake) {
  auto other = testing::GassWorld::Make();  // another CA entirely
  GassClient stranger({.base_url = w->server->url(), .tls = {other->jane_proxy, w->verifier}});
  auto got = stranger.GetRange(MakeTarget("J", "input"), 0, 10);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kAuthFailed) << got.error().ToString();
  GassClient anonymous({.base_url = w->server->url(), .tls = {std::nullopt, w->verifier}});
  auto anon = anonymous.GetRange(MakeTarget("J", "input"), 0, 10);
  ASSERT_FALSE(anon);
  EXPECT_EQ(anon.error().code(), ErrorCode::kAuthFailed) << anon.error().ToString();
  ExpectStillServing();
}

TEST_F(Refusal, NoServerIsUnavailable) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  uint16_t port = a.local_endpoint().port();
  a.close();
  GassClient c({.base_url = "https://127.0.0.1:" + std::to_string(port),
                .tls = {w->jane_proxy, w->verifier}});
  auto got = c.Size(MakeTarget("J", "input"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kUnavailable) << got.error().ToString();
}

// A server whose process dies during the handshake (the gridmanager killed, say) resets the
// connection: that is "try again later", never a refusal of the client's identity, or a job
// manager would fail a job that ran and get it run a second time.
TEST_F(Refusal, AConnectionResetDuringTheHandshakeIsUnavailable) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&sa), &len);
  std::thread resetter([listener] {
    for (int i = 0; i < 2; ++i) {
      int s = ::accept(listener, nullptr, nullptr);
      if (s < 0) return;
      char buf[512];
      (void)!::read(s, buf, sizeof buf);  // the ClientHello
      linger l{1, 0};                     // close with RST, as a killed process's socket does
      ::setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      ::close(s);
    }
  });
  GassClient c({.base_url = "https://127.0.0.1:" + std::to_string(ntohs(sa.sin_port)),
                .tls = {w->jane_proxy, w->verifier}});
  auto got = c.Size(MakeTarget("J", "input"));
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
  resetter.join();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kUnavailable) << got.error().ToString();
}

TEST(RefusalTimeouts, ASilentOrStalledClientIsDisconnected) {
  auto w = GassWorld::Make([](GassServerOptions& o) {
    o.idle_timeout = std::chrono::milliseconds(300);
    o.io_timeout = std::chrono::milliseconds(300);
  });
  ASSERT_TRUE(w->server->AddJob("J", w->jane_dn, {}, {{"out", w->dir / "out"}}));
  auto start = std::chrono::steady_clock::now();
  auto silent = w->Raw("");                  // connects, shakes hands, says nothing
  auto stalled = w->Raw("GET /jobs/J/inp");  // half a request line
  auto half_body = w->Raw(
      "PUT /jobs/J/out HTTP/1.1\r\nContent-Length: 100\r\nContent-Range: bytes 0-99/*\r\n\r\n"
      "only a few bytes");
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(silent.status, 0);
  EXPECT_EQ(stalled.status, 0);
  EXPECT_EQ(half_body.status, 0) << half_body.error;
  EXPECT_LT(waited, std::chrono::seconds(5));  // not the raw client's own 10 s limit
  // What arrived sits at its offset (written as the server gives up, just after the close the
  // client saw, so give it a moment).
  for (int i = 0; i < 100 && ReadAll(w->dir / "out").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(ReadAll(w->dir / "out"), "only a few bytes");
}

TEST_F(Refusal, AClosedServerEndsOpenConnections) {
  GassClient c = w->Client(w->jane_proxy);
  ASSERT_TRUE(c.Size(MakeTarget("J", "input")));
  w->server->Close();
  auto got = c.Size(MakeTarget("J", "input"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kUnavailable) << got.error().ToString();
}

}  // namespace
}  // namespace kite::gass
