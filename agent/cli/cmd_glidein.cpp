// `kite glidein submit|q|rm`: glide-ins, the grid jobs whose program starts a kite-startd that
// dials back to this user's agent and offers slots for vanilla jobs (docs/pool.md, "Glide-ins").
//
//   kite glidein submit --resource "kite HOST:PORT/BATCH" [--count N] [--cpus N] [--memory MiB]
//                       [--lifetime DUR] [--idle-timeout DUR] [--start EXPR] [--suspend EXPR]
//                       [--continue EXPR] [--preempt EXPR] [--kill EXPR]
//                       [--max-job-retirement-time EXPR] [--periodic-checkpoint EXPR]
//                       [--proxy FILE]
//                       [--agent HOST:PORT]
//   kite glidein q
//   kite glidein rm ID... | -all
#include <openssl/evp.h>
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/cli/commands.h"
#include "agent/cli/submit_client.h"
#include "agent/cli/util.h"
#include "classad/io.h"
#include "client/agent_client.h"
#include "common/files.h"
#include "common/paths.h"
#include "common/strings.h"
#include "credentials/proxy.h"
#include "glidein/glidein_job.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

constexpr const char* kIsGlidein = "KiteGlidein =?= true";

struct SubmitArgs {
  glidein::GlideinRequest request;
  std::string lifetime = "2h", idle_timeout = "10m";
  std::string proxy, agent;
};

struct FloodArgs {
  std::string constraint = "true";
  int max = 0;
  bool stop = false, status = false;
  SubmitArgs shape;
};

struct RmArgs {
  std::vector<std::string> ids;
  bool all = false;
};

double SecondsOrDie(const std::string& flag, const std::string& text) {
  auto s = glidein::ParseSeconds(text);
  if (!s) Die(flag + ": " + s.error().message());
  return *s;
}

// The SHA-256 of a file's bytes, as lowercase hex.
Result<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FailErrno("cannot read " + path);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return Fail(ErrorCode::kInternal, "SHA-256 is not available from OpenSSL");
  }
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return FailErrno("cannot read " + path);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  std::string hex;
  char two[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(two, sizeof two, "%02x", md[i]);
    hex += two;
  }
  return hex;
}

// Where glide-ins dial: --agent, else where the agent's TLS pool listener is (the agent is asked to
// look at its proxy again first, so a proxy made a moment ago counts); when it is not listening,
// why not. Without an agent, what it wrote when its listener last came up.
std::string AgentAddressOrDie(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (auto c = AgentClient::Connect(KiteHome())) {
    auto v = AskPoolListener(**c, /*recheck=*/true);
    if (!v) Die("cannot ask the agent where glide-ins dial: " + v.error().message());
    if (v->listening && !v->address.empty()) return v->address;
    Die("glide-ins cannot join this agent's pool: " + v->problem + " (or give --agent HOST:PORT)");
  }
  std::string file = KiteHome() + "/pool.address";
  auto text = ReadFile(file);
  if (!text) {
    Die("no address for glide-ins to dial: the agent is not running and " + file +
        " is missing (the agent writes it when its pool listener for remote startds is up; "
        "see [pool] in docs/config.md), or give --agent HOST:PORT");
  }
  std::string address(Trim(*text));
  if (address.empty()) Die(file + " is empty: give --agent HOST:PORT");
  return address;
}

// The user's identity from the proxy the glide-ins will be given; a proxy that has run out is
// refused here rather than by the site.
std::string IdentityOrDie(const std::string& proxy) {
  auto cred = credentials::LoadProxyFile(proxy);
  if (!cred) Die(cred.error().Wrap("the proxy for the glide-ins"));
  auto info = credentials::DescribeCredential(cred->chain);
  if (info.time_left.count() <= 0) Die("the proxy " + proxy + " has expired: kite proxy init");
  return info.identity;
}

std::string ProgramOrDie(const std::string& name) {
  std::string path = ProgramPath(name);
  if (!FileExists(path)) Die(name + " is not where Kite's programs are (" + path + ")");
  return path;
}

// The desktop's side of every glide-in: where to dial, as whom, and Kite's programs.
glidein::GlideinSetting SettingOrDie(const SubmitArgs& a) {
  glidein::GlideinSetting s;
  s.agent = AgentAddressOrDie(a.agent);
  s.proxy = a.proxy.empty() ? DefaultProxyPath() : a.proxy;
  s.proxy = std::filesystem::absolute(s.proxy).lexically_normal().string();
  s.agent_identity = IdentityOrDie(s.proxy);
  s.bootstrap = ProgramOrDie("kite-glidein-bootstrap");
  s.startd = ProgramOrDie("kite-startd");
  s.starter = ProgramOrDie("kite-starter");
  s.exec = ProgramOrDie("kite-exec");
  s.rsc_lib = ProgramOrDie("libkite_rsc.so");  // remote I/O (want_remote_io) in the glide-in
  s.rsc_fuse = ProgramOrDie("kite-rsc-fuse");  // the same, through the kernel where it can be
  for (auto [path, out] : {std::pair{&s.startd, &s.startd_sha256},
                           {&s.starter, &s.starter_sha256},
                           {&s.exec, &s.exec_sha256},
                           {&s.rsc_lib, &s.rsc_lib_sha256},
                           {&s.rsc_fuse, &s.rsc_fuse_sha256}}) {
    auto hex = FileSha256(*path);
    if (!hex) Die(hex.error());
    *out = *hex;
  }
  s.output_dir = KiteHome() + "/glidein";
  if (auto st = MakeDirs(s.output_dir, 0700); !st) Die(st.error());
  return s;
}

glidein::GlideinRequest RequestOrDie(const SubmitArgs& a) {
  glidein::GlideinRequest r = a.request;
  r.lifetime = SecondsOrDie("--lifetime", a.lifetime);
  r.idle_timeout = SecondsOrDie("--idle-timeout", a.idle_timeout);
  return r;
}

void Submit(const SubmitArgs& a) {
  glidein::GlideinRequest r = RequestOrDie(a);
  glidein::GlideinSetting s = SettingOrDie(a);
  auto client = ConnectOrDie();
  SubmittedCluster done =
      SubmitClusterOrDie(*client, [&](int cluster) -> Result<submit::ParsedCluster> {
        auto text = glidein::GlideinSubmitText(r, s, cluster);
        if (!text) return Fail(text.error());
        // Each glide-in's pool credential, written by the agent (the only holder of the key)
        // where the submit text names it.
        auto issued = client->PostJson(
            "/v1/pool/credential",
            {{"glideins",
              json::object{{"cluster", cluster},
                           {"count", r.count},
                           {"slots", r.cpus},
                           {"lifetime", static_cast<int64_t>(std::ceil(r.lifetime))}}}});
        if (!issued) return Fail(issued.error().Wrap("the glide-ins' pool credentials"));
        submit::SubmitOptions options;
        options.cluster_id = cluster;
        return submit::ParseSubmitText(*text, "<kite glidein submit>", options);
      });
  std::printf("%zu glide-in(s) submitted to cluster %d.\n", done.jobs, done.cluster);
}

void FloodCommand(const FloodArgs& a) {
  json::object body;
  if (a.stop) {
    body["stop"] = true;
  } else if (!a.status) {
    if (a.max <= 0) Die("--max: say how many glide-ins may be pending or running at once");
    glidein::FloodRequest f;
    f.constraint = a.constraint;
    f.max = a.max;
    f.request = RequestOrDie(a.shape);
    f.setting = SettingOrDie(a.shape);
    body["request"] = json::parse(glidein::FloodToJson(f));
  }
  auto client = ConnectOrDie();
  auto r = client->Post("/v1/glidein/flood", body);
  if (!r) Die(r.error());
  if (r->status != 200) Die(AgentError(*r));
  auto v = json::parse(r->body);
  std::printf("%s", std::string(v.at("status").as_string()).c_str());
}

Result<std::vector<classad::ClassAd>> QueryAds(AgentClient& client, const json::array& ids,
                                               const std::string& constraint) {
  json::object body;
  body["ids"] = ids;
  body["constraint"] = constraint;
  body["format"] = "json";
  auto r = client.Post("/v1/query", body);
  if (!r) return Fail(r.error());
  if (r->status != 200) return Fail(ErrorCode::kInvalidInput, AgentError(*r));
  return classad::ParseJsonAds(r->body);
}

void Query() {
  auto client = ConnectOrDie();
  auto jobs = QueryAds(*client, {}, kIsGlidein);
  if (!jobs) Die(jobs.error());
  // The slots are extra: without them the glide-ins are still listed.
  std::vector<classad::ClassAd> slots;
  bool known = false;
  auto r = client->Post("/v1/status", {{"constraint", "GlideinResource =!= undefined"}});
  if (r && r->status == 200) {
    if (auto ads = classad::ParseJsonAds(r->body)) {
      slots = std::move(*ads);
      known = true;
    }
  }
  std::string out = glidein::FormatGlideinTable(*jobs, slots, known);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

// Removes glide-ins only: every id must name glide-in jobs, or nothing is removed.
void Remove(const RmArgs& a) {
  if (a.all == !a.ids.empty()) Die("name the glide-ins: job ids (C or C.P), or -all");
  json::array ids = IdsJson(a.ids);
  auto client = ConnectOrDie();
  if (!a.all) {
    auto ads = QueryAds(*client, ids, "");
    if (!ads) Die(ads.error());
    for (const auto& id : a.ids) {
      auto sel = Split(id, '.');
      long cluster = std::stol(sel[0]);
      long proc = sel.size() > 1 ? std::stol(sel[1]) : -1;
      bool any = false;
      for (const auto& ad : *ads) {
        if (ad.EvaluateInt("ClusterId").value_or(-1) != cluster) continue;
        if (proc >= 0 && ad.EvaluateInt("ProcId").value_or(-1) != proc) continue;
        any = true;
        if (!ad.EvaluateBool("KiteGlidein").value_or(false)) {
          Die("job " + std::to_string(cluster) + "." +
              std::to_string(ad.EvaluateInt("ProcId").value_or(0)) +
              " is not a glide-in: kite glidein rm removes only glide-ins (kite rm removes any "
              "job); nothing was removed");
        }
      }
      if (!any) Die("no glide-in " + id + " in the queue; nothing was removed");
    }
  }
  json::object body;
  body["action"] = "rm";
  body["ids"] = ids;
  body["constraint"] = kIsGlidein;  // also when a job changed between the look and the act
  body["reason"] = "via kite glidein rm";
  auto r = client->PostJson("/v1/act", body);
  if (!r) Die(r.error());
  auto& errors = r->at("errors").as_array();
  for (auto& e : errors) std::fprintf(stderr, "kite: %s\n", e.as_string().c_str());
  std::printf("%lld glide-in(s) removed.\n", static_cast<long long>(r->at("changed").as_int64()));
  if (!errors.empty()) throw CLI::RuntimeError(1);
}

}  // namespace

void RegisterGlideinCommands(CLI::App& app) {
  auto* g = app.add_subcommand(
      "glidein",
      "glide-ins: grid jobs that bring up a kite-startd at a site, whose slots join "
      "this agent's pool for vanilla jobs");
  g->require_subcommand(1);

  // The glide-ins' shape and where they dial: the same for submit and flood.
  auto shape = [](CLI::App* cmd, SubmitArgs& a) {
    cmd->add_option(
           "--cpus", a.request.cpus,
           "CPUs of each glide-in, asked of the batch system; one slot per CPU (default 1)")
        ->check(CLI::Range(1, 1024));
    cmd->add_option("--memory", a.request.memory_mib,
                    "MiB of each glide-in, asked of the batch system and split over its slots "
                    "(default: the node's memory, nothing asked)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--lifetime", a.lifetime,
                    "how long a glide-in offers its slots: 90s, 10m, 2h, or seconds; 0 = until "
                    "the batch system stops it (default 2h; the walltime asked is 5 min more)");
    cmd->add_option("--idle-timeout", a.idle_timeout,
                    "a glide-in leaves after this long without a job; 0 = never (default 10m)");
    cmd->add_option("--start", a.request.start,
                    "the slots' START expression; TARGET is the job (default true)");
    cmd->add_option("--suspend", a.request.policy.suspend,
                    "SUSPEND: while true, a running job is stopped (default false)");
    cmd->add_option("--continue", a.request.policy.cont,
                    "CONTINUE: when true, a suspended job goes on (default true)");
    cmd->add_option(
        "--preempt", a.request.policy.preempt,
        "PREEMPT: when true, the job is vacated and runs again elsewhere (default false)");
    cmd->add_option("--kill", a.request.policy.kill,
                    "KILL: when true while a job is vacated, it is killed at once (default false)");
    cmd->add_option("--max-job-retirement-time", a.request.policy.retirement,
                    "seconds a preempted job may still run to its end (default 0)");
    cmd->add_option("--periodic-checkpoint", a.request.policy.periodic_checkpoint,
                    "PERIODIC_CHECKPOINT: when true, a job with transparent checkpoints takes one, "
                    "e.g. 'time() - LastPeriodicCheckpoint > 3600' (default false)");
    cmd->add_option("--proxy", a.proxy,
                    "the proxy the glide-ins run with and are trusted by (default: X509_USER_PROXY "
                    "or /tmp/x509up_u<uid>)");
    cmd->add_option("--agent", a.agent,
                    "HOST:PORT the glide-ins dial (default: where the agent's pool listener is; "
                    "when it is off, nothing is submitted and the reason is said)");
  };
  static SubmitArgs s;
  auto* sub = g->add_subcommand("submit", "submit glide-ins to a grid resource");
  sub->add_option("--resource", s.request.resource,
                  "the grid resource: \"kite HOST:PORT/BATCH\" (as grid_resource)")
      ->required();
  sub->add_option("--count", s.request.count, "glide-ins to submit (default 1)")
      ->check(CLI::Range(1, 10000));
  shape(sub, s);
  sub->callback([] { Submit(s); });

  static FloodArgs f;
  auto* fl = g->add_subcommand(
      "flood",
      "keep glide-ins pending at every [[resource]] site that can host them while idle vanilla "
      "jobs wait that no slot can take, more where Kite saw shorter waits; cancel the pending "
      "ones once enough have started (docs/broker.md)");
  fl->add_option("--for", f.constraint,
                 "the idle jobs to flood for: a ClassAd expression (default: every idle vanilla "
                 "job)");
  fl->add_option("--max", f.max, "glide-ins pending or running at once, at most")
      ->check(CLI::Range(1, 100000));
  fl->add_flag("--stop", f.stop, "stop flooding and cancel the pending glide-ins");
  fl->add_flag("--status", f.status, "say what flooding does now");
  shape(fl, f.shape);
  fl->callback([] { FloodCommand(f); });

  auto* q = g->add_subcommand("q", "list glide-in jobs and the slots each advertises");
  q->callback([] { Query(); });

  static RmArgs rm;
  auto* r = g->add_subcommand("rm", "remove glide-ins (cancelled at their sites); not other jobs");
  r->add_option("ids", rm.ids, "glide-in clusters C or jobs C.P");
  r->add_flag("--all", rm.all, "every glide-in");
  r->callback([] { Remove(rm); });
}

}  // namespace kite::cli
