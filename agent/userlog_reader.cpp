// User-log parsing and condor_wait's bookkeeping.
#include "agent/userlog_reader.h"

#include <charconv>

#include "common/htcondor_codes.h"

namespace kite::agent {
namespace {

// Reads a run of 1 to 9 digits at `s[*pos]` into `*out`, advancing `*pos`.
bool ReadNumber(std::string_view s, size_t* pos, int* out) {
  size_t end = *pos;
  while (end < s.size() && end - *pos < 10 && s[end] >= '0' && s[end] <= '9') ++end;
  if (end == *pos || end - *pos > 9) return false;
  std::from_chars(s.data() + *pos, s.data() + end, *out);
  *pos = end;
  return true;
}

bool Expect(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

// The next space-separated word at `*pos` (which must start it), advancing past it and one space.
std::string_view Word(std::string_view s, size_t* pos) {
  size_t end = s.find(' ', *pos);
  if (end == std::string_view::npos) end = s.size();
  auto w = s.substr(*pos, end - *pos);
  *pos = end < s.size() ? end + 1 : end;
  return w;
}

// "NNN (C.P.S) DATE TIME HEADLINE" into `e`; false when the line is not shaped so.
bool ParseHeader(std::string_view line, UserLogEvent* e) {
  if (line.size() < 4 || line[3] != ' ') return false;
  for (int i = 0; i < 3; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
  }
  e->code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
  size_t pos = 4;
  if (!Expect(line, &pos, '(') || !ReadNumber(line, &pos, &e->cluster) ||
      !Expect(line, &pos, '.') || !ReadNumber(line, &pos, &e->proc) || !Expect(line, &pos, '.') ||
      !ReadNumber(line, &pos, &e->subproc) || !Expect(line, &pos, ')') || !Expect(line, &pos, ' '))
    return false;
  auto date = Word(line, &pos);
  auto time = Word(line, &pos);
  // A date has digits and '-' or '/'; a time digits and ':' (perhaps fractions or a zone).
  auto has = [](std::string_view w, char c) { return w.find(c) != std::string_view::npos; };
  bool digit = !date.empty() && date[0] >= '0' && date[0] <= '9';
  if (!digit || !(has(date, '-') || has(date, '/')) || !has(time, ':')) return false;
  e->time = std::string(date) + " " + std::string(time);
  e->headline = std::string(line.substr(pos));
  return true;
}

std::string Quoted(std::string_view line) {
  constexpr size_t kMax = 60;
  std::string out;
  for (char c : line.substr(0, kMax)) {
    unsigned char u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  return "'" + out + (line.size() > kMax ? "...'" : "'");
}

}  // namespace

Result<UserLogChunk> ParseUserLog(std::string_view text, size_t first_line) {
  UserLogChunk out;
  size_t pos = 0, line_no = first_line;
  bool in_entry = false;
  size_t entry_start = 0;
  UserLogEvent event;
  auto bad = [&](const std::string& what) {
    return Fail(ErrorCode::kInvalidInput, "line " + std::to_string(line_no) + ": " + what);
  };
  for (;;) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;  // a line still being written
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\0') != std::string_view::npos) return bad("a NUL byte: not a text user log");
    UserLogEvent next;
    bool header = !line.starts_with('\t') && ParseHeader(line, &next);
    if (in_entry && header) {
      // The entry before never got its "...": its writer stopped mid-entry for good, as a new
      // entry follows. Its header is whole, so it is kept.
      event.text = std::string(text.substr(entry_start, pos - entry_start));
      out.events.push_back(std::move(event));
      out.consumed = pos;
      out.lines = line_no - first_line;
      in_entry = false;
    }
    if (!in_entry) {
      if (line.starts_with("<?xml") || line.starts_with("<c>"))
        return bad("an XML user log (log_xml = true); only the text format can be read");
      if (!line.empty() && !header)
        return bad("not a user log event (NNN (C.P.S) DATE TIME ...): " + Quoted(line));
      if (header) {
        event = std::move(next);
        entry_start = pos;
        in_entry = true;
      } else {
        out.consumed = nl + 1;  // a blank line between entries
        out.lines = line_no - first_line + 1;
      }
    } else if (line == "...") {
      event.text = std::string(text.substr(entry_start, nl + 1 - entry_start));
      out.events.push_back(std::move(event));
      out.consumed = nl + 1;
      out.lines = line_no - first_line + 1;
      in_entry = false;
    }
    pos = nl + 1;
    ++line_no;
  }
  return out;
}

bool LogWait::Add(const UserLogEvent& e) {
  if (options_.cluster >= 0 && e.cluster != options_.cluster) return false;
  if (options_.proc >= 0 && e.proc != options_.proc) return false;
  JobState& s = jobs_.try_emplace({e.cluster, e.proc}, JobState::kSubmitted).first->second;
  if (s == JobState::kEnded) return true;  // nothing after the end changes it
  switch (e.code) {
    case kEventTerminated:
    case kEventAborted:
      s = JobState::kEnded;
      ++ended_;
      break;
    case kEventExecute:
      s = JobState::kRunning;
      break;
    case kEventHeld:
      s = JobState::kHeld;
      break;
    case kEventEvicted:
    case kEventReleased:
      s = JobState::kSubmitted;
      break;
    default:
      break;
  }
  return true;
}

bool LogWait::Done() const {
  if (options_.num > 0) return ended_ >= static_cast<size_t>(options_.num);
  return !jobs_.empty() && ended_ == jobs_.size();
}

size_t LogWait::held() const {
  size_t n = 0;
  for (auto& [id, s] : jobs_) n += s == JobState::kHeld;
  return n;
}

std::string LogWait::Pending(size_t max) const {
  std::string out;
  size_t n = 0;
  for (auto& [id, s] : jobs_) {
    if (s == JobState::kEnded) continue;
    if (n++ == max) return out + " ...";
    out += (out.empty() ? "" : " ") + std::to_string(id.first) + "." + std::to_string(id.second);
  }
  return out;
}

}  // namespace kite::agent
