// gram_bench: the grid path's throughput and latency at one site, end to end through real
// processes: client library -> kite-gatekeeper -> kite-jobmanager -> fork -> kite-exec, with
// delegation once, two-phase commit, state changes by callback, and commit-end.
//
//   gram_bench [--jobs N] [--threads T] [--out FILE.md]
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "common/files.h"
#include "common/paths.h"
#include "credentials/ca.h"
#include "credentials/proxy.h"
#include "gram/callback_server.h"
#include "gram/client.h"

namespace {

using namespace kite;
using Clock = std::chrono::steady_clock;

struct Args {
  int jobs = 1000;
  int threads = 16;
  std::string out;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gram_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Check(Result<T> r, const std::string& what) {
  if (!r) Die(what + ": " + r.error().ToString());
  return std::move(*r);
}

// Done-callbacks by job id, waited on by the benchmark's threads.
class DoneBoard {
 public:
  void Done(const std::string& id) {
    std::lock_guard lock(mu_);
    done_[id] = Clock::now();
    cv_.notify_all();
  }
  Clock::time_point Wait(const std::string& id) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_.contains(id); });
    return done_[id];
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return done_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Clock::time_point> done_;
};

std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// This machine's own limit in the same run: posix_spawn + wait of /bin/true per second.
double SpawnRate() {
  const int n = 300;
  char arg0[] = "/bin/true";
  char* args[] = {arg0, nullptr};
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    pid_t pid;
    if (posix_spawn(&pid, arg0, nullptr, nullptr, args, environ) == 0) ::waitpid(pid, nullptr, 0);
  }
  return n / std::chrono::duration<double>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
// The site under test: CA, credentials, grid-mapfile and a real kite-gatekeeper process.
struct BenchSite {
  std::string dir, account;
  credentials::Credential user, proxy;
  std::shared_ptr<const credentials::Verifier> verifier;
  pid_t gatekeeper = 0;
  uint16_t port = 0;

  void Start() {
    char tmpl[] = "/tmp/kite-gram-bench-XXXXXX";
    dir = ::mkdtemp(tmpl);
    credentials::IssueOptions ec{.key = {credentials::KeyAlgorithm::kEcP256}};
    auto ca = Check(credentials::TestCa::Init(dir + "/ca", {.key = ec.key}), "CA");
    Check(ca.IssueHost("localhost", dir + "/host", ec), "host certificate");
    user = Check(ca.IssueUserCredential("CN=Bench User", ec), "user certificate");
    proxy = Check(credentials::CreateProxy(user, {}), "proxy").credential;
    verifier = Check(credentials::Verifier::Create({.ca_dir = ca.trusted_dir()}), "verifier");
    account = ::geteuid() == 0 ? "root" : (std::getenv("USER") ? std::getenv("USER") : "");
    std::string map = "\"" + user.leaf().Subject() + "\" " + account + "\n";
    if (auto st = WriteFileAtomic(dir + "/grid-mapfile", map); !st) Die(st.error().ToString());
    std::string port_file = dir + "/port";
    std::vector<std::string> argv = {ProgramPath("kite-gatekeeper"),
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--state-dir",
                                     dir + "/state",
                                     "--cert",
                                     dir + "/host/hostcert.pem",
                                     "--key",
                                     dir + "/host/hostkey.pem",
                                     "--ca-dir",
                                     ca.trusted_dir(),
                                     "--gridmap",
                                     dir + "/grid-mapfile",
                                     "--port-file",
                                     port_file,
                                     "--log",
                                     dir + "/gatekeeper.log",
                                     "--log-level",
                                     "warn"};
    std::vector<char*> cargv;
    for (auto& s : argv) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    if (posix_spawn(&gatekeeper, cargv[0], nullptr, nullptr, cargv.data(), environ) != 0) {
      Die("cannot start kite-gatekeeper");
    }
    for (int i = 0; i < 500 && !FileExists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    port = static_cast<uint16_t>(std::atoi(ReadFile(port_file).value_or("0").c_str()));
    if (port == 0) Die("gatekeeper did not start");
  }

  void Stop() {
    ::kill(gatekeeper, SIGTERM);
    ::waitpid(gatekeeper, nullptr, 0);
    if (auto jm = ReadFile(dir + "/state/users/" + account + "/jm.pid")) {
      ::kill(std::atoi(jm->c_str()), SIGTERM);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

struct Figures {
  double rate = 0, seconds = 0, median_ms = 0, spawn_rate = 0;
  size_t latency_samples = 0, connections = 0;
  int failures = 0;
};

// Where one job's time goes, on stderr, for a few jobs.
void Trace(gram::Client& client, DoneBoard& board, const gram::JobDescription& job) {
  auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  for (int i = 0; i < 3; ++i) {
    std::string tag = "trace" + std::to_string(i);
    auto t0 = Clock::now();
    auto sub = client.Submit("s-" + tag, job);
    auto t1 = Clock::now();
    if (!sub || !client.Commit("c-" + tag, sub->job_id)) Die("trace job");
    auto t2 = Clock::now();
    auto t3 = board.Wait(sub->job_id);
    (void)client.CommitEnd("e-" + tag, sub->job_id);
    auto t4 = Clock::now();
    std::fprintf(stderr,
                 "trace: submit %.1f ms, commit %.1f ms, to done %.1f ms, commit-end %.1f ms\n",
                 ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t3, t4));
  }
}

Figures Measure(const Args& a, gram::Client& client, DoneBoard& board,
                const gram::JobDescription& job) {
  std::atomic<int> failures{0};
  auto run_one = [&](const std::string& tag) {
    auto sub = client.Submit("s-" + tag, job);
    if (!sub) return ++failures, Clock::time_point{};
    if (!client.Commit("c-" + tag, sub->job_id)) return ++failures, Clock::time_point{};
    auto done = board.Wait(sub->job_id);
    if (!client.CommitEnd("e-" + tag, sub->job_id)) ++failures;
    return done;
  };
  Figures f;
  // Latency: one job at a time, submit to the done callback.
  std::vector<double> latencies;
  for (int i = 0; i < 30; ++i) {
    auto t0 = Clock::now();
    auto done = run_one("lat" + std::to_string(i));
    latencies.push_back(std::chrono::duration<double, std::milli>(done - t0).count());
  }
  // Throughput: `threads` submitters, each job submitted, committed, awaited and commit-ended.
  std::atomic<int> next{0};
  auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < a.threads; ++t) {
    workers.emplace_back([&] {
      for (int i; (i = next++) < a.jobs;) run_one("tp" + std::to_string(i));
    });
  }
  for (auto& w : workers) w.join();
  f.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  f.rate = a.jobs / f.seconds;
  f.median_ms = Median(latencies);
  f.latency_samples = latencies.size();
  f.connections = client.connections_opened();
  f.failures = failures.load();
  f.spawn_rate = SpawnRate();
  return f;
}

void Report(const Args& a, const Figures& f) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  char body[2048];
  std::snprintf(
      body, sizeof body,
      "# Grid path benchmark (gram_bench) — %s\n\n"
      "Machine: %u cores (nproc), %s. One site on loopback: client library -> kite-gatekeeper ->\n"
      "kite-jobmanager -> fork -> kite-exec, job = `/bin/true`; delegation once (EC P-256),\n"
      "kept-alive mutual-TLS connections, state changes by callback, two-phase commit and\n"
      "commit-end for every job; SQLite synchronous=FULL at the site.\n\n"
      "| measure | Kite | GRAM5 on this kind of machine (notes/gram5-reference.md) |\n"
      "| --- | ---: | ---: |\n"
      "| %d jobs, %d submitting threads: submit+commit, done callback, commit-end | %.1f jobs/s "
      "(%.2f s) | 3.30 jobs/s with two-phase commit (4.99 without) |\n"
      "| single job, submit to done callback, median of %zu | %.1f ms | ~2,000 ms |\n"
      "| TLS connections opened by the client for all of it | %zu | one per call |\n"
      "| failed calls | %d | |\n"
      "| reference, same run: posix_spawn + wait of /bin/true | %.0f /s | |\n\n"
      "The machine is shared with other builds: figures vary by 2-3x between runs; compare\n"
      "ratios within one run.\n",
      date, std::thread::hardware_concurrency(), CpuModel().c_str(), a.jobs, a.threads, f.rate,
      f.seconds, f.latency_samples, f.median_ms, f.connections, f.failures, f.spawn_rate);
  std::printf("%s", body);
  if (!a.out.empty()) std::ofstream(a.out) << body;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--jobs") a.jobs = std::atoi(argv[i + 1]);
    if (k == "--threads") a.threads = std::atoi(argv[i + 1]);
    if (k == "--out") a.out = argv[i + 1];
  }
  ::signal(SIGPIPE, SIG_IGN);
  BenchSite site;
  site.Start();
  DoneBoard board;
  gram::CallbackServerOptions co;
  co.credential = site.proxy;
  co.verifier = site.verifier;
  co.accepted_identity = site.user.leaf().Subject();
  co.handler = [&](const std::string&, const gram::JobStatus& s) {
    if (gram::IsTerminal(s.state)) board.Done(s.job_id);
  };
  auto callbacks = Check(gram::CallbackServer::Start(co), "callback server");
  gram::ClientOptions copts{"localhost", site.port, site.proxy, site.verifier};
  copts.max_idle_connections = static_cast<size_t>(a.threads);
  auto client = Check(gram::Client::Create(copts), "client");
  auto delegation = Check(client->Delegate("bench-delegation"), "delegate");
  gram::JobDescription job;
  job.executable.site = "/bin/true";
  job.delegation_id = delegation.id;
  job.callback_url = callbacks->Url("/callbacks");
  Trace(*client, board, job);
  Figures f = Measure(a, *client, board, job);
  site.Stop();
  Report(a, f);
  return f.failures == 0 ? 0 : 1;
}
