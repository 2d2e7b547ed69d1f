// A glide-in's submit description, and `kite glidein q`'s table.
#include "glidein/glidein_job.h"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "classad/expr.h"
#include "common/strings.h"
#include "glidein/options.h"
#include "submit/quoting.h"

namespace kite::glidein {
namespace {

Error Invalid(const std::string& why) {
  return Error(ErrorCode::kInvalidInput, why);
}

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

bool IsSha256(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// A value as a submit file line takes it: "$" would start a macro, so it is written $(DOLLAR).
std::string Literal(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '$') {
      out += "$(DOLLAR)";
    } else {
      out += c;
    }
  }
  return out;
}

// `arguments = "..."` in the new syntax: the V2 raw form with each double quote doubled.
std::string ArgumentsValue(const std::vector<std::string>& args) {
  std::string raw = submit::JoinArgumentsV2(args);
  std::string out = "\"";
  for (char c : raw) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return Literal(out + "\"");
}

// Replaces the value of `flag` in a ToArgs list ("--flag value" pairs), or appends the pair.
void SetFlag(std::vector<std::string>& args, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == flag) {
      args[i + 1] = value;
      return;
    }
  }
  args.push_back(flag);
  args.push_back(value);
}

void DropFlag(std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == flag) {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      return;
    }
  }
}

Status CheckRequest(const GlideinRequest& r) {
  std::string_view res = Trim(r.resource);
  if (res.empty()) return Fail(Invalid("--resource is required: \"kite HOST:PORT/BATCH\""));
  if (HasControl(r.resource)) return Fail(Invalid("--resource must be one line of text"));
  // The owner's policy: each a one-line ClassAd expression, checked here rather than by a startd
  // failing at the site.
  for (const auto& [flag, text] : {std::pair{"--start", &r.start},
                                   {"--suspend", &r.policy.suspend},
                                   {"--continue", &r.policy.cont},
                                   {"--preempt", &r.policy.preempt},
                                   {"--kill", &r.policy.kill},
                                   {"--max-job-retirement-time", &r.policy.retirement},
                                   {"--periodic-checkpoint", &r.policy.periodic_checkpoint}}) {
    if (HasControl(*text)) return Fail(Invalid(std::string(flag) + " must be one line of text"));
    if (Trim(*text).empty()) return Fail(Invalid(std::string(flag) + " must not be empty"));
    if (auto e = classad::ParseExpr(*text); !e) {
      return Fail(Invalid(std::string(flag) + " '" + *text +
                          "' is not a ClassAd expression: " + e.error().message()));
    }
  }
  if (r.count < 1 || r.count > 10000) return Fail(Invalid("--count must be 1 to 10000"));
  if (r.cpus < 1 || r.cpus > 1024) return Fail(Invalid("--cpus must be 1 to 1024"));
  if (r.memory_mib < 0) return Fail(Invalid("--memory must not be negative"));
  for (double d : {r.lifetime, r.idle_timeout}) {
    if (!std::isfinite(d) || d < 0) {
      return Fail(Invalid("--lifetime and --idle-timeout must be durations of 0 or more"));
    }
  }
  return {};
}

Status CheckSetting(const GlideinSetting& s) {
  if (s.agent.empty() || s.agent.find(':') == std::string::npos || HasControl(s.agent) ||
      s.agent.find_first_of(" \t") != std::string::npos) {
    return Fail(Invalid("the agent's pool address '" + s.agent + "' is not HOST:PORT"));
  }
  if (s.agent_identity.empty() || HasControl(s.agent_identity)) {
    return Fail(Invalid("the user's identity (the subject of the proxy) is missing"));
  }
  for (const std::string* p :
       {&s.proxy, &s.bootstrap, &s.startd, &s.starter, &s.exec, &s.output_dir}) {
    if (p->empty() || p->front() != '/' || HasControl(*p)) {
      return Fail(Invalid("'" + *p + "' is not an absolute path"));
    }
  }
  if (!s.rsc_lib.empty() &&
      (s.rsc_lib.front() != '/' || HasControl(s.rsc_lib) || !IsSha256(s.rsc_lib_sha256))) {
    return Fail(Invalid("'" + s.rsc_lib + "' is not an absolute path with its SHA-256 digest"));
  }
  if (!s.rsc_fuse.empty() &&
      (s.rsc_fuse.front() != '/' || HasControl(s.rsc_fuse) || !IsSha256(s.rsc_fuse_sha256))) {
    return Fail(Invalid("'" + s.rsc_fuse + "' is not an absolute path with its SHA-256 digest"));
  }
  for (const std::string* p : {&s.startd, &s.starter, &s.exec, &s.rsc_lib, &s.rsc_fuse}) {
    if (p->find(',') != std::string::npos) {
      return Fail(Invalid("'" + *p + "' has a comma: transfer_input_files cannot name it"));
    }
  }
  if (!IsSha256(s.startd_sha256) || !IsSha256(s.starter_sha256) || !IsSha256(s.exec_sha256)) {
    return Fail(Invalid("a SHA-256 digest is not 64 lowercase hexadecimal digits"));
  }
  return {};
}

std::string BaseName(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

Result<double> ParseSeconds(std::string_view text) {
  auto bad = [&] {
    return Fail(Invalid("'" + std::string(text) +
                        "' is not a duration (give 90s, 10m, 2h, 1d, 1h30m, or seconds)"));
  };
  std::string_view s = Trim(text);
  if (s.empty()) return bad();
  double total = 0;
  while (!s.empty()) {
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data() || !std::isfinite(v) || v < 0) return bad();
    s.remove_prefix(static_cast<size_t>(p - s.data()));
    if (s.empty()) {
      if (total > 0) return bad();  // "1h30" is ambiguous
      return v;
    }
    double unit = s[0] == 's' ? 1 : s[0] == 'm' ? 60 : s[0] == 'h' ? 3600 : s[0] == 'd' ? 86400 : 0;
    if (unit == 0) return bad();
    s.remove_prefix(1);
    total += v * unit;
  }
  return total;
}

std::string GlideinStartdName(long cluster, long proc) {
  return "glidein-" + std::to_string(cluster) + "." + std::to_string(proc);
}

std::string GlideinCredentialName(long cluster, long proc) {
  return std::to_string(cluster) + "." + std::to_string(proc) + ".credential";
}

std::vector<std::string> BootstrapArguments(const GlideinRequest& r, const GlideinSetting& s,
                                            const std::string& startd_name,
                                            const std::string& credential) {
  StartdOptions o;
  o.agent = "tls:" + s.agent;
  o.name = startd_name;
  o.slots = r.cpus;
  o.cpus_per_slot = 1;
  o.memory_mib = r.memory_mib;
  o.lifetime = r.lifetime;
  o.idle_timeout = r.idle_timeout;
  o.start = r.start;
  o.policy = r.policy;
  o.resource = std::string(Trim(r.resource));
  o.credential = credential;
  std::vector<std::string> startd = o.ToArgs();
  DropFlag(startd, "--work");  // the bootstrap gives it: $PWD/execute at the site
  // The agent's identity, as --agent-identity of the startd's TLS dialling. Set on the list
  // rather than on StartdOptions so this holds whether or not ToArgs writes the flag itself.
  SetFlag(startd, "--agent-identity", s.agent_identity);
  std::vector<std::string> args = {"--sha256", BaseName(s.startd) + "=" + s.startd_sha256,
                                   "--sha256", BaseName(s.starter) + "=" + s.starter_sha256,
                                   "--sha256", BaseName(s.exec) + "=" + s.exec_sha256};
  if (!s.rsc_fuse.empty()) {
    args.push_back("--sha256");
    args.push_back(BaseName(s.rsc_fuse) + "=" + s.rsc_fuse_sha256);
  }
  if (!s.rsc_lib.empty()) {
    args.push_back("--lib");
    args.push_back(BaseName(s.rsc_lib) + "=" + s.rsc_lib_sha256);
  }
  args.push_back("--");
  args.insert(args.end(), startd.begin(), startd.end());
  return args;
}

Result<std::string> GlideinSubmitText(const GlideinRequest& r, const GlideinSetting& s,
                                      long cluster) {
  if (auto st = CheckRequest(r); !st) return Fail(st.error());
  if (auto st = CheckSetting(s); !st) return Fail(st.error());
  std::string resource(Trim(r.resource));
  std::string t = "# " + std::to_string(r.count) + " glide-in(s) written by kite glidein submit\n";
  t += "universe = grid\n";
  t += "grid_resource = " + Literal(resource) + "\n";
  t += "executable = " + Literal(s.bootstrap) + "\n";
  t += "x509userproxy = " + Literal(s.proxy) + "\n";
  t += "request_cpus = " + std::to_string(r.cpus) + "\n";
  if (r.memory_mib > 0) t += "request_memory = " + std::to_string(r.memory_mib) + "\n";
  if (r.lifetime > 0) {
    auto secs = static_cast<int64_t>(std::ceil(r.lifetime)) + kWalltimeMarginSeconds;
    t += "batch_runtime = " + std::to_string(secs) + "\n";
  }
  t += "+KiteGlidein = true\n";
  t += "+GlideinResource = " + Literal(submit::QuoteClassAdString(resource)) + "\n";
  std::string programs = Literal(s.startd) + "," + Literal(s.starter) + "," + Literal(s.exec) +
                         (s.rsc_fuse.empty() ? "" : "," + Literal(s.rsc_fuse)) +
                         (s.rsc_lib.empty() ? "" : "," + Literal(s.rsc_lib));
  for (long proc = 0; proc < r.count; ++proc) {
    std::string id = std::to_string(cluster) + "." + std::to_string(proc);
    std::string credential = GlideinCredentialName(cluster, proc);
    // Each glide-in takes its own pool credential along (agent/pool_authority.h).
    t += "\ntransfer_input_files = " + programs + "," + Literal(s.output_dir + "/" + credential) +
         "\n";
    t += "arguments = " +
         ArgumentsValue(BootstrapArguments(r, s, GlideinStartdName(cluster, proc), credential)) +
         "\n";
    t += "output = " + Literal(s.output_dir + "/" + id + ".out") + "\n";
    t += "error = " + Literal(s.output_dir + "/" + id + ".err") + "\n";
    t += "queue\n";
  }
  return t;
}

std::string FloodToJson(const FloodRequest& f) {
  const GlideinRequest& r = f.request;
  const GlideinSetting& s = f.setting;
  boost::json::object o{{"constraint", f.constraint},
                        {"max", f.max},
                        {"cpus", r.cpus},
                        {"memory_mib", r.memory_mib},
                        {"lifetime", r.lifetime},
                        {"idle_timeout", r.idle_timeout},
                        {"start", r.start},
                        {"suspend", r.policy.suspend},
                        {"continue", r.policy.cont},
                        {"preempt", r.policy.preempt},
                        {"kill", r.policy.kill},
                        {"retirement", r.policy.retirement},
                        {"periodic_checkpoint", r.policy.periodic_checkpoint},
                        {"agent", s.agent},
                        {"agent_identity", s.agent_identity},
                        {"proxy", s.proxy},
                        {"bootstrap", s.bootstrap},
                        {"startd", s.startd},
                        {"starter", s.starter},
                        {"exec", s.exec},
                        {"startd_sha256", s.startd_sha256},
                        {"starter_sha256", s.starter_sha256},
                        {"exec_sha256", s.exec_sha256},
                        {"rsc_lib", s.rsc_lib},
                        {"rsc_lib_sha256", s.rsc_lib_sha256},
                        {"rsc_fuse", s.rsc_fuse},
                        {"rsc_fuse_sha256", s.rsc_fuse_sha256},
                        {"output_dir", s.output_dir}};
  return boost::json::serialize(o);
}

Result<FloodRequest> FloodFromJson(std::string_view text) {
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) return Fail(ErrorCode::kInvalidInput, "flood: not a JSON object");
  const auto& o = v.as_object();
  FloodRequest f;
  auto str = [&](const char* key, std::string* out) -> Status {
    const auto* x = o.if_contains(key);
    if (!x || !x->is_string())
      return Fail(ErrorCode::kInvalidInput, std::string("flood: ") + key + " must be a string");
    *out = std::string(x->as_string());
    return {};
  };
  auto num = [&](const char* key, double* out) -> Status {
    const auto* x = o.if_contains(key);
    if (!x || !x->is_number())
      return Fail(ErrorCode::kInvalidInput, std::string("flood: ") + key + " must be a number");
    *out = x->to_number<double>();
    if (!std::isfinite(*out) || *out < 0)
      return Fail(ErrorCode::kInvalidInput, std::string("flood: ") + key + " out of range");
    return {};
  };
  GlideinRequest& r = f.request;
  GlideinSetting& s = f.setting;
  double max = 0, cpus = 0, memory = 0;
  for (auto [key, out] : std::initializer_list<std::pair<const char*, std::string*>>{
           {"constraint", &f.constraint},
           {"start", &r.start},
           {"suspend", &r.policy.suspend},
           {"continue", &r.policy.cont},
           {"preempt", &r.policy.preempt},
           {"kill", &r.policy.kill},
           {"retirement", &r.policy.retirement},
           {"periodic_checkpoint", &r.policy.periodic_checkpoint},
           {"agent", &s.agent},
           {"agent_identity", &s.agent_identity},
           {"proxy", &s.proxy},
           {"bootstrap", &s.bootstrap},
           {"startd", &s.startd},
           {"starter", &s.starter},
           {"exec", &s.exec},
           {"startd_sha256", &s.startd_sha256},
           {"starter_sha256", &s.starter_sha256},
           {"exec_sha256", &s.exec_sha256},
           {"rsc_lib", &s.rsc_lib},
           {"rsc_lib_sha256", &s.rsc_lib_sha256},
           {"output_dir", &s.output_dir}}) {
    if (auto st = str(key, out); !st) return Fail(st.error());
  }
  // Newer than the rest: a flood stored before it has none, and its glide-ins stage no server.
  if (o.contains("rsc_fuse") || o.contains("rsc_fuse_sha256")) {
    for (auto [key, out] :
         {std::pair{"rsc_fuse", &s.rsc_fuse}, std::pair{"rsc_fuse_sha256", &s.rsc_fuse_sha256}}) {
      if (auto st = str(key, out); !st) return Fail(st.error());
    }
  }
  for (auto [key, out] :
       std::initializer_list<std::pair<const char*, double*>>{{"max", &max},
                                                              {"cpus", &cpus},
                                                              {"memory_mib", &memory},
                                                              {"lifetime", &r.lifetime},
                                                              {"idle_timeout", &r.idle_timeout}}) {
    if (auto st = num(key, out); !st) return Fail(st.error());
  }
  if (max < 1 || max > 100000 || max != std::floor(max))
    return Fail(ErrorCode::kInvalidInput, "flood: max must be a whole number from 1 to 100000");
  if (cpus < 1 || cpus > 4096 || cpus != std::floor(cpus))
    return Fail(ErrorCode::kInvalidInput, "flood: cpus must be a whole number from 1 to 4096");
  if (memory > 1e12 || memory != std::floor(memory))
    return Fail(ErrorCode::kInvalidInput, "flood: memory_mib must be a whole number");
  f.max = static_cast<int>(max);
  r.cpus = static_cast<int>(cpus);
  r.memory_mib = static_cast<int64_t>(memory);
  if (f.constraint.empty()) f.constraint = "true";
  // What GlideinSubmitText would refuse is refused now, not at the first site.
  r.resource = "kite flood.invalid:1/fork";
  if (auto t = GlideinSubmitText(r, s, 1); !t) return Fail(t.error());
  r.resource.clear();
  return f;
}

std::string FormatGlideinTable(const std::vector<classad::ClassAd>& jobs,
                               const std::vector<classad::ClassAd>& slots, bool slots_known) {
  struct Count {
    int total = 0, busy = 0;
  };
  std::map<std::string, Count> by_startd;
  for (const auto& slot : slots) {
    Count& c = by_startd[slot.EvaluateString("StartdName").value_or("")];
    ++c.total;
    if (slot.EvaluateString("State").value_or("") == "Claimed") ++c.busy;
  }
  static const char* const kStatus[] = {"?",         "IDLE", "RUNNING",      "REMOVED",
                                        "COMPLETED", "HELD", "TRANSFERRING", "SUSPENDED"};
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, " %-10s %-14s %5s %5s  %s\n", "ID", "STATUS", "SLOTS", "BUSY",
                "RESOURCE");
  out += line;
  int total_slots = 0, total_busy = 0;
  for (const auto& job : jobs) {
    long cluster = static_cast<long>(job.EvaluateInt("ClusterId").value_or(0));
    long proc = static_cast<long>(job.EvaluateInt("ProcId").value_or(0));
    std::string status = job.EvaluateString("GridJobStatus").value_or("");
    if (status.empty()) {
      auto s = job.EvaluateInt("JobStatus").value_or(0);
      status = kStatus[s >= 1 && s <= 7 ? s : 0];
    }
    for (auto& ch : status) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::string resource = job.EvaluateString("GlideinResource").value_or("");
    std::string slot_col = "-", busy_col = "-";
    if (slots_known) {
      Count c = by_startd[GlideinStartdName(cluster, proc)];
      slot_col = std::to_string(c.total);
      busy_col = std::to_string(c.busy);
      total_slots += c.total;
      total_busy += c.busy;
    }
    std::snprintf(line, sizeof line, "%*ld.%-*ld %-14.14s %5s %5s  %s\n", 6, cluster, 3, proc,
                  status.c_str(), slot_col.c_str(), busy_col.c_str(), resource.c_str());
    out += line;
  }
  out += "\n" + std::to_string(jobs.size()) + " glide-in(s)";
  if (slots_known) {
    out += ", " + std::to_string(total_slots) + " slot(s), " + std::to_string(total_busy) + " busy";
  } else {
    out += "; their slots are not known (the agent did not answer kite status)";
  }
  out += "\n";
  return out;
}

}  // namespace kite::glidein
