// The integration tests' site: CA, credentials, grid-mapfile and a real gatekeeper process.
#include "site.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "common/files.h"
#include "credentials/proxy.h"
#include "tests/fixtures/kite_env.h"

extern char** environ;

namespace kite::gram::testing {

using kite::testing::BinDir;
using kite::testing::WaitUntil;

Site::Site(const std::string& tag, SiteOptions options) : options_(std::move(options)) {
  dir_ = kite::testing::MakeTempDir(tag);
  ::chmod(dir_.c_str(), 0755);  // a job manager run as another account must reach its state
  auto ca = credentials::TestCa::Init(dir_ + "/ca", {.key = {credentials::KeyAlgorithm::kEcP256}});
  EXPECT_TRUE(ca) << ca.error().ToString();
  ca_ = std::move(*ca);
  // Trusted CAs are public (the CA's private key stays in its own 0700 directory).
  ::chmod((dir_ + "/ca").c_str(), 0755);
  ::chmod(ca_.trusted_dir().c_str(), 0755);
  credentials::IssueOptions ec{.key = {credentials::KeyAlgorithm::kEcP256}};
  EXPECT_TRUE(ca_.IssueHost("localhost", dir_ + "/host", ec));
  auto user = ca_.IssueUserCredential("CN=Jane Doe", ec);
  EXPECT_TRUE(user);
  user_dn_ = user->leaf().Subject();
  auto proxy = credentials::CreateProxy(*user, {});
  EXPECT_TRUE(proxy);
  proxy_ = proxy->credential;
  auto v = credentials::Verifier::Create({.ca_dir = ca_.trusted_dir()});
  EXPECT_TRUE(v);
  verifier_ = *v;
  kite::testing::WriteFile(dir_ + "/grid-mapfile",
                           "\"" + user_dn_ + "\" " + options_.account + "\n");
  EXPECT_TRUE(MakeDirs(dir_ + "/faults", 0777));
  ::chmod((dir_ + "/faults").c_str(), 0777);
  StartGatekeeper();
}

Site::~Site() {
  StopGatekeeper();
  if (pid_t jm = JobManagerPid(); jm > 0) {
    ::kill(jm, SIGTERM);
    WaitUntil([&] { return ::kill(jm, 0) != 0 || JobManagerPid() == 0; }, 5);
  }
  // Kept after a failure for a post-mortem (logs: gatekeeper.log, state/users/*/jobmanager.log).
  if (!::testing::Test::HasFailure()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void Site::StartGatekeeper() {
  std::string port_file = dir_ + "/gatekeeper.port";
  ::unlink(port_file.c_str());
  std::vector<std::string> argv = {BinDir() + "/kite-gatekeeper",
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--state-dir",
                                   state_dir(),
                                   "--cert",
                                   dir_ + "/host/hostcert.pem",
                                   "--key",
                                   dir_ + "/host/hostkey.pem",
                                   "--ca-dir",
                                   ca_.trusted_dir(),
                                   "--gridmap",
                                   dir_ + "/grid-mapfile",
                                   "--commit-timeout",
                                   std::to_string(options_.commit_timeout),
                                   "--port-file",
                                   port_file,
                                   "--log",
                                   dir_ + "/gatekeeper.log",
                                   "--log-level",
                                   "debug",
                                   "--batch",
                                   options_.batch,
                                   "--batch-poll-interval",
                                   std::to_string(options_.batch_poll_interval)};
  if (options_.nofile > 0) {
    std::string n = std::to_string(options_.nofile);
    argv.insert(argv.begin(), {"/usr/bin/prlimit", "--nofile=" + n + ":" + n});
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (!std::string_view(*e).starts_with("KITE_FAULT_DIR=")) env.emplace_back(*e);
  }
  if (options_.fault_dir) env.push_back("KITE_FAULT_DIR=" + dir_ + "/faults");
  for (const auto& e : options_.env) {
    std::string name = e.substr(0, e.find('=') + 1);
    std::erase_if(env, [&](const std::string& x) { return x.starts_with(name); });
    env.push_back(e);
  }
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  ASSERT_EQ(posix_spawn(&gatekeeper_, cargv[0], nullptr, nullptr, cargv.data(), cenv.data()), 0);
  ASSERT_TRUE(WaitUntil([&] { return FileExists(port_file); }, 10))
      << kite::testing::ReadFileOr(dir_ + "/gatekeeper.log");
  port_ = static_cast<uint16_t>(std::atoi(ReadFile(port_file)->c_str()));
}

void Site::WriteGridMap(const std::string& text) {
  std::string path = dir_ + "/grid-mapfile";
  kite::testing::WriteFile(path + ".new", text);
  ::rename((path + ".new").c_str(), path.c_str());
}

void Site::StopGatekeeper() {
  if (gatekeeper_ <= 0) return;
  ::kill(gatekeeper_, SIGTERM);
  ::waitpid(gatekeeper_, nullptr, 0);
  gatekeeper_ = 0;
}

pid_t Site::JobManagerPid() const {
  std::string lock = account_dir() + "/jm.lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return 0;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  if (!held) return 0;
  auto text = ReadFile(account_dir() + "/jm.pid");
  return text ? static_cast<pid_t>(std::atoi(text->c_str())) : 0;
}

void Site::KillJobManager() {
  pid_t pid = JobManagerPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return JobManagerPid() == 0; }, 10));
}

void Site::Arm(const std::string& point) const {
  kite::testing::WriteFile(dir_ + "/faults/" + point, "");
}

bool Site::Fired(const std::string& point) const {
  return !FileExists(dir_ + "/faults/" + point);
}

std::unique_ptr<Client> Site::MakeClient(const credentials::Credential& cred) const {
  ClientOptions o;
  o.host = "localhost";
  o.port = port_;
  o.credential = cred;
  o.verifier = verifier_;
  o.timeout = std::chrono::seconds(20);
  auto c = Client::Create(o);
  EXPECT_TRUE(c) << c.error().ToString();
  return c ? std::move(*c) : nullptr;
}

JobDescription Site::ShellJob(const std::string& script) {
  JobDescription j;
  j.executable.site = "/bin/sh";
  j.arguments = {"-c", script};
  return j;
}

Result<JobStatus> Site::WaitFor(Client& c, const std::string& id, JobState state, double seconds) {
  Result<JobStatus> last = Fail(ErrorCode::kTimeout, "never asked");
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    last = c.Status(id);
    if (last && (last->state == state || IsTerminal(last->state))) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return last;
}

}  // namespace kite::gram::testing
