// The Grid Engine adapter's pure half: the script and arguments out, command output in.
#include "gram/batch/sge_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "common/strings.h"
#include "gram/batch/command.h"

namespace kite::gram::batch::sge {
namespace {

bool IsDigits(std::string_view s) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// The leading integer of `s` (after blanks); nullopt when it does not start with one.
std::optional<long> LeadingInt(std::string_view s) {
  s = Trim(s);
  long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

// XML character references as qstat writes them (&amp; &lt; &gt; &quot; &apos; &#N; &#xN;).
std::string Unescape(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '&') {
      out += s[i++];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += s[i++];
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    std::string rep;
    if (ent == "amp")
      rep = "&";
    else if (ent == "lt")
      rep = "<";
    else if (ent == "gt")
      rep = ">";
    else if (ent == "quot")
      rep = "\"";
    else if (ent == "apos")
      rep = "'";
    else if (ent.size() > 1 && ent[0] == '#') {
      bool hex = ent[1] == 'x' || ent[1] == 'X';
      std::string_view num = ent.substr(hex ? 2 : 1);
      unsigned v = 0;
      auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v, hex ? 16 : 10);
      if (ec == std::errc() && end == num.data() + num.size() && v > 0 && v < 128) {
        rep = std::string(1, static_cast<char>(v));
      }
    }
    if (rep.empty()) {
      out += s[i++];
      continue;
    }
    out += rep;
    i = semi + 1;
  }
  return out;
}

// The text of the first <tag>...</tag> in `body`; nullopt when there is none ("" for <tag/>).
std::optional<std::string> Element(std::string_view body, std::string_view tag) {
  std::string open = "<" + std::string(tag) + ">";
  std::string empty = "<" + std::string(tag) + "/>";
  size_t a = body.find(open);
  if (a == std::string_view::npos) {
    if (body.find(empty) != std::string_view::npos) return std::string();
    return std::nullopt;
  }
  a += open.size();
  size_t b = body.find("</" + std::string(tag) + ">", a);
  if (b == std::string_view::npos) return std::nullopt;
  return Unescape(Trim(body.substr(a, b - a)));
}

std::string SignalWords(int exit_status) {
  if (exit_status <= 128) return "";
  return " = killed by signal " + std::to_string(exit_status - 128);
}

std::string FailedWords(const AcctRecord& a) {
  std::string s = "failed " + std::to_string(a.failed);
  if (!a.failed_text.empty()) s += ": " + a.failed_text;
  return s;
}

}  // namespace

std::string JobName(const JobSpec& spec) {
  return "kite-" + spec.name;
}

std::string JobScript(const JobSpec& spec, const std::string& exec_path) {
  std::string s = "#!/bin/sh\n";
  s += "# Kite job " + spec.name +
       ", written by kite-jobmanager's sge adapter. kite-exec runs the\n";
  s += "# job and records how it ended in the control directory's status file.\n";
  return s + ExecLine(spec, exec_path);
}

Result<std::vector<std::string>> QsubArgs(const JobSpec& spec, const std::string& script_path,
                                          const std::string& pe) {
  if (spec.control_dir.find(':') != std::string::npos) {
    return Fail(ErrorCode::kInvalidInput,
                "Grid Engine reads a ':' in an output path as host:path, "
                "and the job's directory has one: " +
                    spec.control_dir);
  }
  std::vector<std::string> a = {
      "-terse",
      "-N",
      JobName(spec),
      // The script is /bin/sh's, whatever the queue's shell is.
      "-S",
      "/bin/sh",
      // Grid Engine's own output of the script (before kite-exec takes over): for diagnosing a
      // launch. The job's output goes where kite-exec puts it.
      "-o",
      spec.control_dir + "/sge.out",
      "-j",
      "y",
      // Exactly once: Grid Engine must not run the job a second time after a host failure; Kite
      // reports such a job lost and the client decides.
      "-r",
      "n",
      // A request no queue could ever satisfy is refused at submission, not left pending forever.
      "-w",
      "e",
      "-wd",
      spec.cwd,
      "-V",
  };
  const ResourceRequest& r = spec.resources;
  int slots = r.cpus > 1 ? r.cpus : 1;
  if (r.cpus > 1) {
    if (pe.empty()) {
      return Fail(ErrorCode::kInvalidInput,
                  "the job asks for " + std::to_string(r.cpus) +
                      " CPUs, and Grid Engine has no parallel environment to give them with "
                      "(the site names one in KITE_SGE_PE, or has one named smp)");
    }
    a.insert(a.end(), {"-pe", pe, std::to_string(r.cpus)});
  }
  // h_vmem is per slot: the job's memory spread over its slots, rounded up.
  if (r.memory_mb > 0) {
    long per_slot = (static_cast<long>(r.memory_mb) + slots - 1) / slots;
    a.insert(a.end(), {"-l", "h_vmem=" + std::to_string(per_slot) + "M"});
  }
  if (r.walltime_s > 0) a.insert(a.end(), {"-l", "h_rt=" + std::to_string(r.walltime_s)});
  if (!r.queue.empty()) a.insert(a.end(), {"-q", r.queue});
  if (!r.project.empty()) a.insert(a.end(), {"-P", r.project});
  a.push_back(script_path);
  return a;
}

std::vector<std::string> QsubEnvironment(const std::vector<std::string>& job_env,
                                         const std::vector<std::string>& cell_env) {
  std::vector<std::string> env;
  for (const auto& e : job_env)
    if (!e.starts_with("SGE_")) env.push_back(e);
  env.insert(env.end(), cell_env.begin(), cell_env.end());
  return env;
}

Result<std::string> ParseQsubOutput(std::string_view out) {
  std::vector<std::string> lines = Split(out, '\n');  // trimmed, empty ones dropped
  std::string line = lines.empty() ? "" : lines.back();
  std::string id = line.substr(0, line.find('.'));
  if (!IsDigits(id))
    return Fail(ErrorCode::kProtocol, "qsub printed no job number: '" + line + "'");
  return id;
}

Result<std::map<std::string, QstatRow>> ParseQstatXml(std::string_view xml) {
  std::string_view body = Trim(xml);
  if (body.find("<job_info") == std::string_view::npos || !body.ends_with("</job_info>")) {
    return Fail(ErrorCode::kProtocol, "qstat -xml printed no complete job_info document");
  }
  std::map<std::string, QstatRow> rows;
  size_t pos = 0;
  while ((pos = body.find("<job_list", pos)) != std::string_view::npos) {
    size_t end = body.find("</job_list>", pos);
    if (end == std::string_view::npos) {
      return Fail(ErrorCode::kProtocol, "qstat -xml: a job_list element is not closed");
    }
    std::string_view job = body.substr(pos, end - pos);
    pos = end + 1;
    QstatRow row;
    auto id = Element(job, "JB_job_number");
    auto state = Element(job, "state");
    if (!id || !IsDigits(*id) || !state || state->empty()) {
      return Fail(ErrorCode::kProtocol, "qstat -xml: a job_list without a job number and state");
    }
    row.id = *id;
    row.state = *state;
    row.name = Element(job, "JB_name").value_or("");
    rows.try_emplace(row.id, std::move(row));
  }
  return rows;
}

Result<AcctRecord> ParseQacct(std::string_view out) {
  std::optional<AcctRecord> last;
  AcctRecord cur;
  bool in_record = false, has_failed = false, has_exit = false;
  std::string problem;
  auto close = [&] {
    if (!in_record) return;
    if (cur.id.empty() || !has_failed || !has_exit) {
      problem = "a record without jobnumber, failed and exit_status";
    } else {
      last = cur;
    }
    cur = AcctRecord{};
    in_record = has_failed = has_exit = false;
  };
  for (const auto& raw : Split(out, '\n')) {
    std::string_view line = raw;
    if (line.starts_with("=====")) {
      close();
      in_record = true;
      continue;
    }
    if ((line.starts_with("error:") && line.find("not found") != std::string_view::npos) ||
        line == "no jobs running since startup") {  // (no accounting file yet)
      return Fail(ErrorCode::kNotFound, std::string(line));
    }
    if (!in_record) continue;
    size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) continue;
    std::string_view key = line.substr(0, sp);
    std::string_view value = Trim(line.substr(sp));
    if (key == "jobnumber") {
      if (!IsDigits(value))
        return Fail(ErrorCode::kProtocol, "qacct: bad jobnumber '" + std::string(value) + "'");
      cur.id = std::string(value);
    } else if (key == "jobname") {
      cur.name = std::string(value);
    } else if (key == "failed") {
      auto v = LeadingInt(value);
      if (!v) return Fail(ErrorCode::kProtocol, "qacct: bad failed '" + std::string(value) + "'");
      cur.failed = static_cast<int>(*v);
      size_t colon = value.find(':');
      cur.failed_text = colon == std::string_view::npos ? "" : Trim(value.substr(colon + 1));
      has_failed = true;
    } else if (key == "exit_status") {
      auto v = LeadingInt(value);
      if (!v || *v < 0 || *v > 255) {
        return Fail(ErrorCode::kProtocol, "qacct: bad exit_status '" + std::string(value) + "'");
      }
      cur.exit_status = static_cast<int>(*v);
      has_exit = true;
    } else if (key == "ru_wallclock") {
      std::string v(value);
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (end != v.c_str() && d >= 0 && d < 1e12) cur.wallclock_s = d;
    } else if (key == "category") {
      cur.category = std::string(value);
    }
  }
  close();
  if (last) return *last;
  if (!problem.empty()) return Fail(ErrorCode::kProtocol, "qacct: " + problem);
  return Fail(ErrorCode::kProtocol, "qacct printed no accounting record");
}

long HardRuntime(std::string_view category) {
  size_t at = 0;
  while ((at = category.find("h_rt=", at)) != std::string_view::npos) {
    // A word of its own: at the start, or after a blank or a comma (not "s_h_rt=").
    bool word = at == 0 || category[at - 1] == ' ' || category[at - 1] == ',';
    at += 5;
    if (!word) continue;
    size_t end = category.find_first_of(" ,", at);
    std::string_view v = category.substr(at, end == std::string_view::npos ? end : end - at);
    // Seconds, or [[h:]m:]s.
    long total = 0;
    bool ok = !v.empty();
    for (const auto& part : Split(v, ':', false)) {
      if (!IsDigits(part) || part.size() > 9) {
        ok = false;
        break;
      }
      total = total * 60 + std::atol(part.c_str());
    }
    return ok ? total : 0;
  }
  return 0;
}

Phase ClassifyState(std::string_view state) {
  if (state.empty()) return Phase::kUnknown;
  for (char c : state)
    if (std::string_view("dEhrRsStTwq").find(c) == std::string_view::npos) return Phase::kUnknown;
  auto has = [&](std::string_view letters) {
    return state.find_first_of(letters) != std::string_view::npos;
  };
  if (has("E")) return Phase::kError;
  if (has("rtsST")) return Phase::kRunning;
  return Phase::kWaiting;  // q, w, h, R, d without r/t: not started
}

std::optional<BatchOutcome> DecideOutcome(const std::string& sge_id,
                                          const std::optional<QstatRow>& row, const Ended& ended,
                                          const std::string& detail) {
  BatchOutcome o;
  std::string tail = detail.empty() ? "" : " (" + detail + ")";
  if (row) {
    switch (ClassifyState(row->state)) {
      case Phase::kWaiting:
        o.state = BatchState::kQueued;
        return o;
      case Phase::kRunning:
        o.state = BatchState::kRunning;
        return o;
      case Phase::kError:
        o.state = BatchState::kLost;
        o.reason = "Grid Engine put job " + row->id + " in its error state (" + row->state +
                   "), where it waits for an administrator (`qstat -j " + row->id +
                   "` says why); the job manager deletes it" + tail;
        return o;
      case Phase::kUnknown:
        return std::nullopt;
    }
    return std::nullopt;
  }
  // Not listed any more: over, or never there.
  if (ended.status) {
    o.state = BatchState::kEnded;
    o.exit = ended.status;
    return o;
  }
  if (ended.wrapper_alive) {
    o.state = BatchState::kRunning;
    return o;
  }
  std::string who = sge_id.empty() ? "?" : sge_id;
  if (ended.acct) {
    const AcctRecord& a = *ended.acct;
    long h_rt = HardRuntime(a.category);
    bool killed = a.exit_status > 128;
    bool past_h_rt = h_rt > 0 && killed && a.wallclock_s >= static_cast<double>(h_rt);
    if (a.failed == 37 || past_h_rt) {
      o.state = BatchState::kEnded;
      o.limit_exceeded = true;
      if (killed) {
        ExecStatus s;
        s.kind = ExecStatus::Kind::kSignaled;
        s.code = a.exit_status - 128;
        o.exit = s;
      }
      o.reason = "Grid Engine stopped job " + a.id + ": it went past " +
                 (past_h_rt ? "its time limit (walltime, h_rt=" + std::to_string(h_rt) + " s)"
                            : std::string("a limit Grid Engine enforces")) +
                 " (" + FailedWords(a) + ")";
      return o;
    }
    o.state = BatchState::kLost;
    o.reason = "Grid Engine job " + a.id + " ended (" + FailedWords(a) + ", exit status " +
               std::to_string(a.exit_status) + SignalWords(a.exit_status) +
               ") without kite-exec's record of how the job ended: deleted or killed outside "
               "Kite, or the job never started" +
               tail;
    return o;
  }
  if (ended.acct_given_up || sge_id.empty()) {
    o.state = BatchState::kLost;
    o.reason = "Grid Engine no longer knows job " + who +
               ", has no accounting record of it, and the job left no record of how it ended" +
               tail;
    return o;
  }
  return std::nullopt;  // the accounting record is not written yet
}

namespace {

struct QueueLine {
  std::string name;
  int64_t avail = 0, total = 0;
};

std::vector<QueueLine> QueueLines(std::string_view text) {
  std::vector<QueueLine> out;
  for (const auto& line : Split(std::string(text), '\n')) {
    std::vector<std::string> f;
    for (const auto& w : Split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    // CLUSTER QUEUE, CQLOAD, USED, RES, AVAIL, TOTAL, aoACDS, cdsuE
    if (f.size() < 6 || f[0] == "CLUSTER" || f[0].starts_with("---")) continue;
    auto avail = ParseCount(f[4]), total = ParseCount(f[5]);
    if (!avail || !total) continue;
    out.push_back({f[0], *avail, *total});
  }
  return out;
}

// "23.4G", "512.0M", "1.0T", "-" -> MiB.
int64_t MemoryMb(std::string_view t) {
  if (t.empty() || t == "-") return 0;
  double unit = 1.0 / (1024 * 1024);
  switch (t.back()) {
    case 'K':
      unit = 1.0 / 1024;
      break;
    case 'M':
      unit = 1;
      break;
    case 'G':
      unit = 1024;
      break;
    case 'T':
      unit = 1024 * 1024;
      break;
    default:
      break;
  }
  std::string number(
      std::isdigit(static_cast<unsigned char>(t.back())) ? t : t.substr(0, t.size() - 1));
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (end == number.c_str() || *end != '\0' || !(v >= 0) || v > 1e15) return 0;
  return static_cast<int64_t>(v * unit);
}

}  // namespace

std::vector<std::string> QueueNames(std::string_view queues) {
  std::vector<std::string> out;
  for (const auto& q : QueueLines(queues)) out.push_back(q.name);
  return out;
}

std::optional<int64_t> ParseHardRuntime(std::string_view text) {
  text = Trim(text);
  if (text == "INFINITY" || text == "infinity") return 0;
  std::vector<int64_t> parts;
  for (const auto& p : Split(std::string(text), ':')) {
    auto n = ParseCount(p);
    if (!n || *n > 1000000000) return std::nullopt;
    parts.push_back(*n);
  }
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  int64_t s = 0;
  for (int64_t p : parts) s = s * 60 + p;
  return s;
}

Result<SiteInfo> ParseSiteInfo(std::string_view queues, std::string_view jobs,
                               std::string_view hosts, const std::vector<std::string>& limits) {
  SiteInfo info;
  info.batch_system = "sge";
  auto lines = QueueLines(queues);
  if (lines.empty()) return Fail(ErrorCode::kProtocol, "qstat -g c named no cluster queue");
  for (const auto& q : lines) {
    info.queues.push_back(q.name);
    info.total_cpus += q.total;
    info.free_cpus += q.avail;
  }
  auto rows = ParseQstatXml(jobs);
  if (!rows) return Fail(rows.error());
  for (const auto& [id, row] : *rows) {
    Phase p = ClassifyState(row.state);
    if (p == Phase::kRunning) ++info.running_jobs;
    if (p == Phase::kWaiting) ++info.pending_jobs;
  }
  for (const auto& line : Split(std::string(hosts), '\n')) {
    std::vector<std::string> f;
    for (const auto& w : Split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    // HOSTNAME ARCH NCPU NSOC NCOR NTHR LOAD MEMTOT ...
    if (f.size() < 8 || f[0] == "HOSTNAME" || f[0] == "global" || f[0].starts_with("---")) continue;
    info.memory_mb = std::max(info.memory_mb, MemoryMb(f[7]));
  }
  bool unlimited = false;
  for (const auto& conf : limits) {
    for (const auto& line : Split(conf, '\n')) {
      std::string_view l = Trim(line);
      if (!l.starts_with("h_rt ") && !l.starts_with("h_rt\t")) continue;
      auto v = ParseHardRuntime(Trim(l.substr(4)));
      if (!v) continue;
      if (*v == 0) unlimited = true;
      info.max_walltime_s = std::max(info.max_walltime_s, *v);
    }
  }
  if (unlimited) info.max_walltime_s = 0;
  return info;
}

}  // namespace kite::gram::batch::sge
