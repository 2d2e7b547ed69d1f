// ARC CE descriptions and replies (docs/grid-arc.md).
#include "grid/arc_format.h"

#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <set>

#include "common/strings.h"
#include "grid/rsl.h"

namespace kite::grid::arc {
namespace {

namespace json = boost::json;

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

// A file name the session directory can hold as one entry: no '/', not "." or "..", printable.
bool PlainName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char ch : name) {
    if (ch == '/' || std::iscntrl(static_cast<unsigned char>(ch)) != 0) return false;
  }
  return true;
}

// A JSON member as a string: strings as they are, numbers as text, anything else "".
std::string Text(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64()) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  return "";
}

// Calls `each` for every object of the "job" member (ARC gives one job as an object, several as
// an array; none as no body, no member or null). kProtocol for any other shape, or what `each`
// returns.
template <class F>
Status ForEachJob(std::string_view body, F each) {
  if (Trim(body).empty()) return {};  // A-REX answers a list of no jobs with no body
  json::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) {
    return Fail(ErrorCode::kProtocol,
                "the CE's reply is not a JSON object: " + std::string(body.substr(0, 120)));
  }
  const json::value* jobs = v.as_object().if_contains("job");
  if (jobs == nullptr || jobs->is_null()) return {};
  if (jobs->is_object()) return each(jobs->as_object());
  if (!jobs->is_array()) return Fail(ErrorCode::kProtocol, "the CE's \"job\" is not a list");
  for (const auto& j : jobs->as_array()) {
    if (!j.is_object()) {
      return Fail(ErrorCode::kProtocol, "a job in the CE's reply is not an object");
    }
    if (auto st = each(j.as_object()); !st) return st;
  }
  return {};
}

}  // namespace

Result<ArcJob> DescribeJob(const gram::JobDescription& desc, const JobFiles& files,
                           std::string_view name, std::string_view delegation_id) {
  auto bad = [](const std::string& why) { return Fail(ErrorCode::kInvalidInput, why); };
  ArcJob job;
  std::set<std::string> taken;
  std::string inputs;  // (inputfiles=...) entries
  auto upload = [&](std::string_view gass, const std::string& site) -> Status {
    const LocalFile* f = FindFile(files.in, gass);
    if (f == nullptr) return bad("no file on this machine for '" + std::string(gass) + "'");
    if (!PlainName(site)) return bad("cannot name a file '" + site + "' at an ARC CE");
    if (!taken.insert(site).second) {
      return bad("two of the job's files would be '" + site + "' in the CE's session directory");
    }
    job.uploads.push_back({site, f->path});
    inputs += "(" + RslQuote(site) + " \"\")";
    return {};
  };

  std::string x = "&";
  x += "(jobname=" + RslQuote(name) + ")";
  std::string executable;
  // Staged inputs first, so the executable's name is checked against theirs.
  for (const auto& s : desc.stage_in) {
    if (auto st = upload(s.gass, s.as); !st) return Fail(st.error());
  }
  if (!desc.executable.gass.empty()) {
    const LocalFile* f = FindFile(files.in, desc.executable.gass);
    if (f == nullptr) return bad("no file on this machine for the executable");
    executable = BaseNameOf(f->path);
    if (auto st = upload(desc.executable.gass, executable); !st) return Fail(st.error());
    x += "(executable=" + RslQuote(executable) + ")";
    x += "(executables=" + RslQuote(executable) + ")";
  } else if (!desc.executable.site.empty()) {
    x += "(executable=" + RslQuote(desc.executable.site) + ")";
  } else {
    return bad("the job has no executable");
  }
  if (!desc.arguments.empty()) {
    x += "(arguments=";
    for (size_t i = 0; i < desc.arguments.size(); ++i) {
      x += (i ? " " : "") + RslQuote(desc.arguments[i]);
    }
    x += ")";
  }
  if (!desc.environment.empty()) {
    x += "(environment=";
    for (const auto& [k, v] : desc.environment) x += "(" + RslQuote(k) + " " + RslQuote(v) + ")";
    x += ")";
  }
  if (!desc.stdin_file.gass.empty()) {
    if (auto st = upload(desc.stdin_file.gass, kStdinName); !st) return Fail(st.error());
    x += "(stdin=" + RslQuote(kStdinName) + ")";
  } else if (!desc.stdin_file.site.empty()) {
    x += "(stdin=" + RslQuote(desc.stdin_file.site) + ")";
  }
  std::string outputs;
  auto download = [&](const gram::FileRef& ref, const char* site, const char* attr) -> Status {
    if (ref.gass.empty()) return {};
    const LocalFile* f = FindFile(files.out, ref.gass);
    if (f == nullptr) return bad("no file on this machine for the job's " + std::string(attr));
    job.downloads.push_back({site, f->path});
    x += "(" + std::string(attr) + "=" + RslQuote(site) + ")";
    outputs += "(" + RslQuote(site) + " \"\")";
    return {};
  };
  if (auto st = download(desc.stdout_file, kStdoutName, "stdout"); !st) return Fail(st.error());
  if (auto st = download(desc.stderr_file, kStderrName, "stderr"); !st) return Fail(st.error());
  for (const auto& f : files.results) {
    // A name ending in '/' is a folder whose contents come back; the CE keeps a folder whole
    // with or without it.
    std::string_view bare(f.name);
    if (bare.ends_with('/')) bare.remove_suffix(1);
    if (!gram::ValidRelativeName(bare)) {
      return bad("cannot fetch '" + f.name + "' from an ARC CE's session directory");
    }
    job.downloads.push_back({f.name, f.path});
    outputs += "(" + RslQuote(f.name) + " \"\")";
  }
  if (!inputs.empty()) x += "(inputfiles=" + inputs + ")";
  if (!outputs.empty()) x += "(outputfiles=" + outputs + ")";

  const gram::ResourceRequest& r = desc.resources;
  if (r.cpus > 0) x += "(count=" + RslQuote(std::to_string(r.cpus)) + ")";
  if (r.memory_mb > 0) x += "(memory=" + RslQuote(std::to_string(r.memory_mb)) + ")";
  if (r.walltime_s > 0) {
    // xRSL counts wall time in minutes; a part of one is a whole one, as for Slurm.
    x += "(walltime=" + RslQuote(std::to_string((r.walltime_s + 59) / 60)) + ")";
  }
  if (!r.queue.empty()) x += "(queue=" + RslQuote(r.queue) + ")";
  if (!delegation_id.empty()) x += "(delegationid=" + RslQuote(delegation_id) + ")";
  job.xrsl = std::move(x);
  return job;
}

Result<std::vector<JobReply>> ParseJobsReply(std::string_view body) {
  std::vector<JobReply> out;
  auto st = ForEachJob(body, [&](const json::object& o) -> Status {
    JobReply r;
    r.id = Text(o, "id");
    std::string code = Text(o, "status-code");
    if (!code.empty()) {
      auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), r.code);
      if (ec != std::errc() || end != code.data() + code.size()) {
        return Fail(ErrorCode::kProtocol,
                    "a job's status-code in the CE's reply is '" + code + "'");
      }
    }
    // A refused new job has no id ({"status-code":"500","reason":"emies:adl parsing error"}).
    if (r.id.empty() && r.code < 300) {
      return Fail(ErrorCode::kProtocol, "a job in the CE's reply has no id");
    }
    r.reason = Text(o, "reason");
    r.state = Text(o, "state");
    for (char& ch : r.state) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    // action=info: the GLUE2 activity, whose Name is the job's name.
    if (const json::value* info = o.if_contains("info_document"); info && info->is_object()) {
      if (const json::value* act = info->as_object().if_contains("ComputingActivity");
          act && act->is_object()) {
        r.name = Text(act->as_object(), "Name");
      }
    }
    out.push_back(std::move(r));
    return {};
  });
  if (!st) return Fail(st.error());
  return out;
}

Result<std::vector<std::string>> ParseJobList(std::string_view body) {
  std::vector<std::string> out;
  auto st = ForEachJob(body, [&](const json::object& o) -> Status {
    std::string id = Text(o, "id");
    if (id.empty()) return Fail(ErrorCode::kProtocol, "a job in the CE's list has no id");
    out.push_back(std::move(id));
    return {};
  });
  if (!st) return Fail(st.error());
  return out;
}

std::optional<gram::JobState> MapState(std::string_view s) {
  using S = gram::JobState;
  static const std::pair<std::string_view, S> kStates[] = {
      {"ACCEPTING", S::kStageIn},  {"ACCEPTED", S::kStageIn},   {"PREPARING", S::kStageIn},
      {"PREPARED", S::kStageIn},   {"SUBMITTING", S::kPending}, {"QUEUING", S::kPending},
      {"HELD", S::kPending},       {"OTHER", S::kPending},      {"RUNNING", S::kActive},
      {"EXITINGLRMS", S::kActive}, {"EXECUTED", S::kActive},    {"KILLING", S::kActive},
      {"FINISHING", S::kStageOut}, {"FINISHED", S::kDone},      {"FAILED", S::kFailed},
      {"KILLED", S::kFailed},      {"WIPED", S::kFailed},
  };
  for (const auto& [name, state] : kStates) {
    if (EqualsIgnoreCase(name, s)) return state;
  }
  return std::nullopt;
}

bool AwaitsUploads(std::string_view s) {
  return EqualsIgnoreCase(s, "ACCEPTING") || EqualsIgnoreCase(s, "ACCEPTED") ||
         EqualsIgnoreCase(s, "PREPARING");
}

bool NotStarted(std::string_view s) {
  auto st = MapState(s);
  return st && (*st == gram::JobState::kStageIn || *st == gram::JobState::kPending);
}

std::optional<int> ParseExitCode(std::string_view diag) {
  for (const auto& line : Split(diag, '\n')) {
    if (!StartsWith(line, "exitcode=")) continue;
    std::string_view v = std::string_view(line).substr(9);
    int code = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return code;
  }
  return std::nullopt;
}

namespace {

// XML's five named entities and numeric character references, as A-REX escapes names. nullopt
// for any other '&'.
std::optional<std::string> XmlText(std::string_view t) {
  std::string out;
  while (!t.empty()) {
    size_t amp = t.find('&');
    out += t.substr(0, amp);
    if (amp == std::string_view::npos) break;
    t.remove_prefix(amp);
    size_t semi = t.find(';');
    if (semi == std::string_view::npos) return std::nullopt;
    std::string_view e = t.substr(1, semi - 1);
    t.remove_prefix(semi + 1);
    if (e == "amp") {
      out += '&';
    } else if (e == "lt") {
      out += '<';
    } else if (e == "gt") {
      out += '>';
    } else if (e == "quot") {
      out += '"';
    } else if (e == "apos") {
      out += '\'';
    } else if (e.size() >= 2 && e.size() <= 4 && e[0] == '#' &&
               e.substr(1).find_first_not_of("0123456789") == std::string_view::npos) {
      int c = std::stoi(std::string(e.substr(1)));
      if (c < 1 || c > 127) return std::nullopt;  // names beyond ASCII are not taken
      out += static_cast<char>(c);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

Result<SessionListing> ParseSessionListing(std::string_view xml) {
  auto bad = [](std::string what) {
    return Fail(ErrorCode::kProtocol, "the ARC CE's folder listing: " + what);
  };
  std::string_view t = Trim(xml);
  if (t.starts_with("<?xml")) {
    size_t end = t.find("?>");
    if (end == std::string_view::npos) return bad("an unended XML declaration");
    t = Trim(t.substr(end + 2));
  }
  SessionListing out;
  if (t == "<list/>" || t == "<list></list>") return out;
  if (!t.starts_with("<list>") || !t.ends_with("</list>")) return bad("not a <list>");
  t = Trim(t.substr(6, t.size() - 6 - 7));
  while (!t.empty()) {
    bool file = t.starts_with("<file");
    if (!file && !t.starts_with("<dir>")) return bad("an entry that is neither <file> nor <dir>");
    size_t open_end = t.find('>');
    if (open_end == std::string_view::npos) return bad("an unended tag");
    std::string_view tag = t.substr(0, open_end);
    if (file && tag != "<file" && !tag.starts_with("<file ")) return bad("a malformed <file>");
    std::string_view close = file ? "</file>" : "</dir>";
    size_t end = t.find(close, open_end + 1);
    if (end == std::string_view::npos) return bad("an unended entry");
    std::string_view raw = t.substr(open_end + 1, end - open_end - 1);
    if (raw.find('<') != std::string_view::npos) return bad("an entry with markup in its name");
    auto name = XmlText(raw);
    if (!name) return bad("a name with an unknown entity");
    if (name->empty() || *name == "." || *name == ".." ||
        name->find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
      return bad("an entry that is not one name: '" + ForLog(*name, 100) + "'");
    }
    (file ? out.files : out.folders).push_back(std::move(*name));
    t = Trim(t.substr(end + close.size()));
  }
  return out;
}

bool ValidArcId(std::string_view id) {
  if (id.empty() || id.size() > 200 || id == "." || id == "..") return false;
  for (char ch : id) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '-' && ch != '_' && ch != '.') {
      return false;
    }
  }
  return true;
}

Result<std::string> DelegationIdOf(std::string_view location) {
  location = Trim(location);
  while (!location.empty() && location.back() == '/') location.remove_suffix(1);
  auto slash = location.rfind('/');
  std::string id(slash == std::string_view::npos ? location : location.substr(slash + 1));
  if (!ValidArcId(id)) {
    return Fail(ErrorCode::kProtocol,
                "the CE named the delegation '" + std::string(location.substr(0, 200)) + "'");
  }
  return id;
}

}  // namespace kite::grid::arc
