// The Requirements expression condor_submit writes: the user's requirements in parentheses,
// then the clauses the job's own attributes call for (platform, disk, memory, CPUs, custom
// resources, encryption, file transfer and plugin methods, deferral, checkpoint transfer, CUDA),
// each left out when the user's expression already refers to what it checks. Grid jobs (but for
// HTCondor's condor type) get only the user's expression, or true.
#include <algorithm>

#include "classad/expr.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

bool IsUrl(std::string_view path) {
  return path.find("://") != std::string_view::npos;
}

// True unless `attr` is a literal number no greater than `limit` (condor_submit adds no clause
// for RequestCpus = 1 or RequestDisk = 0).
bool NeedsClause(JobContext& ctx, const char* attr, double limit) {
  const std::string* e = ctx.Emitted(attr);
  if (e == nullptr) return false;
  auto parsed = classad::ParseExpr(*e);
  if (!parsed || (*parsed)->kind() != classad::ExprKind::kLiteral) return true;
  auto v = EvalText(*e);
  return !v || !v->IsNumber() || v->AsNumber() > limit;
}

std::string Unquoted(JobContext& ctx, const char* attr) {
  const std::string* e = ctx.Emitted(attr);
  return e == nullptr ? "" : StringLiteral(*e).value_or("");
}

void Platform(JobContext& ctx, const std::set<std::string>& refs, std::string& answer) {
  static const char* kOpsys[] = {"opsys",          "opsysandver", "opsyslongname",
                                 "opsysshortname", "opsysname",   "opsyslegacy"};
  bool checks_opsys = std::any_of(std::begin(kOpsys), std::end(kOpsys),
                                  [&](const char* a) { return refs.count(a) != 0; });
  if (refs.count("arch") == 0) {
    answer +=
        (answer.empty() ? "" : " && ") + std::string("(TARGET.Arch == \"") + ctx.env().arch + "\")";
  }
  if (!checks_opsys) answer += " && (TARGET.OpSys == \"" + ctx.env().opsys + "\")";
}

void Resources(JobContext& ctx, const std::set<std::string>& refs, bool grid, std::string& answer) {
  if (ctx.Emitted("RequestDisk") != nullptr) {
    if (NeedsClause(ctx, "RequestDisk", 0) || refs.count("disk") != 0) {
      answer += " && (TARGET.Disk >= RequestDisk)";
    }
  } else if (refs.count("disk") == 0) {
    answer += " && (TARGET.Disk >= DiskUsage)";
  }
  if (NeedsClause(ctx, "RequestMemory", 1)) answer += " && (TARGET.Memory >= RequestMemory)";
  if (!grid && refs.count("cpus") == 0 && NeedsClause(ctx, "RequestCpus", 1)) {
    answer += " && (TARGET.Cpus >= RequestCpus)";
  }
}

// Request<Tag> attributes beyond cpus, memory and disk (GPUs and custom resources).
void CustomResources(JobContext& ctx, const std::set<std::string>& refs, std::string& answer,
                     const std::vector<std::string>& names) {
  for (const auto& name : names) {
    std::string tag = name.substr(7);
    if (refs.count(ToLower(tag)) != 0) continue;
    const std::string* e = ctx.Emitted(name);
    auto v = EvalText(*e);
    if (v && v->IsString()) {
      if (!v->AsString().empty()) answer += " && regexp(" + name + ", TARGET." + tag + ")";
      continue;
    }
    if (v && v->IsNumber() && v->AsNumber() <= 0) continue;
    std::string require = "Require" + tag;
    if (ctx.Emitted(require) != nullptr) {
      answer +=
          " && (countMatches(MY." + require + ",TARGET.Available" + tag + ") >= " + name + ")";
    } else {
      answer += " && (TARGET." + tag + " >= " + name + ")";
    }
  }
}

// The URL schemes the job's files need plugins for (inputs, output destination, remaps).
std::vector<std::string> PluginMethods(JobContext& ctx) {
  std::vector<std::string> methods;
  auto add = [&](std::string_view url) {
    url = Trim(url);
    if (!IsUrl(url)) return;
    std::string scheme(url.substr(0, url.find("://")));
    bool seen = std::any_of(methods.begin(), methods.end(),
                            [&](const std::string& m) { return EqualsIgnoreCase(m, scheme); });
    if (!seen) methods.push_back(scheme);
  };
  for (const auto& f : Split(Unquoted(ctx, "TransferInput"), ',')) add(f);
  add(Unquoted(ctx, "OutputDestination"));
  for (const auto& remap : Split(Unquoted(ctx, "TransferOutputRemaps"), ';')) {
    if (auto eq = remap.find('='); eq != std::string::npos) add(remap.substr(eq + 1));
  }
  std::sort(methods.begin(), methods.end(),
            [](const std::string& a, const std::string& b) { return ToLower(a) < ToLower(b); });
  return methods;
}

void FileTransfer(JobContext& ctx, const std::set<std::string>& refs, std::string& answer) {
  const char* domain = "(TARGET.FileSystemDomain == MY.FileSystemDomain)";
  std::string should = Unquoted(ctx, "ShouldTransferFiles");
  bool checks_fsdomain = refs.count("filesystemdomain") != 0;
  if (should == "NO") {
    if (!checks_fsdomain) answer += std::string(" && ") + domain;
    return;
  }
  if (refs.count("hasfiletransfer") != 0 || refs.count("hasjobtransferplugins") != 0) return;
  std::string join = " && (", close = ")";
  if (should != "YES" && !checks_fsdomain) {
    answer += std::string(" && (") + domain;
    join = " || (", close = "))";
  }
  bool job_plugins = !Unquoted(ctx, "TransferPlugins").empty();
  answer += join + (job_plugins ? "TARGET.HasJobTransferPlugins" : "TARGET.HasFileTransfer");
  static const char* kCrypt[] = {"EncryptInputFiles", "EncryptOutputFiles", "DontEncryptInputFiles",
                                 "DontEncryptOutputFiles"};
  if (refs.count("hasperfileencryption") == 0 &&
      std::any_of(std::begin(kCrypt), std::end(kCrypt),
                  [&](const char* a) { return ctx.Emitted(a) != nullptr; })) {
    answer += " && TARGET.HasPerFileEncryption";
  }
  const std::string* relative = ctx.Emitted("PreserveRelativePaths");
  if (ctx.Emitted("TransferCheckpoint") != nullptr ||
      (relative != nullptr && *relative == "true") ||
      Unquoted(ctx, "WhenToTransferOutput") == "ON_SUCCESS") {
    answer += " && versioncmp( split(TARGET.CondorVersion)[1], \"8.9.7\" ) >= 0";
  }
  std::string want;
  for (const auto& m : PluginMethods(ctx)) {
    want += (want.empty() ? "" : ",") + m;
    if (refs.count("hasfiletransferpluginmethods") == 0) {
      answer += " && stringListIMember(\"" + m + "\",TARGET.HasFileTransferPluginMethods)";
    }
  }
  if (!want.empty()) ctx.Emit("WantTransferPluginMethods", Quoted(want));
  answer += close;
}

// Deferral (deferral_time or cron_*), checkpoint transfers and the CUDA version.
Status Extras(JobContext& ctx, int universe, std::string& answer) {
  if (ctx.Emitted("DeferralPrepTime") != nullptr) {
    if (universe != kLocalUniverse) answer += " && TARGET.HasJobDeferral";
    answer +=
        " && (((time() + ScheddInterval) >= (DeferralTime - DeferralPrepTime)) && "
        "(time() < (DeferralTime + DeferralWindow)))";
  }
  const std::string* ft = ctx.Emitted("WantFTOnCheckpoint");
  if (ft != nullptr && *ft == "true") answer += " && TARGET.HasSelfCheckpointTransfers";
  auto cuda = ctx.Get("cuda_version");
  if (!cuda) return Fail(cuda.error());
  if (*cuda) {
    long long major = 0, minor = 0;
    char dot = 0;
    int read = 0;
    int n = std::sscanf((*cuda)->c_str(), "%lld%c%lld%n", &major, &dot, &minor, &read);
    bool two = n == 3 && dot == '.' && read == static_cast<int>((*cuda)->size());
    auto whole = EvalInteger(**cuda);
    if (!two &&
        !(whole && *whole > 0 && (*cuda)->find_first_not_of("0123456789") == std::string::npos)) {
      return Fail(ctx.ErrorAt("cuda_version",
                              "cuda_version must be of the form 'x' or 'x.y', "
                              "not '" +
                                  **cuda + "'"));
    }
    long long v = two ? major * 1000 + minor % 100 : (*whole < 1000 ? *whole * 1000 : *whole);
    ctx.Emit("CUDAVersion", std::to_string(v));
    answer += "&& CUDAVersion <= TARGET.CUDAMaxSupportedVersion";
  }
  return {};
}

// Names of the Request<Tag> attributes emitted for this proc, beyond cpus, memory and disk.
std::vector<std::string> RequestTags(JobContext& ctx) {
  std::vector<std::string> names;
  for (const char* fixed : {"RequestGPUs"}) {
    if (ctx.Emitted(fixed) != nullptr) names.push_back(fixed);
  }
  for (const auto& [key, line] : ctx.DefinedWithPrefix("request_")) {
    (void)line;
    std::string res = ctx.env().table->Find(key)->name.substr(8);
    std::string attr = "Request" + res;
    if (res.size() < 2 || res[0] == '_' || ctx.Emitted(attr) == nullptr) continue;
    static const char* kSkip[] = {"cpus", "memory", "disk", "gpus"};
    if (std::find(std::begin(kSkip), std::end(kSkip), ToLower(res)) != std::end(kSkip)) continue;
    names.push_back(attr);
  }
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return ToLower(a) < ToLower(b); });
  return names;
}

}  // namespace

Status EmitRequirements(JobContext& ctx) {
  auto req = ctx.Get("requirements");
  if (!req) return Fail(req.error());
  std::string answer;
  if (*req) {
    auto parsed = classad::ParseExpr(**req);
    if (!parsed) {
      return Fail(ctx.ErrorAt("requirements", "requirements: bad expression '" + **req +
                                                  "': " + parsed.error().message()));
    }
    answer = "(" + **req + ")";
  }
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  std::string grid_resource = Unquoted(ctx, "GridResource");
  bool condor_c = ToLower(grid_resource.substr(0, grid_resource.find(' '))) == "condor";
  if (*universe == kGridUniverse && !condor_c) {
    ctx.Emit("Requirements", answer.empty() ? "true" : answer);
    return {};
  }
  std::set<std::string> refs = *req ? ReferencedNames(**req) : std::set<std::string>{};
  Platform(ctx, refs, answer);
  Resources(ctx, refs, *universe == kGridUniverse, answer);
  CustomResources(ctx, refs, answer, RequestTags(ctx));
  const std::string* encrypt = ctx.Emitted("EncryptExecuteDirectory");
  if (encrypt != nullptr && *encrypt == "true" && refs.count("encryptexecutedirectory") == 0) {
    answer += " && TARGET.HasEncryptExecuteDirectory";
  }
  if (*universe == kVanillaUniverse) FileTransfer(ctx, refs, answer);
  if (auto st = Extras(ctx, *universe, answer); !st) return st;
  ctx.Emit("Requirements", answer);
  return {};
}

}  // namespace kite::submit
