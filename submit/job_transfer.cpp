// File transfer: should_transfer_files / when_to_transfer_output with condor_submit's defaults
// and contradictions, the input and output lists, output remaps, and the sizes condor_submit
// derives from them (DiskUsage, TransferInputSizeMB).
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>

#include "common/files.h"
#include "common/strings.h"
#include "grid/grid_type.h"
#include "grid/resource.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

bool IsUrl(std::string_view path) {
  return path.find("://") != std::string_view::npos;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A comma-separated list as condor_submit keeps it: items trimmed, empty ones dropped; `""`
// is an empty list (not a file named "").
std::vector<std::string> FileList(const std::string& v) {
  if (v == "\"\"") return {};
  return Split(v, ',');
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

long long SizeKb(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
  return (static_cast<long long>(sb.st_size) + 1023) / 1024;
}

struct TransferMode {
  std::string should = "IF_NEEDED";
  std::string when = "ON_EXIT";
};

// condor_submit's rules: NO with no `when` means NEVER; ON_EXIT_OR_EVICT turns the default
// IF_NEEDED into YES; NO with a `when`, a `when` of NEVER without NO, and IF_NEEDED with
// ON_EXIT_OR_EVICT are contradictions.
Result<TransferMode> ReadTransferMode(JobContext& ctx, bool files_named) {
  TransferMode m;
  auto should = ctx.Get("should_transfer_files");
  if (!should) return Fail(should.error());
  auto when = ctx.Get("when_to_transfer_output");
  if (!when) return Fail(when.error());
  if (*should) {
    m.should = ToUpper(**should);
    if (m.should != "YES" && m.should != "NO" && m.should != "IF_NEEDED") {
      return Fail(ctx.ErrorAt(
          "should_transfer_files",
          "should_transfer_files must be one of YES,NO,IF_NEEDED, not '" + **should + "'"));
    }
  }
  if (*when) {
    m.when = ToUpper(**when);
    if (m.when != "ON_EXIT" && m.when != "ON_EXIT_OR_EVICT" && m.when != "ON_SUCCESS" &&
        m.when != "NEVER") {
      return Fail(ctx.ErrorAt("when_to_transfer_output",
                              "when_to_transfer_output must be one of ON_EXIT,ON_EXIT_OR_EVICT,"
                              "ON_SUCCESS, not '" +
                                  **when + "'"));
    }
  } else if (m.should == "NO") {
    m.when = "NEVER";
  }
  if (m.should == "NO" && files_named) {
    return Fail(ctx.ErrorAt("should_transfer_files",
                            "transfer_input_files or transfer_output_files name files to "
                            "transfer, but should_transfer_files = NO"));
  }
  if (!*should && m.when == "ON_EXIT_OR_EVICT") m.should = "YES";
  if ((m.should == "NO") != (m.when == "NEVER") ||
      (m.should == "IF_NEEDED" && m.when == "ON_EXIT_OR_EVICT")) {
    return Fail(ctx.ErrorAt("when_to_transfer_output", "when_to_transfer_output = " + m.when +
                                                           " contradicts "
                                                           "should_transfer_files = " +
                                                           m.should));
  }
  return m;
}

// The input list, each file (not URL) checked when Kite's extra checks are on.
Status CheckInputs(JobContext& ctx, const std::vector<std::string>& files) {
  if (ctx.options().file_checks != FileChecks::kAll) return {};
  auto skip = ctx.Get("skip_filechecks");
  if (!skip) return Fail(skip.error());
  bool warn = *skip && EqualsIgnoreCase(**skip, "warn");
  if (*skip && !warn && GetBool(ctx, "skip_filechecks", false).value_or(false)) return {};
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  for (const auto& f : files) {
    if (IsUrl(f)) continue;
    std::string path = JoinPath(*iwd, f);
    struct stat sb;
    std::string problem = ::stat(path.c_str(), &sb) != 0      ? path + " does not exist"
                          : ::access(path.c_str(), R_OK) != 0 ? path + " is not readable"
                                                              : "";
    if (problem.empty()) continue;
    if (warn) {
      ctx.WarnAt("transfer_input_files", "transfer_input_files: " + problem);
      continue;
    }
    return Fail(ctx.ErrorAt("transfer_input_files", "transfer_input_files: " + problem));
  }
  return {};
}

// What a grid job's transfers cannot do today, refused at submit rather than held later: files
// coming back from a type that does not send them (folders from one that sends only files), and
// directories going out (a grid job's input is files, each put in its directory at the site
// under its own name).
Status CheckGridTransfers(JobContext& ctx, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  if (*universe != kGridUniverse) return {};
  if (!outputs.empty()) {
    // Grid types that bring them back (GridTypeCaps::output_files): files and, where the type
    // can, folders by name; no URLs.
    auto resource = ctx.Get("grid_resource");
    if (!resource) return Fail(resource.error());
    auto r = *resource ? grid::ParseGridResource(**resource) : Result<grid::GridResource>();
    const grid::GridType* type = r && *resource ? grid::FindGridType(r->type) : nullptr;
    if (type == nullptr || !type->caps.output_files) {
      return Fail(ctx.ErrorAt("transfer_output_files",
                              "transfer_output_files is not supported for grid jobs to a " +
                                  (type ? type->display : std::string("site of this type")) +
                                  ": only the files named by output and error come back (write "
                                  "what you need there, or pack it into one of them)"));
    }
    for (const auto& f : outputs) {
      if (IsUrl(f) || f.starts_with('/') || f.find("..") != std::string::npos) {
        return Fail(ctx.ErrorAt("transfer_output_files",
                                "transfer_output_files: '" + f +
                                    "' is not the name of a file or folder in the job's "
                                    "directory at the site (URLs are not fetched)"));
      }
      if (f.ends_with('/') && !type->caps.output_folders) {
        return Fail(
            ctx.ErrorAt("transfer_output_files", "transfer_output_files: a " + type->display +
                                                     " sends back files, not folders ('" + f +
                                                     "'; pack the folder into one file with tar)"));
      }
    }
  }
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  for (const auto& f : inputs) {
    if (IsUrl(f)) continue;
    struct stat sb;
    bool dir =
        f.ends_with('/') || (::stat(JoinPath(*iwd, f).c_str(), &sb) == 0 && S_ISDIR(sb.st_mode));
    if (dir) {
      return Fail(ctx.ErrorAt("transfer_input_files",
                              "transfer_input_files: '" + f +
                                  "' is a directory; a grid job's input is files (list them, "
                                  "or pack the directory into one with tar)"));
    }
  }
  return {};
}

// DiskUsage (KiB) and TransferInputSizeMB: the executable and the input files, as condor_submit
// estimates them; disk_usage replaces the estimate.
Status EmitDiskUsage(JobContext& ctx, const std::vector<std::string>& inputs) {
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  long long kb = 0;
  if (const std::string* exe = ctx.Emitted("ExecutableSize")) kb = std::stoll(*exe);
  for (const auto& f : inputs) {
    if (!IsUrl(f)) kb += SizeKb(JoinPath(*iwd, f));
  }
  auto usage = ctx.Get("disk_usage");
  if (!usage) return Fail(usage.error());
  if (*usage) {
    auto n = ParseBytes(**usage, 1024);
    if (!n || *n < 1) {
      return Fail(ctx.ErrorAt(
          "disk_usage", "disk_usage must be a size of at least 1 KiB, not '" + **usage + "'"));
    }
    ctx.Emit("DiskUsage", std::to_string(*n));
    return {};
  }
  ctx.Emit("TransferInputSizeMB", std::to_string(kb / 1024));
  ctx.Emit("DiskUsage", std::to_string(kb));
  return {};
}

}  // namespace

Status EmitTransferFiles(JobContext& ctx) {
  auto in = ctx.Get("transfer_input_files");
  if (!in) return Fail(in.error());
  auto out = ctx.Get("transfer_output_files");
  if (!out) return Fail(out.error());
  std::vector<std::string> inputs = *in ? FileList(**in) : std::vector<std::string>{};
  std::vector<std::string> outputs = *out ? FileList(**out) : std::vector<std::string>{};
  auto mode = ReadTransferMode(ctx, !inputs.empty() || *out);
  if (!mode) return Fail(mode.error());
  if (auto st = CheckGridTransfers(ctx, inputs, outputs); !st) return st;
  if (auto st = CheckInputs(ctx, inputs); !st) return st;
  ctx.Emit("ShouldTransferFiles", Quoted(mode->should));
  if (mode->should != "NO") ctx.Emit("WhenToTransferOutput", Quoted(mode->when));
  if (mode->should != "YES") ctx.Emit("FileSystemDomain", Quoted(ctx.env().fs_domain));
  if (mode->should != "NO") {
    if (!inputs.empty()) ctx.Emit("TransferInput", Quoted(Join(inputs)));
    if (*out) ctx.Emit("TransferOutput", Quoted(Join(outputs)));
  }
  auto remaps = ctx.Get("transfer_output_remaps");
  if (!remaps) return Fail(remaps.error());
  if (*remaps) {
    const std::string& r = **remaps;
    if (r.size() < 2 || r.front() != '"' || r.back() != '"') {
      return Fail(ctx.ErrorAt("transfer_output_remaps",
                              "transfer_output_remaps must be a quoted string, not " + r));
    }
    ctx.Emit("TransferOutputRemaps", Quoted(r.substr(1, r.size() - 2)));
  }
  return EmitDiskUsage(ctx, inputs);
}

}  // namespace kite::submit
