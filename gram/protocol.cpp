// JSON forms of the protocol messages, with strict, bounded parsing.
#include "gram/protocol.h"

#include <array>
#include <boost/json.hpp>

namespace kite::gram {
namespace {

namespace json = boost::json;

constexpr size_t kMaxString = 64u << 10;
constexpr size_t kMaxList = 10000;

struct StateName {
  JobState state;
  std::string_view name;
};
constexpr std::array<StateName, 7> kStateNames = {{
    {JobState::kPendingCommit, "pending-commit"},
    {JobState::kStageIn, "stage-in"},
    {JobState::kPending, "pending"},
    {JobState::kActive, "active"},
    {JobState::kStageOut, "stage-out"},
    {JobState::kDone, "done"},
    {JobState::kFailed, "failed"},
}};

struct FailureName {
  FailureCode code;
  std::string_view name;
  bool retryable;
};
constexpr std::array<FailureName, 11> kFailureNames = {{
    {FailureCode::kNone, "none", false},
    {FailureCode::kCancelled, "cancelled", false},
    {FailureCode::kBadExecutable, "bad-executable", false},
    {FailureCode::kBadRequest, "bad-request", false},
    {FailureCode::kAuthorisation, "authorisation", false},
    {FailureCode::kCredentialExpired, "credential-expired", false},
    {FailureCode::kStageInFailed, "stage-in-failed", true},
    {FailureCode::kStageOutFailed, "stage-out-failed", false},  // after the job ran: not again
    {FailureCode::kBatchSubmitFailed, "batch-submit-failed", true},
    {FailureCode::kBatchLost, "batch-lost", true},
    {FailureCode::kBatchLimitExceeded, "batch-limit-exceeded", false},
}};

std::unexpected<Error> Bad(std::string_view field, std::string_view what) {
  return Fail(ErrorCode::kInvalidInput, std::string(field) + ": " + std::string(what));
}

Result<json::object> ParseObject(std::string_view text) {
  if (text.size() > kMaxBodyBytes) return Bad("body", "larger than the protocol's 1 MiB limit");
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Bad("body", "not JSON (" + ec.message() + ")");
  if (!v.is_object()) return Bad("body", "not a JSON object");
  return std::move(v.as_object());
}

// Reads an optional string field; kInvalidInput when present with another type or too long.
Status GetString(const json::object& o, std::string_view key, std::string* out,
                 bool required = false) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (required) return Bad(key, "missing");
    return {};
  }
  if (!v->is_string()) return Bad(key, "not a string");
  if (v->as_string().size() > kMaxString) return Bad(key, "longer than 64 KiB");
  *out = std::string(v->as_string());
  if (required && out->empty()) return Bad(key, "empty");
  return {};
}

Status GetBool(const json::object& o, std::string_view key, bool* out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_bool()) return Bad(key, "not true or false");
  *out = v->as_bool();
  return {};
}

Status GetInt(const json::object& o, std::string_view key, int64_t* out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_int64()) {
    *out = v->as_int64();
  } else if (v->is_uint64() && v->as_uint64() <= INT64_MAX) {
    *out = static_cast<int64_t>(v->as_uint64());
  } else {
    return Bad(key, "not an integer");
  }
  return {};
}

Status GetRequestId(const json::object& o, std::string* out) {
  if (auto st = GetString(o, "request_id", out, true); !st) return st;
  if (!ValidRequestId(*out)) return Bad("request_id", "not 1-128 printable characters");
  return {};
}

Status GetFileRef(const json::object& o, std::string_view key, FileRef* out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_object()) return Bad(key, "not an object like {\"site\": PATH} or {\"gass\": NAME}");
  const auto& f = v->as_object();
  if (auto st = GetString(f, "site", &out->site); !st) return Fail(st.error().Wrap(key));
  if (auto st = GetString(f, "gass", &out->gass); !st) return Fail(st.error().Wrap(key));
  if (!out->site.empty() && !out->gass.empty()) return Bad(key, "both site and gass given");
  if (out->site.empty() && out->gass.empty()) return Bad(key, "neither site nor gass given");
  if (!out->site.empty() && out->site.front() != '/') return Bad(key, "site path not absolute");
  if (!out->gass.empty() && !ValidRelativeName(out->gass)) return Bad(key, "bad gass name");
  return {};
}

Status GetStringList(const json::object& o, std::string_view key, std::vector<std::string>* out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_array()) return Bad(key, "not a list of strings");
  if (v->as_array().size() > kMaxList) return Bad(key, "too many entries");
  for (const auto& e : v->as_array()) {
    if (!e.is_string()) return Bad(key, "not a list of strings");
    if (e.as_string().size() > kMaxString) return Bad(key, "entry longer than 64 KiB");
    out->emplace_back(e.as_string());
  }
  return {};
}

Status GetEnvironment(const json::object& o, JobDescription* j) {
  const json::value* v = o.if_contains("environment");
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_object()) return Bad("environment", "not an object of NAME: value");
  if (v->as_object().size() > kMaxList) return Bad("environment", "too many entries");
  for (const auto& [k, val] : v->as_object()) {
    if (k.empty() || k.find('=') != json::string_view::npos) {
      return Bad("environment", "bad variable name");
    }
    if (!val.is_string() || val.as_string().size() > kMaxString) {
      return Bad("environment", std::string(k) + " is not a string of at most 64 KiB");
    }
    j->environment.emplace_back(std::string(k), std::string(val.as_string()));
  }
  return {};
}

// "stage_in" or "stage_out": a list of {gass, as}. An input lands in the job's directory itself;
// an output may be in a subdirectory of it.
Status GetStageList(const json::object& o, std::string_view key, bool subdirs,
                    std::vector<StageFile>* out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_array() || v->as_array().size() > kMaxList) {
    return Bad(key, "not a list of {gass, as}");
  }
  for (const auto& e : v->as_array()) {
    if (!e.is_object()) return Bad(key, "entry not an object");
    StageFile f;
    if (auto st = GetString(e.as_object(), "gass", &f.gass, true); !st) return st;
    if (auto st = GetString(e.as_object(), "as", &f.as); !st) return st;
    if (f.as.empty()) f.as = f.gass;
    if (!ValidRelativeName(f.gass)) return Bad(key, "bad gass name " + f.gass);
    if (!ValidRelativeName(f.as) || (!subdirs && f.as.find('/') != std::string::npos)) {
      return Bad(key, "bad file name " + f.as);
    }
    if (subdirs) {
      if (auto st = GetBool(e.as_object(), "folder", &f.folder); !st) return st;
    }
    out->push_back(std::move(f));
  }
  return {};
}

Status GetCount(const json::object& o, std::string_view key, int64_t max, int64_t* out) {
  if (auto st = GetInt(o, key, out); !st) return st;
  if (*out < 0 || *out > max) return Bad(key, "out of range 0.." + std::to_string(max));
  return {};
}

Status GetResources(const json::object& o, ResourceRequest* r) {
  const json::value* v = o.if_contains("resources");
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_object()) return Bad("resources", "not an object");
  const auto& ro = v->as_object();
  Status st = GetCount(ro, "cpus", kMaxRequestCpus, &r->cpus);
  if (st) st = GetCount(ro, "memory_mb", kMaxRequestMemoryMb, &r->memory_mb);
  if (st) st = GetCount(ro, "walltime_s", kMaxRequestWalltimeS, &r->walltime_s);
  if (st) st = GetString(ro, "queue", &r->queue);
  if (st) st = GetString(ro, "project", &r->project);
  if (!st) return Fail(st.error().Wrap("resources"));
  if (!r->queue.empty() && !ValidBatchName(r->queue)) {
    return Bad("resources", "queue is not 1-64 of A-Z a-z 0-9 _ . + -");
  }
  if (!r->project.empty() && !ValidBatchName(r->project)) {
    return Bad("resources", "project is not 1-64 of A-Z a-z 0-9 _ . + -");
  }
  return {};
}

json::object ResourcesToObject(const ResourceRequest& r) {
  json::object o;
  if (r.cpus > 0) o["cpus"] = r.cpus;
  if (r.memory_mb > 0) o["memory_mb"] = r.memory_mb;
  if (r.walltime_s > 0) o["walltime_s"] = r.walltime_s;
  if (!r.queue.empty()) o["queue"] = r.queue;
  if (!r.project.empty()) o["project"] = r.project;
  return o;
}

Result<JobDescription> JobFromObject(const json::object& o) {
  JobDescription j;
  if (!o.contains("executable")) return Bad("executable", "missing");
  Status st = GetFileRef(o, "executable", &j.executable);
  if (st) st = GetStringList(o, "arguments", &j.arguments);
  if (st) st = GetEnvironment(o, &j);
  if (st) st = GetFileRef(o, "stdin", &j.stdin_file);
  if (st) st = GetFileRef(o, "stdout", &j.stdout_file);
  if (st) st = GetFileRef(o, "stderr", &j.stderr_file);
  if (st) st = GetStageList(o, "stage_in", false, &j.stage_in);
  if (st) st = GetStageList(o, "stage_out", true, &j.stage_out);
  if (st) st = GetString(o, "gass_url", &j.gass_url);
  if (st) st = GetBool(o, "stream_output", &j.stream_output);
  if (st) st = GetBool(o, "stream_error", &j.stream_error);
  if (st) st = GetString(o, "delegation_id", &j.delegation_id);
  if (st) st = GetString(o, "callback_url", &j.callback_url);
  if (st) st = GetResources(o, &j.resources);
  if (!st) return Fail(st.error());
  bool uses_gass = !j.executable.gass.empty() || !j.stdin_file.gass.empty() ||
                   !j.stdout_file.gass.empty() || !j.stderr_file.gass.empty() ||
                   !j.stage_in.empty() || !j.stage_out.empty();
  if (uses_gass && !j.gass_url.starts_with("https://")) {
    return Bad("gass_url", "an https:// URL is required when files name gass");
  }
  if (!j.callback_url.empty() && !j.callback_url.starts_with("https://")) {
    return Bad("callback_url", "not an https:// URL");
  }
  if ((uses_gass || !j.callback_url.empty()) && j.delegation_id.empty()) {
    return Bad("delegation_id", "required when GASS or callbacks are used");
  }
  return j;
}

json::value FileRefJson(const FileRef& f) {
  if (!f.site.empty()) return json::object{{"site", f.site}};
  if (!f.gass.empty()) return json::object{{"gass", f.gass}};
  return nullptr;
}

json::object JobToObject(const JobDescription& j) {
  json::object o;
  o["executable"] = FileRefJson(j.executable);
  json::array args;
  for (const auto& a : j.arguments) args.emplace_back(a);
  o["arguments"] = std::move(args);
  json::object env;
  for (const auto& [k, v] : j.environment) env[k] = v;
  o["environment"] = std::move(env);
  if (!j.stdin_file.empty()) o["stdin"] = FileRefJson(j.stdin_file);
  if (!j.stdout_file.empty()) o["stdout"] = FileRefJson(j.stdout_file);
  if (!j.stderr_file.empty()) o["stderr"] = FileRefJson(j.stderr_file);
  json::array stage;
  for (const auto& f : j.stage_in) stage.push_back(json::object{{"gass", f.gass}, {"as", f.as}});
  o["stage_in"] = std::move(stage);
  if (!j.stage_out.empty()) {
    json::array results;
    for (const auto& f : j.stage_out) {
      json::object r{{"gass", f.gass}, {"as", f.as}};
      if (f.folder) r["folder"] = true;
      results.push_back(std::move(r));
    }
    o["stage_out"] = std::move(results);
  }
  if (!j.gass_url.empty()) o["gass_url"] = j.gass_url;
  o["stream_output"] = j.stream_output;
  o["stream_error"] = j.stream_error;
  if (!j.delegation_id.empty()) o["delegation_id"] = j.delegation_id;
  if (!j.callback_url.empty()) o["callback_url"] = j.callback_url;
  if (!j.resources.empty()) o["resources"] = ResourcesToObject(j.resources);
  return o;
}

}  // namespace

std::string_view JobStateName(JobState state) {
  for (const auto& s : kStateNames)
    if (s.state == state) return s.name;
  return "unknown";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (const auto& s : kStateNames)
    if (s.name == name) return s.state;
  return std::nullopt;
}

bool IsTerminal(JobState state) {
  return state == JobState::kDone || state == JobState::kFailed;
}

std::string_view FailureCodeName(FailureCode code) {
  for (const auto& f : kFailureNames)
    if (f.code == code) return f.name;
  return "unknown";
}

std::optional<FailureCode> ParseFailureCode(std::string_view name) {
  for (const auto& f : kFailureNames)
    if (f.name == name) return f.code;
  return std::nullopt;
}

bool IsRetryable(FailureCode code) {
  for (const auto& f : kFailureNames)
    if (f.code == code) return f.retryable;
  return false;
}

bool ValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (c <= ' ' || c > '~') return false;
  return true;
}

bool ValidJobId(std::string_view id) {
  if (id.size() < 16 || id.size() > 64) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-')) return false;
  return true;
}

bool ValidBatchName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '_' || c == '.' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool ValidRelativeName(std::string_view name) {
  if (name.empty() || name.size() > 1024 || name.front() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    if (part.empty() || part.front() == '.') return false;
    for (char c : part)
      if (static_cast<unsigned char>(c) < ' ' || c == '\\') return false;
    start = end + 1;
  }
  return true;
}

Result<JobDescription> ParseJobDescription(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  return JobFromObject(*o);
}

Result<SubmitRequest> ParseSubmitRequest(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  SubmitRequest r;
  if (auto st = GetRequestId(*o, &r.request_id); !st) return Fail(st.error());
  const json::value* job = o->if_contains("job");
  if (job == nullptr || !job->is_object()) return Bad("job", "missing or not an object");
  auto j = JobFromObject(job->as_object());
  if (!j) return Fail(j.error().Wrap("job"));
  r.job = std::move(*j);
  return r;
}

Result<SimpleRequest> ParseSimpleRequest(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  SimpleRequest r;
  if (auto st = GetRequestId(*o, &r.request_id); !st) return Fail(st.error());
  if (const json::value* v = o->if_contains("only_pending")) {
    if (!v->is_bool())
      return Fail(ErrorCode::kInvalidInput, "only_pending: expected true or false");
    r.only_pending = v->as_bool();
  }
  return r;
}

Result<SignalRequest> ParseSignalRequest(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  SignalRequest r;
  Status st = GetRequestId(*o, &r.request_id);
  if (st) st = GetString(*o, "gass_url", &r.gass_url);
  if (st) st = GetString(*o, "delegation_id", &r.delegation_id);
  if (st) st = GetString(*o, "callback_url", &r.callback_url);
  if (st) st = GetInt(*o, "run", &r.run);
  if (!st) return Fail(st.error());
  if (r.run < 0) return Bad("run", "negative");
  if (!r.gass_url.empty() && !r.gass_url.starts_with("https://")) {
    return Bad("gass_url", "not an https:// URL");
  }
  if (!r.callback_url.empty() && !r.callback_url.starts_with("https://")) {
    return Bad("callback_url", "not an https:// URL");
  }
  if (r.gass_url.empty() && r.delegation_id.empty() && r.callback_url.empty()) {
    return Bad("signal", "names none of gass_url, delegation_id, callback_url");
  }
  return r;
}

Result<DelegationStartRequest> ParseDelegationStartRequest(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  DelegationStartRequest r;
  Status st = GetRequestId(*o, &r.request_id);
  if (st) st = GetString(*o, "delegation_id", &r.delegation_id);
  if (!st) return Fail(st.error());
  if (!r.delegation_id.empty() && !ValidJobId(r.delegation_id)) {
    return Bad("delegation_id", "malformed");
  }
  return r;
}

Result<DelegationCompleteRequest> ParseDelegationCompleteRequest(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  DelegationCompleteRequest r;
  Status st = GetRequestId(*o, &r.request_id);
  if (st) st = GetString(*o, "chain", &r.chain_pem, true);
  if (!st) return Fail(st.error());
  return r;
}

Result<DelegationReply> ParseDelegationReply(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  DelegationReply r;
  Status st = GetString(*o, "delegation_id", &r.delegation_id, true);
  if (st) st = GetString(*o, "csr", &r.csr_pem);
  if (!st) return Fail(st.error());
  if (const json::value* v = o->if_contains("not_after"); v && v->is_number()) {
    r.not_after = v->to_number<double>();
  }
  return r;
}

Result<std::string> ParseInfoReply(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  std::string ad;
  if (auto st = GetString(*o, "ad", &ad, true); !st) return Fail(st.error());
  return ad;
}

Result<JobStatus> ParseJobStatus(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  JobStatus s;
  std::string state, failure;
  Status st = GetString(*o, "job_id", &s.job_id, true);
  if (st) st = GetString(*o, "contact", &s.contact);
  if (st) st = GetString(*o, "state", &state, true);
  if (st) st = GetInt(*o, "seq", &s.seq);
  if (st) st = GetInt(*o, "stdout_offset", &s.stdout_offset);
  if (st) st = GetInt(*o, "stderr_offset", &s.stderr_offset);
  if (!st) return Fail(st.error());
  auto parsed = ParseJobState(state);
  if (!parsed) return Bad("state", "unknown state " + state);
  s.state = *parsed;
  if (const json::value* f = o->if_contains("failure"); f && f->is_object()) {
    st = GetString(f->as_object(), "code", &failure, true);
    if (st) st = GetString(f->as_object(), "message", &s.failure_message);
    if (!st) return Fail(st.error().Wrap("failure"));
    auto code = ParseFailureCode(failure);
    if (!code) return Bad("failure", "unknown code " + failure);
    s.failure = *code;
    if (s.failure == FailureCode::kNone) s.failure_message.clear();
  }
  if (const json::value* e = o->if_contains("exit"); e && e->is_object()) {
    ExitInfo x;
    int64_t code = 0;
    std::string kind;
    st = GetString(e->as_object(), "kind", &kind, true);
    if (st) st = GetInt(e->as_object(), "code", &code);
    if (!st) return Fail(st.error().Wrap("exit"));
    if (kind != "exited" && kind != "signaled") return Bad("exit", "unknown kind " + kind);
    x.signaled = kind == "signaled";
    x.code = static_cast<int>(code);
    s.exit = x;
  }
  return s;
}

Result<ErrorReply> ParseErrorReply(std::string_view text) {
  auto o = ParseObject(text);
  if (!o) return Fail(o.error());
  const json::value* e = o->if_contains("error");
  if (e == nullptr || !e->is_object()) return Bad("error", "missing");
  ErrorReply r;
  std::string code;
  Status st = GetString(e->as_object(), "code", &code, true);
  if (st) st = GetString(e->as_object(), "message", &r.message);
  if (!st) return Fail(st.error());
  r.code = ErrorCodeFromName(code);
  return r;
}

std::string ToJson(const JobDescription& j) {
  return json::serialize(JobToObject(j));
}

std::string ToJson(const SubmitRequest& r) {
  return json::serialize(json::object{{"request_id", r.request_id}, {"job", JobToObject(r.job)}});
}

std::string ToJson(const SimpleRequest& r) {
  json::object o{{"request_id", r.request_id}};
  if (r.only_pending) o["only_pending"] = true;
  return json::serialize(o);
}

std::string ToJson(const SignalRequest& r) {
  json::object o{{"request_id", r.request_id}};
  if (!r.gass_url.empty()) o["gass_url"] = r.gass_url;
  if (!r.delegation_id.empty()) o["delegation_id"] = r.delegation_id;
  if (!r.callback_url.empty()) o["callback_url"] = r.callback_url;
  if (r.run > 0) o["run"] = r.run;
  return json::serialize(o);
}

std::string ToJson(const DelegationStartRequest& r) {
  json::object o{{"request_id", r.request_id}};
  if (!r.delegation_id.empty()) o["delegation_id"] = r.delegation_id;
  return json::serialize(o);
}

std::string ToJson(const DelegationCompleteRequest& r) {
  return json::serialize(json::object{{"request_id", r.request_id}, {"chain", r.chain_pem}});
}

std::string ToJson(const DelegationReply& r) {
  json::object o{{"delegation_id", r.delegation_id}};
  if (!r.csr_pem.empty()) o["csr"] = r.csr_pem;
  if (r.not_after > 0) o["not_after"] = r.not_after;
  return json::serialize(o);
}

std::string ToJson(const JobStatus& s) {
  json::object o{{"job_id", s.job_id},
                 {"contact", s.contact},
                 {"state", JobStateName(s.state)},
                 {"seq", s.seq},
                 {"stdout_offset", s.stdout_offset},
                 {"stderr_offset", s.stderr_offset}};
  if (s.failure != FailureCode::kNone) {
    o["failure"] = json::object{{"code", FailureCodeName(s.failure)},
                                {"retryable", IsRetryable(s.failure)},
                                {"message", s.failure_message}};
  }
  if (s.exit) {
    o["exit"] =
        json::object{{"kind", s.exit->signaled ? "signaled" : "exited"}, {"code", s.exit->code}};
  }
  return json::serialize(o);
}

std::string ToJson(const ErrorReply& e) {
  return json::serialize(json::object{
      {"error", json::object{{"code", ErrorCodeName(e.code)}, {"message", e.message}}}});
}

ErrorCode ErrorCodeForHttp(unsigned status) {
  switch (status) {
    case 400:
    case 413:
      return ErrorCode::kInvalidInput;
    case 401:
      return ErrorCode::kProxyExpired;
    case 403:
      return ErrorCode::kAuthFailed;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kConflict;
    case 502:
    case 503:
      return ErrorCode::kUnavailable;
    case 504:
      return ErrorCode::kTimeout;
    default:
      return status >= 200 && status < 300 ? ErrorCode::kOk : ErrorCode::kInternal;
  }
}

}  // namespace kite::gram
