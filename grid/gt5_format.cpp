#include "grid/gt5_format.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <set>

namespace kite::grid::gt5 {
namespace {

const LocalFile* FindFile(const std::vector<LocalFile>& files, std::string_view name) {
  for (const auto& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string BaseNameOf(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::optional<int> Int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string ServedName(std::string_view key, std::string_view base, std::string_view file) {
  std::string msg = std::string(base) + '\n' + std::string(file);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len);
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < 16 && i < len; ++i) {
    out += hex[mac[i] >> 4];
    out += hex[mac[i] & 15];
  }
  return out;
}

Result<Gt5Job> DescribeJob(const gram::JobDescription& desc, const JobFiles& files,
                           std::string_view gass_base, std::string_view key,
                           std::string_view base) {
  auto bad = [](const std::string& why) { return Fail(ErrorCode::kInvalidInput, why); };
  Gt5Job job;
  std::set<std::string> taken;
  auto serve = [&](char mode, std::string_view what, const std::string& path) {
    std::string name = ServedName(key, base, std::string(1, mode) + std::string(what));
    job.served.push_back({mode, name, path});
    return std::string(gass_base) + "/" + name;
  };
  std::string stage_in;
  auto input = [&](std::string_view gass, const std::string& site) -> Result<std::string> {
    const LocalFile* f = FindFile(files.in, gass);
    if (f == nullptr) return bad("no file on this machine for '" + std::string(gass) + "'");
    if (!gram::ValidRelativeName(site) || site.find('/') != std::string::npos) {
      return bad("cannot name a file '" + site + "' in a GRAM5 job's directory");
    }
    if (!taken.insert(site).second) {
      return bad("two of the job's files would be '" + site + "' in its directory at the site");
    }
    return serve('R', gass, f->path);
  };

  std::string r = "&";
  for (const auto& s : desc.stage_in) {
    auto url = input(s.gass, s.as);
    if (!url) return Fail(url.error());
    stage_in += "(" + RslQuote(*url) + " " + RslQuote(s.as) + ")";
  }
  if (!desc.executable.gass.empty()) {
    const LocalFile* f = FindFile(files.in, desc.executable.gass);
    if (f == nullptr) return bad("no file on this machine for the executable");
    std::string exe = BaseNameOf(f->path);
    auto url = input(desc.executable.gass, exe);
    if (!url) return Fail(url.error());
    // GRAM stages an executable given as a URL and makes it executable.
    r += "(executable=" + RslQuote(*url) + ")";
  } else if (!desc.executable.site.empty()) {
    r += "(executable=" + RslQuote(desc.executable.site) + ")";
  } else {
    return bad("the job has no executable");
  }
  if (!desc.arguments.empty()) {
    r += "(arguments=";
    for (size_t i = 0; i < desc.arguments.size(); ++i) {
      r += (i ? " " : "") + RslQuote(desc.arguments[i]);
    }
    r += ")";
  }
  if (!desc.environment.empty()) {
    r += "(environment=";
    for (const auto& [k, v] : desc.environment) r += "(" + RslQuote(k) + " " + RslQuote(v) + ")";
    r += ")";
  }
  if (!desc.stdin_file.gass.empty()) {
    const LocalFile* f = FindFile(files.in, desc.stdin_file.gass);
    if (f == nullptr) return bad("no file on this machine for the job's stdin");
    r += "(stdin=" + RslQuote(serve('R', desc.stdin_file.gass, f->path)) + ")";
  } else if (!desc.stdin_file.site.empty()) {
    r += "(stdin=" + RslQuote(desc.stdin_file.site) + ")";
  }
  auto output = [&](const gram::FileRef& ref, const char* attr) -> Status {
    if (!ref.gass.empty()) {
      const LocalFile* f = FindFile(files.out, ref.gass);
      if (f == nullptr) return bad("no file on this machine for the job's " + std::string(attr));
      r += "(" + std::string(attr) + "=" + RslQuote(serve('W', ref.gass, f->path)) + ")";
    } else if (!ref.site.empty()) {
      r += "(" + std::string(attr) + "=" + RslQuote(ref.site) + ")";
    }
    return {};
  };
  if (auto st = output(desc.stdout_file, "stdout"); !st) return Fail(st.error());
  if (auto st = output(desc.stderr_file, "stderr"); !st) return Fail(st.error());
  std::string stage_out;
  for (const auto& f : files.results) {
    if (!gram::ValidRelativeName(f.name)) {
      return bad("cannot fetch '" + f.name + "' from a GRAM5 job's directory");
    }
    stage_out += "(" + RslQuote(f.name) + " " + RslQuote(serve('W', "out/" + f.name, f.path)) + ")";
  }
  if (!stage_in.empty()) r += "(file_stage_in=" + stage_in + ")";
  if (!stage_out.empty()) r += "(file_stage_out=" + stage_out + ")";

  const gram::ResourceRequest& res = desc.resources;
  if (res.cpus > 0) r += "(count=" + std::to_string(res.cpus) + ")";
  if (res.memory_mb > 0) r += "(max_memory=" + std::to_string(res.memory_mb) + ")";
  if (res.walltime_s > 0) {
    // RSL counts wall time in minutes; a part of one is a whole one.
    r += "(max_wall_time=" + std::to_string((res.walltime_s + 59) / 60) + ")";
  }
  if (!res.queue.empty()) r += "(queue=" + RslQuote(res.queue) + ")";
  if (!res.project.empty()) r += "(project=" + RslQuote(res.project) + ")";
  // A directory of the job's own under the account's home, removed when the job is cleaned up;
  // two-phase commit; the state saved, so a lost job manager can be restarted.
  r += "(scratch_dir=$(HOME))(directory=$(SCRATCH_DIRECTORY))";
  r += "(two_phase=" + std::to_string(kCommitTimeout) + ")(save_state=yes)";
  job.rsl = std::move(r);
  return job;
}

std::string StdioRsl(const gram::JobDescription& desc, std::string_view gass_base,
                     std::string_view key, std::string_view base) {
  std::string r;
  for (const auto& [ref, attr] :
       {std::pair{&desc.stdout_file, "stdout"}, std::pair{&desc.stderr_file, "stderr"}}) {
    if (ref->gass.empty()) continue;
    std::string name = ServedName(key, base, "W" + ref->gass);
    r += "(" + std::string(attr) + "=" + RslQuote(std::string(gass_base) + "/" + name) + ")(" +
         attr + "_position=0)";
  }
  return r.empty() ? r : "&" + r;
}

std::vector<std::string> StdioNames(const gram::JobDescription& desc, std::string_view key,
                                    std::string_view base) {
  std::vector<std::string> out;
  for (const auto* ref : {&desc.stdout_file, &desc.stderr_file}) {
    if (!ref->gass.empty()) out.push_back(ServedName(key, base, "W" + ref->gass));
  }
  return out;
}

std::optional<gram::JobState> MapState(int s) {
  using gram::JobState;
  switch (s) {
    case 1:
      return JobState::kPending;  // PENDING
    case 2:
      return JobState::kActive;  // ACTIVE
    case 4:
      return JobState::kFailed;  // FAILED
    case 8:
      return JobState::kDone;  // DONE
    case 16:
      return JobState::kActive;  // SUSPENDED: still the site's
    case 32:
      return JobState::kPendingCommit;  // UNSUBMITTED
    case 64:
      return JobState::kStageIn;  // STAGE_IN
    case 128:
      return JobState::kStageOut;  // STAGE_OUT
    default:
      return std::nullopt;
  }
}

gram::FailureCode MapFailure(int e) {
  using gram::FailureCode;
  switch (e) {
    case 0:
      return FailureCode::kNone;
    case 8:  // USER_CANCELLED
      return FailureCode::kCancelled;
    case 5:  // EXECUTABLE_NOT_FOUND
      return FailureCode::kBadExecutable;
    case 7:  // AUTHORIZATION, and AUTHORIZATION_DENIED... (162-165)
    case 162:
    case 163:
    case 164:
    case 165:
      return FailureCode::kAuthorisation;
    case 29:   // USER_PROXY_NOT_FOUND
    case 125:  // TTL_EXPIRED
    case 131:  // DELEGATION_FAILED
      return FailureCode::kCredentialExpired;
    // Before the job runs: the executable, stdin or an input could not be fetched from the
    // helper's file server. The job can be sent again.
    case 43:   // STAGING_EXECUTABLE
    case 44:   // STAGING_STDIN
    case 135:  // STAGE_IN_FAILED
      return FailureCode::kStageInFailed;
    // Output that could not be sent back: the job ran (a job manager also opens stdout and stderr
    // again to send them at the end); never sent again.
    case 73:   // OPENING_STDOUT
    case 74:   // OPENING_STDERR
    case 155:  // STAGE_OUT_FAILED
      return FailureCode::kStageOutFailed;
    case 17:  // JOB_EXECUTION_FAILED
      return FailureCode::kBatchSubmitFailed;
    case 37:  // MAX_TIME
    case 38:  // MAX_MEMORY
      return FailureCode::kBatchLimitExceeded;
    default:
      return FailureCode::kBadRequest;
  }
}

Result<StatusReply> ParseStatus(const std::vector<std::string>& f) {
  if (f.size() < 3) return Fail(ErrorCode::kProtocol, "a status answer has fewer than 3 fields");
  auto state = Int(f[0]);
  auto error = Int(f[1]);
  if (!state || !error) return Fail(ErrorCode::kProtocol, "a status answer is not numbers");
  StatusReply r{.state = *state, .error = *error};
  if (f[2] != "-") {
    auto code = Int(f[2]);
    if (!code) return Fail(ErrorCode::kProtocol, "the exit code '" + f[2] + "' is not a number");
    r.exit = *code;
  }
  return r;
}

bool IsGramError(const Error& e, int gram_error) {
  return e.message().starts_with("GRAM error " + std::to_string(gram_error) + ":");
}

bool JobManagerGone(const Error& e) {
  return e.code() == ErrorCode::kUnavailable && IsGramError(e, kErrorContactingJobManager);
}

Error ErrorOf(int e, const std::string& text) {
  std::string msg = "GRAM error " + std::to_string(e) + ": " + text;
  switch (e) {
    case kErrorConnectionFailed:
    case kErrorProtocolFailed:
    case kErrorContactingJobManager:
      return Error(ErrorCode::kUnavailable, msg);
    case kErrorJobContactNotFound:
    case kErrorJmStopped:
      return Error(ErrorCode::kNotFound, msg);
    case kErrorAuthorization:
    case kErrorAuthorizationDenied:
    case kErrorUserProxyNotFound:
      return Error(ErrorCode::kAuthFailed, msg);
    default:
      return Error(ErrorCode::kInvalidInput, msg);
  }
}

}  // namespace kite::grid::gt5
