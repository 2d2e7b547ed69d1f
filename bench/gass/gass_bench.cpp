// GASS throughput on loopback (MB/s) beside what the machine can do without it: memcpy, plain
// TCP over loopback and raw TLS (the same mutual-TLS contexts, no HTTP) over loopback.
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "credentials/ca.h"
#include "credentials/proxy.h"
#include "credentials/tls.h"
#include "gass/client.h"
#include "gass/protocol.h"
#include "gass/server.h"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace kite;

constexpr size_t kFileSize = 64u << 20;

// A CA (EC keys), host credential, user proxy, a 64 MiB input file and a served GassServer.
struct World {
  std::string dir;
  credentials::TestCa ca;
  credentials::Credential host, proxy;
  std::string dn;
  std::shared_ptr<const credentials::Verifier> verifier;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::unique_ptr<gass::GassServer> server;

  World() {
    spdlog::set_level(spdlog::level::warn);
    std::string tmpl = (std::filesystem::temp_directory_path() / "kite-gass-bench-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    ca = *credentials::TestCa::Init(dir + "/ca", {.key = {credentials::KeyAlgorithm::kEcP256}});
    host = *ca.IssueHostCredential("localhost", {.key = {credentials::KeyAlgorithm::kEcP256}});
    auto user = *ca.IssueUserCredential("CN=Bench", {.key = {credentials::KeyAlgorithm::kEcP256}});
    dn = user.leaf().Subject();
    proxy = credentials::CreateProxy(user, {})->credential;
    verifier = *credentials::Verifier::Create({.ca_dir = ca.trusted_dir()});
    std::ofstream(dir + "/input", std::ios::binary) << std::string(kFileSize, 'x');
    Start(true);
  }
  // (Re)starts the server, fsyncing PUTs or not.
  void Start(bool sync) {
    if (server) server->Close();
    server = *gass::GassServer::Create(
        io, {.credential = host, .verifier = verifier, .sync_writes = sync});
    (void)server->AddJob("j", dn, {{"input", dir + "/input"}}, {{"output", dir + "/output"}});
    if (!thread.joinable()) {
      work.emplace(io.get_executor());
      thread = std::thread([this] { io.run(); });
    }
  }
  ~World() {
    server->Close();
    work.reset();
    thread.join();
    std::filesystem::remove_all(dir);
  }
  gass::GassClient Client() {
    return gass::GassClient({.base_url = server->url(), .tls = {proxy, verifier}});
  }
};

World& W() {
  static World w;
  return w;
}

void BM_GassGetToFile(benchmark::State& state) {
  auto& w = W();
  auto c = w.Client();
  std::string local = w.dir + "/staged";
  for (auto _ : state) {
    std::filesystem::remove(local);
    if (!c.Get(gass::MakeTarget("j", "input"), local)) state.SkipWithError("Get failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileSize));
}

void BM_GassGetRangeToMemory(benchmark::State& state) {
  auto& w = W();
  auto c = w.Client();
  size_t chunk = static_cast<size_t>(state.range(0));
  uint64_t off = 0;
  for (auto _ : state) {
    auto got = c.GetRange(gass::MakeTarget("j", "input"), off, chunk);
    if (!got || got->size() != chunk) state.SkipWithError("GetRange failed");
    off = (off + chunk) % (kFileSize - chunk);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * chunk));
}

void BM_GassPut(benchmark::State& state) {
  auto& w = W();
  w.Start(state.range(1) != 0);
  auto c = w.Client();
  std::string data(static_cast<size_t>(state.range(0)), 'y');
  uint64_t off = 0;
  for (auto _ : state) {
    if (!c.PutAt(gass::MakeTarget("j", "output"), off, data)) state.SkipWithError("PutAt failed");
    off = (off + data.size()) % kFileSize;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
  w.Start(true);
}

void BM_Memcpy(benchmark::State& state) {
  std::string a(kFileSize, 'a'), b(kFileSize, 'b');
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kFileSize);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileSize));
}

// 64 MiB through a loopback TCP connection, read in 256 KiB pieces by a second thread.
void BM_LoopbackTcp(benchmark::State& state) {
  asio::io_context io;
  tcp::acceptor acc(io, {asio::ip::make_address("127.0.0.1"), 0});
  tcp::socket out(io);
  out.connect(acc.local_endpoint());
  tcp::socket in = acc.accept();
  std::string buf(256u << 10, 'z');
  for (auto _ : state) {
    std::thread reader([&] {
      std::string r(256u << 10, '\0');
      size_t left = kFileSize;
      while (left > 0) left -= in.read_some(asio::buffer(r.data(), std::min(left, r.size())));
    });
    for (size_t sent = 0; sent < kFileSize; sent += buf.size()) asio::write(out, asio::buffer(buf));
    reader.join();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileSize));
}

// The same over mutual TLS with Kite's contexts: the ceiling for GASS without HTTP and files.
void BM_LoopbackTls(benchmark::State& state) {
  auto& w = W();
  auto sctx = *credentials::MakeServerContext(w.host, w.verifier);
  auto cctx = *credentials::MakeClientContext(w.proxy, w.verifier);
  asio::io_context io;
  tcp::acceptor acc(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ssl::stream<tcp::socket> out(io, *cctx), in(io, *sctx);
  out.next_layer().connect(acc.local_endpoint());
  acc.accept(in.next_layer());
  std::thread hs([&] { in.handshake(asio::ssl::stream_base::server); });
  out.handshake(asio::ssl::stream_base::client);
  hs.join();
  std::string buf(256u << 10, 'z');
  for (auto _ : state) {
    std::thread reader([&] {
      std::string r(256u << 10, '\0');
      size_t left = kFileSize;
      while (left > 0) left -= in.read_some(asio::buffer(r.data(), std::min(left, r.size())));
    });
    for (size_t sent = 0; sent < kFileSize; sent += buf.size()) asio::write(out, asio::buffer(buf));
    reader.join();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileSize));
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoopbackTcp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoopbackTls)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GassGetToFile)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GassGetRangeToMemory)
    ->Arg(1 << 10)
    ->Arg(64 << 10)
    ->Arg(4 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GassPut)
    ->ArgsProduct({{1 << 10, 16 << 10, 64 << 10, 4 << 20, 16 << 20}, {0, 1}})
    ->ArgNames({"bytes", "sync"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
