// Working out a grid job's description and GASS files from its ad.
#include "gridmanager/grid_job.h"

#include <charconv>
#include <cmath>
#include <set>

#include "common/files.h"
#include "common/strings.h"
#include "grid/brokered.h"
#include "grid/grid_type.h"
#include "submit/quoting.h"

namespace kite::gridmanager {
namespace {

Error Bad(std::string_view attr, const std::string& problem) {
  return Error(ErrorCode::kInvalidInput, std::string(attr) + ": " + problem);
}

std::string BaseName(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// The job's path for a file attribute, or "" when unset or /dev/null.
std::string FileAttr(const classad::ClassAd& ad, std::string_view attr, const std::string& iwd) {
  auto v = ad.EvaluateString(attr);
  if (!v || v->empty() || *v == "/dev/null") return "";
  return JoinPath(iwd, *v);
}

// A whole number the batch system gets from attribute `attr`, in `unit`s; 0 when the attribute is
// absent. Reals are rounded up (a request is a minimum). Anything that does not evaluate to a
// number from 0 to `max` (an expression of attributes only a matchmaker knows, a string) is an
// error naming the attribute and its text.
Result<int64_t> RequestCount(const classad::ClassAd& ad, std::string_view attr, int64_t max,
                             std::string_view unit) {
  const classad::Expr* e = ad.Lookup(attr);
  if (e == nullptr) return 0;
  classad::Value v = ad.Evaluate(attr);
  if (!v.IsNumber() || std::isnan(v.AsNumber())) {
    return Fail(Bad(attr, "'" + classad::Unparse(*e) + "' is not a number of " + std::string(unit) +
                              " (it evaluates to " + v.ToString() + ")"));
  }
  double n = v.IsInteger() ? static_cast<double>(v.AsInteger()) : std::ceil(v.AsReal());
  if (n < 0 || n > static_cast<double>(max)) {
    return Fail(Bad(attr, v.ToString() + " " + std::string(unit) + " is out of range (0 to " +
                              std::to_string(max) + ")"));
  }
  return static_cast<int64_t>(n);
}

// A queue or project name for the batch system from attribute `attr`; "" when absent.
Result<std::string> RequestName(const classad::ClassAd& ad, std::string_view attr) {
  const classad::Expr* e = ad.Lookup(attr);
  if (e == nullptr) return std::string();
  classad::Value v = ad.Evaluate(attr);
  if (!v.IsString()) {
    return Fail(Bad(attr, "'" + classad::Unparse(*e) + "' is not a string"));
  }
  std::string name(v.AsString());
  if (!gram::ValidBatchName(name)) {
    return Fail(
        Bad(attr, "'" + name + "' is not a batch system name (1 to 64 of A-Z a-z 0-9 _ . + -)"));
  }
  return name;
}

// RequestCpus, RequestMemory (MB), MaxWallTime (minutes, as HTCondor-CE's maxWallTime; else
// HTCondor's BatchRuntime, seconds), BatchQueue and BatchProject.
Result<gram::ResourceRequest> PlanResources(const classad::ClassAd& ad) {
  gram::ResourceRequest r;
  auto cpus = RequestCount(ad, "RequestCpus", gram::kMaxRequestCpus, "CPUs");
  if (!cpus) return Fail(cpus.error());
  auto memory = RequestCount(ad, "RequestMemory", gram::kMaxRequestMemoryMb, "MB");
  if (!memory) return Fail(memory.error());
  bool minutes = ad.Lookup("MaxWallTime") != nullptr;
  auto wall = minutes ? RequestCount(ad, "MaxWallTime", gram::kMaxRequestWalltimeS / 60, "minutes")
                      : RequestCount(ad, "BatchRuntime", gram::kMaxRequestWalltimeS, "seconds");
  if (!wall) return Fail(wall.error());
  if (minutes) *wall *= 60;
  auto queue = RequestName(ad, "BatchQueue");
  if (!queue) return Fail(queue.error());
  auto project = RequestName(ad, "BatchProject");
  if (!project) return Fail(project.error());
  r.cpus = *cpus;
  r.memory_mb = *memory;
  r.walltime_s = *wall;
  r.queue = std::move(*queue);
  r.project = std::move(*project);
  return r;
}

// transfer_output_files as names in the job's directory at the site, each with where it goes here,
// as condor_submit reads them: a file or folder by its base name under Iwd; a name ending in '/'
// (a folder's contents) into Iwd itself; or where transfer_output_remaps ("name = path; ...", the
// name as listed or its base name) puts it (a relative path is under Iwd). A folder's name keeps
// its '/' in the plan.
Result<std::vector<std::pair<std::string, std::string>>> PlanResults(const std::string& list,
                                                                     const std::string& remaps,
                                                                     const std::string& iwd,
                                                                     const grid::GridType& type) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen, names;
  for (const auto& name : Split(list, ',')) {
    bool contents = name.ends_with('/');
    std::string bare = contents ? name.substr(0, name.size() - 1) : name;
    bool bad = bare.starts_with('/') || bare.find("://") != std::string::npos ||
               !gram::ValidRelativeName(bare);
    if (bad) {
      return Fail(Bad("TransferOutput", "'" + name +
                                            "' is not the name of a file or folder in the job's "
                                            "directory at the site (URLs are not fetched)"));
    }
    if (contents && !type.caps.output_folders) {
      return Fail(Bad("TransferOutput",
                      "a " + type.display + " sends back files, not folders ('" + name + "')"));
    }
    if (!names.insert(bare).second) {
      return Fail(Bad("TransferOutput", "'" + bare + "' is listed twice"));
    }
    std::string local = contents ? "" : BaseName(bare);
    for (const auto& item : Split(remaps, ';')) {
      auto eq = item.find('=');
      if (eq == std::string::npos) continue;
      std::string key(Trim(std::string_view(item).substr(0, eq)));
      if (key == name || key == bare || key == BaseName(bare)) {
        local = std::string(Trim(item.substr(eq + 1)));
      }
    }
    std::string path = local.empty() ? iwd : JoinPath(iwd, local);
    // Several folders' contents may come into one place, as in HTCondor; files may not.
    if (!(contents && local.empty()) && !seen.insert(path).second) {
      return Fail(Bad("TransferOutput", "two output files would be written to " + path));
    }
    out.emplace_back(name, std::move(path));
  }
  return out;
}

}  // namespace

Result<GridJobPlan> PlanGridJob(const classad::ClassAd& ad) {
  GridJobPlan p;
  if (!ad.Lookup("GridResource")) return Fail(Bad("GridResource", "missing"));
  // A brokered job's site is the one the broker chose: its values are the job's MATCH_ attributes.
  auto resource = grid::JobGridResource(ad);
  if (!resource) return Fail(resource.error());
  auto r = ParseGridResource(*resource);
  if (!r) return Fail(r.error());
  p.resource = std::move(*r);
  p.proxy = ad.EvaluateString("x509userproxy").value_or("");
  if (p.proxy.empty()) return Fail(Bad("x509userproxy", "missing"));

  std::string iwd = ad.EvaluateString("Iwd").value_or("/");
  auto cmd = ad.EvaluateString("Cmd");
  if (!cmd || cmd->empty()) return Fail(Bad("Cmd", "missing"));
  if (ad.EvaluateBool("TransferExecutable").value_or(true)) {
    p.readable.push_back({"executable", JoinPath(iwd, *cmd)});
    p.desc.executable.gass = "executable";
  } else {
    if (!cmd->starts_with('/')) {
      return Fail(Bad("Cmd",
                      "an executable that is not transferred must be an absolute path at "
                      "the site, not '" +
                          *cmd + "'"));
    }
    p.desc.executable.site = *cmd;
  }

  if (auto a = ad.EvaluateString("Arguments")) {
    auto args = submit::SplitArgumentsV2(*a);
    if (!args) return Fail(args.error().Wrap("Arguments"));
    p.desc.arguments = std::move(*args);
  } else if (auto old = ad.EvaluateString("Args")) {
    p.desc.arguments = submit::SplitArgumentsV1Raw(*old);  // condor_submit's V1 raw form
  }
  if (auto e = ad.EvaluateString("Environment")) {
    auto env = submit::SplitEnvironmentV2(*e);
    if (!env) return Fail(env.error().Wrap("Environment"));
    p.desc.environment = std::move(*env);
  } else if (auto old = ad.EvaluateString("Env")) {
    auto env = submit::SplitEnvironment(*old);
    if (!env) return Fail(env.error().Wrap("Env"));
    p.desc.environment = std::move(*env);
  }

  if (auto in = FileAttr(ad, "In", iwd); !in.empty()) {
    p.readable.push_back({"stdin", in});
    p.desc.stdin_file.gass = "stdin";
  }
  std::string out = FileAttr(ad, "Out", iwd), err = FileAttr(ad, "Err", iwd);
  if (!out.empty()) {
    p.writable.push_back({"stdout", out});
    p.desc.stdout_file.gass = "stdout";
    p.desc.stream_output = ad.EvaluateBool("StreamOut").value_or(false);
  }
  if (!err.empty()) {
    if (err == out) {
      return Fail(Bad("Err", "a grid job's output and error must go to different files (both are " +
                                 out + ")"));
    }
    p.writable.push_back({"stderr", err});
    p.desc.stderr_file.gass = "stderr";
    p.desc.stream_error = ad.EvaluateBool("StreamErr").value_or(false);
  }

  // HTCondor's name; jobs queued before Kite used it carry TransferInputFiles.
  const char* inputs = ad.Lookup("TransferInput") ? "TransferInput" : "TransferInputFiles";
  if (auto list = ad.EvaluateString(inputs)) {
    std::set<std::string> seen;
    for (const auto& raw : Split(*list, ',')) {
      std::string f(Trim(raw));
      if (f.empty()) continue;
      if (f.find("://") != std::string::npos) {
        return Fail(Bad(inputs, "URLs are not supported for grid jobs: " + f));
      }
      std::string as = BaseName(f);
      if (as.empty() || as == "." || as == ".." || !seen.insert(as).second) {
        return Fail(
            Bad(inputs, "every file needs a distinct name at the site; '" + f + "' clashes"));
      }
      std::string name = "input/" + as;
      if (!gram::ValidRelativeName(name)) {
        return Fail(Bad(inputs, "cannot send a file named '" + as + "'"));
      }
      p.readable.push_back({name, JoinPath(iwd, f)});
      p.desc.stage_in.push_back({name, as});
    }
  }
  if (auto outputs = ad.EvaluateString("TransferOutput"); outputs && !Trim(*outputs).empty()) {
    const grid::GridType* type = grid::FindGridType(p.resource.type);
    if (type == nullptr || !type->caps.output_files) {
      return Fail(Bad("TransferOutput", "a " + (type ? type->display : p.resource.type) +
                                            " does not send back transfer_output_files"));
    }
    auto results =
        PlanResults(*outputs, ad.EvaluateString("TransferOutputRemaps").value_or(""), iwd, *type);
    if (!results) return Fail(results.error());
    p.results = std::move(*results);
    if (type->caps.output_files_by_gass) {
      for (const auto& [name, path] : p.results) {
        // Each may turn out to be a folder at the site: what is beneath its name is writable too.
        bool folder = name.ends_with('/');
        std::string bare = folder ? name.substr(0, name.size() - 1) : name;
        std::string gass_name = "output/" + bare;
        p.writable.push_back({gass_name, path, true});
        p.desc.stage_out.push_back({gass_name, bare, folder});
      }
    }
  }
  auto resources = PlanResources(ad);
  if (!resources) return Fail(resources.error());
  p.desc.resources = std::move(*resources);
  return p;
}

std::string RequestIdBase(const classad::ClassAd& ad, int attempt) {
  int64_t qdate = ad.EvaluateInt("QDate").value_or(0);
  int64_t cluster = ad.EvaluateInt("ClusterId").value_or(0);
  int64_t proc = ad.EvaluateInt("ProcId").value_or(0);
  return "kite-" + std::to_string(qdate) + "-" + std::to_string(cluster) + "." +
         std::to_string(proc) + "-" + std::to_string(attempt);
}

}  // namespace kite::gridmanager
