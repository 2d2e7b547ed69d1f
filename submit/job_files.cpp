// Handlers that name files: initialdir, executable, input/output/error and their transfer and
// stream flags, log, transfer lists, sizes and the X.509 proxy, with the submit-time checks
// condor_submit makes on them (FileChecks::kCondor) and Kite's stricter ones (kAll).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/files.h"
#include "common/paths.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

constexpr const char* kDevNull = "/dev/null";

bool IsUrl(std::string_view path) {
  return path.find("://") != std::string_view::npos;
}

// A problem with `path` as a file the job reads, or "" when it is fine.
std::string ReadProblem(const std::string& path, bool allow_dir) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return path + " does not exist";
    return path + " cannot be read: " + std::strerror(errno);
  }
  if (!allow_dir && S_ISDIR(sb.st_mode)) return path + " is a directory";
  if (::access(path.c_str(), R_OK) != 0) return path + " is not readable";
  return "";
}

// A problem with `dir` as the directory that will hold a file the job writes, or "".
std::string WriteProblem(const std::string& dir) {
  struct stat sb;
  if (::stat(dir.c_str(), &sb) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return "directory " + dir + " does not exist";
    return "directory " + dir + " cannot be reached: " + std::strerror(errno);
  }
  if (!S_ISDIR(sb.st_mode)) return dir + " is not a directory";
  if (::access(dir.c_str(), W_OK) != 0) return "directory " + dir + " is not writable";
  return "";
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Size of a regular file in KiB, rounded up; 0 when it cannot be read.
long long SizeKb(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
  return (static_cast<long long>(sb.st_size) + 1023) / 1024;
}

// Kite's extra checks (kAll): off with `skip_filechecks = true`, warnings with `= warn`.
enum class Extra { kOff, kWarn, kError };

Result<Extra> ExtraChecks(JobContext& ctx) {
  if (ctx.options().file_checks != FileChecks::kAll) return Extra::kOff;
  auto v = ctx.Get("skip_filechecks");
  if (!v) return Fail(v.error());
  if (!*v) return Extra::kError;
  if (EqualsIgnoreCase(**v, "warn")) return Extra::kWarn;
  auto skip = GetBool(ctx, "skip_filechecks", false);
  if (!skip)
    return Fail(ctx.ErrorAt("skip_filechecks",
                            "skip_filechecks must be true, false or "
                            "warn, not '" +
                                **v + "'"));
  return *skip ? Extra::kOff : Extra::kError;
}

// Reports `problem` with a file of command `key` as Kite's extra checks say.
Status Report(JobContext& ctx, Extra extra, const std::string& key, const std::string& problem) {
  if (problem.empty() || extra == Extra::kOff) return {};
  if (extra == Extra::kWarn) {
    ctx.WarnAt(key, problem);
    return {};
  }
  return Fail(ctx.ErrorAt(key, problem));
}

struct StdFile {
  const char* key;           // input, output, error
  const char* attr;          // In, Out, Err
  const char* transfer_key;  // transfer_input, ...
  const char* transfer_attr;
  const char* stream_key;
  const char* stream_attr;
  bool writes;
};

constexpr StdFile kStdFiles[] = {
    {"input", "In", "transfer_input", "TransferIn", "stream_input", "StreamIn", false},
    {"output", "Out", "transfer_output", "TransferOut", "stream_output", "StreamOut", true},
    {"error", "Err", "transfer_error", "TransferErr", "stream_error", "StreamErr", true},
};

// One standard stream as condor_submit writes it: the name (or /dev/null), and Stream* while the
// file is transferred; Transfer* only when set to false.
Status EmitStdFile(JobContext& ctx, const StdFile& f, Extra extra) {
  auto transfer = GetBool(ctx, f.transfer_key, true);
  if (!transfer) return Fail(transfer.error());
  auto stream = GetBool(ctx, f.stream_key, false);
  if (!stream) return Fail(stream.error());
  auto v = ctx.Get(f.key);
  if (!v) return Fail(v.error());
  std::string name = v->value_or(kDevNull);
  if (name == kDevNull) *transfer = false, *stream = false;
  if (extra != Extra::kOff && name != kDevNull && !IsUrl(name) && *transfer) {
    auto iwd = GetIwd(ctx);
    if (!iwd) return Fail(iwd.error());
    std::string problem = f.writes ? ctx.CheckDirOnce(DirName(JoinPath(*iwd, name)), WriteProblem)
                                   : ReadProblem(JoinPath(*iwd, name), false);
    if (!problem.empty())
      problem = (f.writes ? std::string(f.key) + ": " : "input file ") + problem;
    if (auto st = Report(ctx, extra, f.key, problem); !st) return st;
  }
  ctx.Emit(f.attr, Quoted(name));  // relative to Iwd, as written
  if (*transfer) {
    ctx.Emit(f.stream_attr, *stream ? "true" : "false");
  } else {
    ctx.Emit(f.transfer_attr, "false");
  }
  return {};
}

}  // namespace

Result<std::string> GetIwd(JobContext& ctx) {
  auto v = ctx.Get("initialdir");
  if (!v) return Fail(v.error());
  if (!*v) return ctx.cwd();
  return StripTrailingSlashes(JoinPath(ctx.cwd(), **v));
}

// Iwd, and JobSubmitFile; condor_submit requires the directory to exist.
Status EmitIwd(JobContext& ctx) {
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  ctx.expander().SetFullPathBase(*iwd, ctx.expander().touched_proc_vars());
  if (ctx.options().file_checks != FileChecks::kNone) {
    struct stat sb;
    if (::stat(iwd->c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      return Fail(ctx.ErrorAt("initialdir", "initialdir " + *iwd + " is not a directory"));
    }
  }
  ctx.Emit("Iwd", Quoted(*iwd));
  ctx.Emit("JobSubmitFile", Quoted(ctx.map().main_name()));
  return {};
}

// Cmd is absolute (relative to the current directory, as condor_submit does) unless the
// executable is not transferred, in which case it names a file on the execute side as written.
// For HTCondor's cloud grid types the executable is only a label: Cmd as written, not
// transferred. condor_submit checks that a transferred executable exists and is not empty.
Status EmitExecutable(JobContext& ctx) {
  auto exe = ctx.Get("executable");
  if (!exe) return Fail(exe.error());
  if (!*exe) {
    return Fail(ctx.ErrorAtLine(ctx.queue_line(),
                                "no executable given (add 'executable = PROGRAM' before queue)"));
  }
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  auto grid = ctx.Get("grid_resource");
  if (!grid) return Fail(grid.error());
  std::string type = *grid ? ToLower((*grid)->substr(0, (*grid)->find(' '))) : "";
  bool label_only =
      *universe == kGridUniverse && (type == "ec2" || type == "gce" || type == "azure");
  auto transfer = GetBool(ctx, "transfer_executable", true);
  if (!transfer) return Fail(transfer.error());
  if (!*transfer || label_only) {
    ctx.Emit("TransferExecutable", "false");
    ctx.Emit("Cmd", Quoted(**exe));
    return {};
  }
  std::string path = JoinPath(ctx.cwd(), **exe);
  bool check = ctx.options().file_checks != FileChecks::kNone && *universe != kGridUniverse &&
               path.find("$$(") == std::string::npos;
  if (check) {
    struct stat sb;
    bool all = ctx.options().file_checks == FileChecks::kAll;
    std::string problem =
        ::stat(path.c_str(), &sb) != 0 ? "does not exist"
        : S_ISDIR(sb.st_mode)          ? "is a directory"
        : sb.st_size == 0              ? "is empty"
        : all && ::access(path.c_str(), X_OK) != 0
            ? "is not executable (chmod +x it, or set transfer_executable = false)"
            : "";
    if (!problem.empty()) {
      return Fail(ctx.ErrorAt("executable", "executable " + path + " " + problem));
    }
  }
  ctx.Emit("Cmd", Quoted(path));
  return {};
}

Status EmitStdFiles(JobContext& ctx) {
  auto extra = ExtraChecks(ctx);
  if (!extra) return Fail(extra.error());
  for (const auto& f : kStdFiles) {
    if (auto st = EmitStdFile(ctx, f, *extra); !st) return st;
  }
  return {};
}

Status EmitUserLog(JobContext& ctx) {
  auto xml = GetBool(ctx, "log_xml", false);
  if (!xml) return Fail(xml.error());
  if (*xml) {
    return Fail(ctx.ErrorAt("log_xml",
                            "log_xml = true is not supported by Kite (it writes the user log in "
                            "HTCondor's text format)"));
  }
  if (ctx.IsSet("log_xml")) ctx.Emit("UserLogUseXML", "false");
  auto log = ctx.Get("log");
  if (!log) return Fail(log.error());
  if (!*log) return {};
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  auto extra = ExtraChecks(ctx);
  if (!extra) return Fail(extra.error());
  if (*extra != Extra::kOff && **log != kDevNull) {
    std::string problem = ctx.CheckDirOnce(DirName(JoinPath(*iwd, **log)), WriteProblem);
    if (auto st = Report(ctx, *extra, "log", problem.empty() ? "" : "log: " + problem); !st) {
      return st;
    }
  }
  ctx.Emit("UserLog", Quoted(JoinPath(*iwd, **log)));
  return {};
}

// memory_usage: MemoryUsage (MiB), which the default RequestMemory reads.
Status EmitMemoryUsage(JobContext& ctx) {
  auto v = ctx.Get("memory_usage");
  if (!v) return Fail(v.error());
  if (!*v) return {};
  auto mb = ParseBytes(**v, 1 << 20);
  if (!mb || *mb < 0) {
    return Fail(ctx.ErrorAt("memory_usage",
                            "memory_usage must be a size like 512M or 2GB, not '" + **v + "'"));
  }
  ctx.Emit("MemoryUsage", std::to_string(*mb));
  return {};
}

// ExecutableSize and ImageSize (KiB): the executable's size unless image_size says otherwise;
// and MemoryUsage.
Status EmitSizes(JobContext& ctx) {
  const std::string* cmd = ctx.Emitted("Cmd");
  const std::string* transfer = ctx.Emitted("TransferExecutable");
  long long exe_kb = 0;
  if (cmd != nullptr && (transfer == nullptr || *transfer != "false")) {
    exe_kb = SizeKb(StringLiteral(*cmd).value_or(""));
  }
  ctx.Emit("ExecutableSize", std::to_string(exe_kb));
  auto image = ctx.Get("image_size");
  if (!image) return Fail(image.error());
  if (!*image) {
    ctx.Emit("ImageSize", std::to_string(exe_kb));
    return EmitMemoryUsage(ctx);
  }
  auto kb = ParseBytes(**image, 1024);
  if (!kb || *kb < 1) {
    return Fail(ctx.ErrorAt("image_size",
                            "image_size must be a positive size like 512K or 2GB, "
                            "not '" +
                                **image + "'"));
  }
  ctx.Emit("ImageSize", std::to_string(*kb));
  return EmitMemoryUsage(ctx);
}

// The X.509 proxy is not checked here: the agent's credential monitor owns that (and holds the
// job with a clear reason), so a submit file can be written before `kite proxy init`.
Status EmitProxy(JobContext& ctx) {
  auto proxy = ctx.Get("x509userproxy");
  if (!proxy) return Fail(proxy.error());
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  if (*proxy) {
    ctx.Emit("x509userproxy", Quoted(JoinPath(*iwd, **proxy)));
    return {};
  }
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  auto use = GetBool(ctx, "use_x509userproxy", false);
  if (!use) return Fail(use.error());
  if (*universe == kGridUniverse || *use) ctx.Emit("x509userproxy", Quoted(DefaultProxyPath()));
  return {};
}

}  // namespace kite::submit
