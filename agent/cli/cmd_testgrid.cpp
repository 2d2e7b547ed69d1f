// `kite testgrid up|status|down`: the embedded default grid — a personal CA, a host certificate for
// localhost, a user certificate and proxy, a grid-mapfile, and a kite-gatekeeper on a free loopback
// port, all under $KITE_HOME/testgrid (the CA under $KITE_HOME/ca, shared with `kite ca`). With
// `up --batch slurm` the gatekeeper's job managers hand jobs to the Slurm cluster that this
// environment's PATH and SLURM_CONF point to (the gatekeeper passes both on to them).
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "common/files.h"
#include "common/paths.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "credentials/ca.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"

namespace kite::cli {
namespace {

namespace cred = kite::credentials;

// The unnamed site lives in $KITE_HOME/testgrid itself; a site named with --name in
// $KITE_HOME/testgrid/sites/NAME, sharing the certificates and the proxy.
struct Paths {
  explicit Paths(const std::string& site_name = "")
      : name(site_name), site(site_name.empty() ? dir : dir + "/sites/" + site_name) {}
  std::string name;
  std::string dir = JoinPath(KiteHome(), "testgrid");
  std::string site;
  std::string ca = JoinPath(KiteHome(), "ca");
  std::string host_cert = dir + "/hostcert.pem", host_key = dir + "/hostkey.pem";
  std::string user_cert = dir + "/usercert.pem", user_key = dir + "/userkey.pem";
  std::string gridmap = site + "/grid-mapfile";
  std::string state = site + "/state";
  std::string pid = site + "/gatekeeper.pid", port = site + "/gatekeeper.port";
  std::string batch = site + "/gatekeeper.batch";
  std::string log = site + "/gatekeeper.log";
  std::string limits = site + "/fork-limits";
  std::string own_proxy = dir + "/proxy.pem";  // used when the default proxy is someone else's
  std::string Label() const { return name.empty() ? "the test grid" : "test site " + name; }
};

// Every site: the unnamed one and each under sites/.
std::vector<Paths> AllSites() {
  std::vector<Paths> out{Paths()};
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(Paths().dir + "/sites", ec)) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) out.emplace_back(n);
  return out;
}

std::string Account() {
  if (auto* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  return std::to_string(::geteuid());
}

// The gatekeeper's pid while it runs, else 0.
pid_t RunningGatekeeper(const Paths& p) {
  auto text = ReadFile(p.pid);
  if (!text) return 0;
  pid_t pid = static_cast<pid_t>(std::atoi(text->c_str()));
  if (pid <= 0 || ::kill(pid, 0) != 0) return 0;
  auto cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  return cmd && cmd->find("kite-gatekeeper") != std::string::npos ? pid : 0;
}

std::string ResourceLine(const Paths& p) {
  auto port = ReadFile(p.port);
  auto batch = ReadFile(p.batch);
  return "grid_resource = kite 127.0.0.1:" + std::string(Trim(port.value_or("?"))) + "/" +
         std::string(Trim(batch.value_or("fork")));
}

cred::TestCa OpenOrMakeCa(const Paths& p) {
  if (FileExists(JoinPath(p.ca, "cacert.pem")) || FileExists(JoinPath(p.ca, "certificates"))) {
    auto ca = cred::TestCa::Open(p.ca);
    if (!ca) Die(ca.error());
    return std::move(*ca);
  }
  auto ca = cred::TestCa::Init(p.ca);
  if (!ca) Die(ca.error());
  std::printf("made a personal test CA in %s\n", p.ca.c_str());
  return std::move(*ca);
}

// Issues into `dir` and renames to the wanted names, unless both files already exist.
void EnsureIssued(cred::TestCa& ca, bool host, const std::string& name, const std::string& cert,
                  const std::string& key, const std::string& dir) {
  if (FileExists(cert) && FileExists(key)) return;
  cred::IssueOptions o;
  o.key = {cred::KeyAlgorithm::kEcP256};
  auto files = host ? ca.IssueHost(name, dir, o) : ca.IssueUser(name, dir, o);
  if (!files) Die(files.error());
  std::error_code ec;
  if (files->cert_path != cert) std::filesystem::rename(files->cert_path, cert, ec);
  if (!ec && files->key_path != key) std::filesystem::rename(files->key_path, key, ec);
  if (ec) Die("cannot place " + cert + ": " + ec.message());
}

// The proxy jobs will use: the default proxy when it speaks for `subject` (the identity the test
// grid's grid-mapfile maps) under the test CA for another hour, otherwise a fresh one — at the
// default path when nothing is there, else in the testgrid dir so that a proxy of another
// identity or CA is never overwritten (the note then says which proxy to name).
std::string EnsureProxy(const Paths& p, const std::string& ca_dir, const std::string& subject,
                        std::string* note) {
  auto verifier = cred::Verifier::Create({.ca_dir = ca_dir});
  if (!verifier) Die(verifier.error());
  std::string def = DefaultProxyPath();
  for (const std::string& path : {def, p.own_proxy}) {
    auto existing = cred::LoadProxyFile(path);
    if (!existing) continue;
    auto id = (*verifier)->Verify(existing->chain);
    if (id && id->subject == subject &&
        id->not_after > std::chrono::system_clock::now() + std::chrono::hours(1)) {
      if (path != def) *note = "x509userproxy = " + path;
      return path;
    }
  }
  auto user = cred::LoadCertificateAndKey(p.user_cert, p.user_key);
  if (!user) Die(user.error());
  auto proxy = cred::CreateProxy(*user, {.lifetime = std::chrono::hours(12)});
  if (!proxy) Die(proxy.error());
  std::string out = FileExists(def) ? p.own_proxy : def;
  if (auto st = cred::SaveProxyFile(out, proxy->credential); !st) Die(st.error());
  if (out != def) *note = "x509userproxy = " + out;
  return out;
}

struct UpOptions {
  std::string name;  // --name: a named site of its own ("": the test grid's one site)
  int port = 0;      // --port: the loopback port to listen on (0: any free one)
  std::string batch = "fork";
  double batch_poll_interval = 1.0;  // seconds
  bool batch_given = false;          // --batch was on the command line
  // Test aids of the fork adapter (docs/batch.md): nullopt leaves the limits file as it is.
  std::optional<int64_t> slots;
  std::optional<double> start_delay;
  std::string site_attributes;  // --site-attributes FILE, passed to the gatekeeper
};

// Writes the fork adapter's limits file from `o` (keeping what it does not set).
void WriteLimits(const Paths& p, const UpOptions& o) {
  if (!o.slots && !o.start_delay) return;
  std::optional<int64_t> slots;
  double delay = 0;
  for (const auto& line : Split(ReadFile(p.limits).value_or(""), '\n')) {
    if (line.starts_with("slots ")) slots = std::atoll(line.c_str() + 6);
    if (line.starts_with("start_delay ")) delay = std::atof(line.c_str() + 12);
  }
  if (o.slots) slots = *o.slots < 0 ? std::nullopt : o.slots;
  if (o.start_delay) delay = *o.start_delay;
  std::string text = "# kite testgrid: the fork adapter's test limits (docs/batch.md)\n";
  if (slots) text += "slots " + std::to_string(*slots) + "\n";
  text += "start_delay " + ExactNumber(delay) + "\n";
  if (auto st = WriteFileAtomic(p.limits, text, 0644); !st) Die(st.error());
}

// For a batch system behind the gatekeeper: what the job managers will use to reach it, checked
// now so that a missing client or configuration is said here rather than in a held job.
// Returns a line for the user ("" for fork); the gatekeeper itself refuses unknown names.
// The program `name` in PATH; "" when there is none.
std::string InPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path ? path : "", ':')) {
    std::string candidate = JoinPath(dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string CheckBatchSystem(const std::string& batch) {
  if (batch == "sge") {
    std::string qsub = InPath("qsub");
    if (qsub.empty()) {
      Die("--batch sge: qsub is not in PATH; install Grid Engine's client commands (Debian: "
          "gridengine-client) or put them in PATH");
    }
    const char* root = std::getenv("SGE_ROOT");
    const char* cell = std::getenv("SGE_CELL");
    return "sge: " + qsub + " with SGE_ROOT=" + (root ? root : "(unset)") +
           " SGE_CELL=" + (cell ? cell : "default");
  }
  if (batch != "slurm") return "";
  std::string sbatch = InPath("sbatch");
  if (sbatch.empty()) {
    Die("--batch slurm: sbatch is not in PATH; install Slurm's client commands (Debian: "
        "slurm-client) or put them in PATH");
  }
  const char* conf = std::getenv("SLURM_CONF");
  if (conf != nullptr && *conf != '\0') {
    if (!FileExists(conf))
      Die(std::string("--batch slurm: SLURM_CONF=") + conf + " does not exist");
    return std::string("slurm: ") + sbatch + " with SLURM_CONF=" + conf;
  }
  return "slurm: " + sbatch + " with Slurm's default configuration (SLURM_CONF is not set)";
}

pid_t StartGatekeeper(const Paths& p, const std::string& ca_dir, const UpOptions& o) {
  ::unlink(p.port.c_str());
  SpawnOptions so;
  so.program = ProgramPath("kite-gatekeeper");
  char poll[32];
  std::snprintf(poll, sizeof poll, "%g", o.batch_poll_interval);
  std::string listen = "127.0.0.1:" + std::to_string(o.port);
  so.argv = {so.program,    "--listen",      listen,    "--state-dir", p.state,
             "--cert",      p.host_cert,     "--key",   p.host_key,    "--ca-dir",
             ca_dir,        "--gridmap",     p.gridmap, "--batch",     o.batch,
             "--port-file", p.port,          "--log",   p.log,         "--batch-poll-interval",
             poll,          "--fork-limits", p.limits};
  if (!o.site_attributes.empty()) {
    so.argv.push_back("--site-attributes");
    so.argv.push_back(std::filesystem::absolute(o.site_attributes).string());
  }
  so.env = CurrentEnvironment();
  so.stdout_path = p.site + "/gatekeeper.out";
  so.stderr_path = p.site + "/gatekeeper.out";
  auto pid = Spawn(so);
  if (!pid) Die(pid.error());
  for (int i = 0; i < 500 && !FileExists(p.port); ++i) {
    if (::kill(*pid, 0) != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!FileExists(p.port)) {
    auto out = ReadFile(p.site + "/gatekeeper.out");
    Die("kite-gatekeeper did not start" +
        (out && !out->empty() ? ": " + std::string(Trim(*out)) : std::string()));
  }
  if (auto st = WriteFileAtomic(p.pid, std::to_string(*pid) + "\n", 0644); !st) Die(st.error());
  if (auto st = WriteFileAtomic(p.batch, o.batch + "\n", 0644); !st) Die(st.error());
  return *pid;
}

bool ValidSiteName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

void Up(const UpOptions& o) {
  if (!o.name.empty() && !ValidSiteName(o.name)) {
    Die("--name: 1-64 letters, digits, '-' or '_', not '" + o.name + "'");
  }
  if ((o.slots || o.start_delay) && o.batch != "fork") {
    Die("--slots and --start-delay are test aids of the fork adapter only");
  }
  if (o.start_delay && !(*o.start_delay >= 0)) Die("--start-delay must be 0 or more seconds");
  Paths p(o.name);
  if (pid_t pid = RunningGatekeeper(p)) {
    std::string running(Trim(ReadFile(p.batch).value_or("fork")));
    if (o.batch_given && running != o.batch) {
      Die(p.Label() + " is already up with the " + running + " adapter; run `kite testgrid down" +
          (o.name.empty() ? "" : " --name " + o.name) + "` first to use " + o.batch);
    }
    WriteLimits(p, o);
    std::printf("%s is already up (kite-gatekeeper pid %d)\n%s\n", p.Label().c_str(), pid,
                ResourceLine(p).c_str());
    return;
  }
  if (!(o.batch_poll_interval > 0)) Die("--batch-poll-interval must be more than 0 seconds");
  std::string batch_note = CheckBatchSystem(o.batch);
  if (auto st = MakeDirs(p.dir, 0700); !st) Die(st.error());
  if (auto st = MakeDirs(p.site, 0700); !st) Die(st.error());
  if (auto st = MakeDirs(p.state, 0700); !st) Die(st.error());
  WriteLimits(p, o);
  auto ca = OpenOrMakeCa(p);
  EnsureIssued(ca, true, "localhost", p.host_cert, p.host_key, p.dir);
  std::string dn = "CN=" + Account() + " (Kite test user)";
  EnsureIssued(ca, false, dn, p.user_cert, p.user_key, p.dir);
  auto user = cred::LoadCertificateAndKey(p.user_cert, p.user_key);
  if (!user) Die(user.error());
  std::string subject = user->chain.front().Subject();
  std::string gridmap = "# Written by kite testgrid up.\n\"" + subject + "\" " + Account() + "\n";
  if (auto st = WriteFileAtomic(p.gridmap, gridmap, 0644); !st) Die(st.error());
  std::string note;
  std::string proxy = EnsureProxy(p, ca.trusted_dir(), subject, &note);
  pid_t pid = StartGatekeeper(p, ca.trusted_dir(), o);
  std::string for_site = o.name.empty() ? "" : " for test site " + o.name;
  std::printf("kite-gatekeeper (pid %d)%s serves %s with the %s adapter\n", pid, for_site.c_str(),
              subject.c_str(), o.batch.c_str());
  if (auto limits = ReadFile(p.limits)) {
    std::string l;
    for (const auto& line : Split(*limits, '\n')) {
      if (!line.empty() && line[0] != '#') l += (l.empty() ? "" : ", ") + line;
    }
    if (!l.empty()) std::printf("test limits (%s): %s\n", p.limits.c_str(), l.c_str());
  }
  if (!batch_note.empty()) std::printf("%s\n", batch_note.c_str());
  std::printf("proxy: %s\n", proxy.c_str());
  std::printf("use in a submit file:\n  universe = grid\n  %s\n", ResourceLine(p).c_str());
  if (!note.empty()) std::printf("  %s\n", note.c_str());
}

// Without --name: every site (the unnamed one and each named one); exit 3 when none runs.
void Status(const std::string& name) {
  std::vector<Paths> sites = name.empty() ? AllSites() : std::vector<Paths>{Paths(name)};
  bool any = false;
  for (const auto& p : sites) {
    pid_t pid = RunningGatekeeper(p);
    if (!pid) {
      if (!name.empty() || (p.name.empty() && sites.size() == 1)) {
        std::printf("%s is down\n", p.Label().c_str());
      }
      continue;
    }
    any = true;
    std::printf("%s is up: kite-gatekeeper pid %d, log %s\n%s\n", p.Label().c_str(), pid,
                p.log.c_str(), ResourceLine(p).c_str());
  }
  if (!any) {
    if (name.empty() && sites.size() > 1) std::printf("the test grid is down\n");
    throw CLI::RuntimeError(3);
  }
}

// SIGTERM, then SIGKILL after 10 s.
void StopProcess(pid_t pid) {
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
}

// The job managers the test grid's gatekeeper started (one per account, each holding the lock
// state/users/<account>/jm.lock while it runs): they outlive the gatekeeper otherwise, and keep
// asking the batch system about their jobs.
std::vector<pid_t> RunningJobManagers(const Paths& p) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(p.state + "/users", ec)) {
    std::string dir = e.path().string();
    int fd = ::open((dir + "/jm.lock").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
    ::close(fd);
    if (!held) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(ReadFile(dir + "/jm.pid").value_or("0").c_str()));
    auto cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (pid > 0 && cmd && cmd->find("kite-jobmanager") != std::string::npos) out.push_back(pid);
  }
  return out;
}

void DownOne(const Paths& p, bool say_down) {
  pid_t pid = RunningGatekeeper(p);
  if (pid) StopProcess(pid);  // first: it would start job managers again
  ::unlink(p.pid.c_str());
  std::vector<pid_t> jms = RunningJobManagers(p);
  for (pid_t jm : jms) StopProcess(jm);
  if (!pid && jms.empty()) {
    if (say_down) std::printf("%s is down\n", p.Label().c_str());
    return;
  }
  std::string what = pid ? "kite-gatekeeper pid " + std::to_string(pid) : "";
  for (pid_t jm : jms) {
    what += (what.empty() ? "" : ", ") + std::string("kite-jobmanager pid ") + std::to_string(jm);
  }
  std::printf("%s is down (stopped %s)\n", p.Label().c_str(), what.c_str());
}

// Without --name: every site.
void Down(const std::string& name) {
  if (!name.empty()) return DownOne(Paths(name), true);
  auto sites = AllSites();
  for (const auto& p : sites) DownOne(p, sites.size() == 1);
  if (sites.size() > 1) std::printf("the test grid is down\n");
}

// `kite testgrid limits`: the fork adapter's test limits of a running or future site.
void Limits(const UpOptions& o) {
  Paths p(o.name);
  if (!o.name.empty() && !ValidSiteName(o.name)) Die("--name: not a site name: " + o.name);
  if (!o.slots && !o.start_delay) Die("give --slots and/or --start-delay");
  if (auto st = MakeDirs(p.site, 0700); !st) Die(st.error());
  WriteLimits(p, o);
  std::printf("%s: %s", p.limits.c_str(), ReadFile(p.limits).value_or("").c_str());
}

}  // namespace

void RegisterTestgridCommands(CLI::App& app) {
  auto* tg = app.add_subcommand("testgrid", "the embedded test grid: a gatekeeper on loopback");
  tg->require_subcommand(1);
  static UpOptions options;
  auto* up = tg->add_subcommand("up", "make certificates if needed and start a kite-gatekeeper");
  up->add_option("--name", options.name,
                 "a named site of its own (its own gatekeeper, port and grid-mapfile under "
                 "$KITE_HOME/testgrid/sites/NAME); several may run at once");
  auto add_limits = [](CLI::App* cmd) {
    cmd->add_option_function<int64_t>(
        "--slots", [](int64_t n) { options.slots = n; },
        "test aid (fork): jobs the site runs at once, the rest wait (0: drained, none starts; "
        "-1: no limit)");
    cmd->add_option_function<double>(
        "--start-delay", [](double s) { options.start_delay = s; },
        "test aid (fork): seconds each job waits at the site before it may start");
  };
  add_limits(up);
  up->add_option("--port", options.port,
                 "the loopback port to listen on (default: any free one); the same port again "
                 "after `down` brings a site back where its users know it")
      ->check(CLI::Range(0, 65535));
  up->add_option("--site-attributes", options.site_attributes,
                 "file of 'Name = expression' lines the site adds to its info ad")
      ->check(CLI::ExistingFile);
  auto* batch = up->add_option("--batch", options.batch,
                               "batch system behind the gatekeeper: fork (run jobs on this "
                               "machine), slurm (sbatch to the cluster that PATH and "
                               "SLURM_CONF point to) or sge (qsub to the Grid Engine cell of "
                               "SGE_ROOT and SGE_CELL); kite-gatekeeper refuses names it does "
                               "not know")
                    ->capture_default_str();
  up->add_option("--batch-poll-interval", options.batch_poll_interval,
                 "seconds between the job managers' questions to the batch system (slurm: one "
                 "squeue for all jobs)")
      ->capture_default_str();
  up->callback([batch] {
    options.batch_given = batch->count() > 0;
    Up(options);
  });
  static std::string name;
  auto* status =
      tg->add_subcommand("status", "say whether the test grid's sites run (exit 3 when none does)");
  status->add_option("--name", name, "only this named site");
  status->callback([] { Status(name); });
  auto* down =
      tg->add_subcommand("down", "stop the sites' gatekeepers and the job managers they started");
  down->add_option("--name", name, "only this named site");
  down->callback([] { Down(name); });
  auto* limits = tg->add_subcommand(
      "limits", "change a fork site's test limits while it runs (e.g. --slots 0 drains it)");
  limits->add_option("--name", options.name, "the named site (default: the unnamed one)");
  add_limits(limits);
  limits->callback([] { Limits(options); });
}

}  // namespace kite::cli
