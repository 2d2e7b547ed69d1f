// Command handlers that name files: executable, initialdir, input/output/error, log, transfer
// lists and the X.509 proxy, with the submit-time checks condor_submit makes on them.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/files.h"
#include "common/paths.h"
#include "common/strings.h"
#include "submit/job_attrs.h"
#include "submit/quoting.h"

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

// The key among initialdir / initial_dir that is set, or "" when neither is.
Result<std::string> IwdKey(JobContext& ctx) {
  for (const char* key : {"initialdir", "initial_dir"}) {
    auto v = ctx.Get(key);
    if (!v) return Fail(v.error());
    if (*v) return std::string(key);
  }
  return std::string();
}

// Output, error and log: the file name as given plus a check of its directory.
Result<std::optional<std::string>> GetWrittenFile(JobContext& ctx, const std::string& key) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v || !ctx.options().check_files || **v == kDevNull || IsUrl(**v)) return v;
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  const std::string& problem = ctx.CheckDirOnce(DirName(JoinPath(*iwd, **v)), WriteProblem);
  if (!problem.empty()) {
    return Fail(ctx.ErrorAt(key, key + ": " + problem));
  }
  return v;
}

Status EmitStdFile(JobContext& ctx, const std::string& key, const char* attr) {
  auto v = GetWrittenFile(ctx, key);
  if (!v) return Fail(v.error());
  // Kept as written: a relative name is relative to Iwd, as in HTCondor's job ad.
  ctx.Emit(attr, QuoteClassAdString(v->value_or(kDevNull)));
  return {};
}

}  // namespace

Result<std::string> GetIwd(JobContext& ctx) {
  auto key = IwdKey(ctx);
  if (!key) return Fail(key.error());
  if (key->empty()) return ctx.cwd();
  auto v = ctx.Get(*key);
  if (!v) return Fail(v.error());
  return StripTrailingSlashes(JoinPath(ctx.cwd(), **v));
}

Status EmitIwd(JobContext& ctx) {
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  if (ctx.options().check_files) {
    struct stat sb;
    if (::stat(iwd->c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      auto key = IwdKey(ctx);
      if (!key) return Fail(key.error());
      return Fail(ctx.ErrorAt(*key, "initialdir " + *iwd + " is not a directory"));
    }
  }
  ctx.Emit("Iwd", QuoteClassAdString(*iwd));
  return {};
}

// Cmd is absolute (relative to the current directory, as condor_submit does) unless the
// executable is not transferred, in which case it names a file on the execute side as written.
Status EmitExecutable(JobContext& ctx) {
  auto exe = ctx.Get("executable");
  if (!exe) return Fail(exe.error());
  if (!*exe) {
    return Fail(ctx.ErrorAtLine(ctx.queue_line(),
                                "no executable given (add 'executable = PROGRAM' before queue)"));
  }
  auto transfer = GetBool(ctx, "transfer_executable", true);
  if (!transfer) return Fail(transfer.error());
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  if (!*transfer) {
    ctx.Emit("Cmd", QuoteClassAdString(**exe));
    return {};
  }
  std::string path = JoinPath(ctx.cwd(), **exe);
  if (ctx.options().check_files && *universe != kGridUniverse) {
    struct stat sb;
    std::string problem =
        ::stat(path.c_str(), &sb) != 0 ? "does not exist"
        : S_ISDIR(sb.st_mode)          ? "is a directory"
        : ::access(path.c_str(), X_OK) != 0
            ? "is not executable (chmod +x it, or set transfer_executable = false)"
            : "";
    if (!problem.empty()) {
      return Fail(ctx.ErrorAt("executable", "executable " + path + " " + problem));
    }
  }
  ctx.Emit("Cmd", QuoteClassAdString(path));
  return {};
}

Status EmitInput(JobContext& ctx) {
  auto in = ctx.Get("input");
  if (!in) return Fail(in.error());
  auto transfer = GetBool(ctx, "transfer_input", true);
  if (!transfer) return Fail(transfer.error());
  std::string name = in->value_or(kDevNull);
  if (ctx.options().check_files && *transfer && name != kDevNull && !IsUrl(name)) {
    auto iwd = GetIwd(ctx);
    if (!iwd) return Fail(iwd.error());
    if (auto problem = ReadProblem(JoinPath(*iwd, name), false); !problem.empty()) {
      return Fail(ctx.ErrorAt("input", "input file " + problem));
    }
  }
  ctx.Emit("In", QuoteClassAdString(name));
  return {};
}

Status EmitOutput(JobContext& ctx) {
  return EmitStdFile(ctx, "output", "Out");
}
Status EmitError(JobContext& ctx) {
  return EmitStdFile(ctx, "error", "Err");
}

Status EmitUserLog(JobContext& ctx) {
  auto log = GetWrittenFile(ctx, "log");
  if (!log) return Fail(log.error());
  if (!*log) return {};
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  ctx.Emit("UserLog", QuoteClassAdString(JoinPath(*iwd, **log)));
  return {};
}

// Comma-separated lists, normalised to "a,b,c"; input entries must be readable (URLs aside).
Status EmitTransferFiles(JobContext& ctx) {
  auto in = ctx.Get("transfer_input_files");
  if (!in) return Fail(in.error());
  if (*in) {
    auto files = Split(**in, ',');
    if (ctx.options().check_files) {
      auto iwd = GetIwd(ctx);
      if (!iwd) return Fail(iwd.error());
      for (const auto& f : files) {
        if (IsUrl(f)) continue;
        if (auto problem = ReadProblem(JoinPath(*iwd, f), true); !problem.empty()) {
          return Fail(ctx.ErrorAt("transfer_input_files", "transfer_input_files: " + problem));
        }
      }
    }
    std::string joined;
    for (const auto& f : files) joined += (joined.empty() ? "" : ",") + f;
    ctx.Emit("TransferInputFiles", QuoteClassAdString(joined));
  }
  auto out = ctx.Get("transfer_output_files");
  if (!out) return Fail(out.error());
  if (*out) {
    std::string joined;
    for (const auto& f : Split(**out, ',')) joined += (joined.empty() ? "" : ",") + f;
    ctx.Emit("TransferOutputFiles", QuoteClassAdString(joined));
  }
  return {};
}

// The proxy is not checked here: the agent's credential monitor owns that (and holds the job
// with a clear reason), so a submit file can be written before `kite proxy init`.
Status EmitProxy(JobContext& ctx) {
  auto proxy = ctx.Get("x509userproxy");
  if (!proxy) return Fail(proxy.error());
  if (*proxy) {
    auto iwd = GetIwd(ctx);
    if (!iwd) return Fail(iwd.error());
    ctx.Emit("x509userproxy", QuoteClassAdString(JoinPath(*iwd, **proxy)));
    return {};
  }
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  if (*universe == kGridUniverse) ctx.Emit("x509userproxy", QuoteClassAdString(DefaultProxyPath()));
  return {};
}

}  // namespace kite::submit
