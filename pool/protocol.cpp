// The pool protocol's frames and their JSON headers.
#include "pool/protocol.h"

#include <array>
#include <boost/json.hpp>
#include <limits>
#include <utility>

namespace kite::pool {
namespace {

namespace json = boost::json;

constexpr std::array<std::pair<MsgType, std::string_view>, 27> kTypeNames = {{
    {MsgType::kHello, "hello"},
    {MsgType::kSlot, "slot"},
    {MsgType::kStarted, "started"},
    {MsgType::kOutput, "output"},
    {MsgType::kEnded, "ended"},
    {MsgType::kVacated, "vacated"},
    {MsgType::kRefused, "refused"},
    {MsgType::kBye, "bye"},
    {MsgType::kSuspended, "suspended"},
    {MsgType::kContinued, "continued"},
    {MsgType::kCheckpointed, "checkpointed"},
    {MsgType::kNotCheckpointed, "not_checkpointed"},
    {MsgType::kWelcome, "welcome"},
    {MsgType::kRefuse, "refuse"},
    {MsgType::kActivate, "activate"},
    {MsgType::kInput, "input"},
    {MsgType::kGo, "go"},
    {MsgType::kVacate, "vacate"},
    {MsgType::kAck, "ack"},
    {MsgType::kSuspend, "suspend"},
    {MsgType::kContinue, "continue"},
    {MsgType::kKill, "kill"},
    {MsgType::kRewind, "rewind"},
    {MsgType::kRewound, "rewound"},
    {MsgType::kRsc, "rsc"},
    {MsgType::kRscReply, "rsc_reply"},
    {MsgType::kCheckpoint, "checkpoint"},
}};

constexpr std::array<std::pair<RunExit::Kind, std::string_view>, 3> kExitNames = {{
    {RunExit::Kind::kExited, "exited"},
    {RunExit::Kind::kSignaled, "signaled"},
    {RunExit::Kind::kFailed, "failed"},
}};

std::unexpected<Error> Bad(std::string what) {
  return Fail(ErrorCode::kInvalidInput, "pool protocol: " + std::move(what));
}

// What each kind must carry.
struct Needs {
  bool slot = false, job = false, file = false;
};
Needs NeedsOf(MsgType t) {
  switch (t) {
    case MsgType::kSlot:
      return {.slot = true};
    case MsgType::kStarted:
    case MsgType::kSuspended:
    case MsgType::kContinued:
    case MsgType::kCheckpointed:
    case MsgType::kNotCheckpointed:
    case MsgType::kEnded:
    case MsgType::kVacated:
    case MsgType::kRefused:
    case MsgType::kActivate:
    case MsgType::kVacate:
      return {.slot = true, .job = true};
    case MsgType::kGo:
    case MsgType::kAck:
    case MsgType::kRsc:
    case MsgType::kRscReply:
    case MsgType::kCheckpoint:
      return {.job = true};
    case MsgType::kInput:
    case MsgType::kOutput:
      return {.job = true, .file = true};
    default:
      return {};
  }
}

Result<std::string> Str(const json::object& o, std::string_view key, bool required) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) {
    if (required) return Bad(std::string(key) + " is missing");
    return std::string();
  }
  if (!v->is_string()) return Bad(std::string(key) + " must be a string");
  std::string s(v->as_string());
  if (required && s.empty()) return Bad(std::string(key) + " is empty");
  return s;
}

Result<int64_t> Int(const json::object& o, std::string_view key, int64_t lo, int64_t hi,
                    int64_t fallback) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return fallback;
  int64_t n = 0;
  if (v->is_int64()) {
    n = v->as_int64();
  } else if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(hi)) {
    n = static_cast<int64_t>(v->as_uint64());
  } else {
    return Bad(std::string(key) + " must be an integer");
  }
  if (n < lo || n > hi) return Bad(std::string(key) + " is out of range");
  return n;
}

Result<double> Num(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return 0.0;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  return Bad(std::string(key) + " must be a number");
}

Result<bool> Bool(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return false;
  if (!v->is_bool()) return Bad(std::string(key) + " must be true or false");
  return v->as_bool();
}

const json::array* Array(const json::object& o, std::string_view key, Status* err) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return nullptr;
  if (!v->is_array()) {
    *err = Bad(std::string(key) + " must be an array");
    return nullptr;
  }
  return &v->as_array();
}

// Reads each element of array `key` (objects) with `fn`.
template <typename T, typename Fn>
Status ReadList(const json::object& o, std::string_view key, std::vector<T>* out, Fn fn) {
  Status err;
  const json::array* a = Array(o, key, &err);
  if (!err) return err;
  if (!a) return {};
  for (const auto& e : *a) {
    if (!e.is_object()) return Bad(std::string(key) + " must hold objects");
    auto item = fn(e.as_object());
    if (!item) return std::unexpected(item.error());
    out->push_back(std::move(*item));
  }
  return {};
}

#define KITE_TRY(var, expr)                              \
  auto var##_r = (expr);                                 \
  if (!var##_r) return std::unexpected(var##_r.error()); \
  auto var = std::move(*var##_r)

Result<SlotAd> ReadSlotAd(const json::object& o) {
  KITE_TRY(name, Str(o, "name", true));
  KITE_TRY(ad, Str(o, "ad", true));
  return SlotAd{std::move(name), std::move(ad)};
}

Result<RunRef> ReadRunRef(const json::object& o) {
  KITE_TRY(slot, Str(o, "slot", true));
  KITE_TRY(job, Str(o, "job", true));
  KITE_TRY(run, Str(o, "run", true));
  return RunRef{std::move(slot), std::move(job), std::move(run)};
}

Result<FileInfo> ReadFileInfo(const json::object& o) {
  FileInfo f;
  KITE_TRY(path, Str(o, "path", true));
  if (auto st = CheckRelativePath(path); !st) return std::unexpected(st.error());
  KITE_TRY(size, Int(o, "size", 0, std::numeric_limits<int64_t>::max(), 0));
  KITE_TRY(mode, Int(o, "mode", 0, 07777, 0644));
  f.path = std::move(path);
  f.size = static_cast<uint64_t>(size);
  f.mode = static_cast<uint32_t>(mode);
  return f;
}

Status ReadExit(const json::object& o, RunExit* out) {
  auto* v = o.if_contains("exit");
  if (!v || v->is_null()) return {};
  if (!v->is_object()) return Bad("exit must be an object");
  const auto& e = v->as_object();
  KITE_TRY(kind, Str(e, "kind", true));
  bool known = false;
  for (auto [k, n] : kExitNames) {
    if (n == kind) {
      out->kind = k;
      known = true;
    }
  }
  if (!known) return Bad("exit.kind '" + kind + "' is not exited, signaled or failed");
  KITE_TRY(code,
           Int(e, "code", std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), 0));
  KITE_TRY(message, Str(e, "message", false));
  out->code = static_cast<int>(code);
  out->message = std::move(message);
  return {};
}

Status ReadUsage(const json::object& o, RunUsage* out) {
  auto* v = o.if_contains("usage");
  if (!v || v->is_null()) return {};
  if (!v->is_object()) return Bad("usage must be an object");
  const auto& u = v->as_object();
  KITE_TRY(user, Num(u, "user_cpu"));
  KITE_TRY(sys, Num(u, "sys_cpu"));
  KITE_TRY(rss, Int(u, "rss_kb", 0, std::numeric_limits<int64_t>::max(), 0));
  KITE_TRY(start, Num(u, "start"));
  KITE_TRY(end, Num(u, "end"));
  *out = RunUsage{user, sys, rss, start, end};
  return {};
}

uint32_t ReadU32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

void PutU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xff));
}

}  // namespace

std::string_view MsgTypeName(MsgType type) {
  for (auto [t, n] : kTypeNames) {
    if (t == type) return n;
  }
  return "";
}

std::optional<MsgType> ParseMsgType(std::string_view name) {
  for (auto [t, n] : kTypeNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

Status CheckRelativePath(std::string_view path) {
  if (path.empty()) return Bad("a file path is empty");
  if (path.front() == '/') return Bad("file path '" + std::string(path) + "' is absolute");
  if (path.find('\0') != std::string_view::npos) return Bad("a file path holds a NUL byte");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return Bad("file path '" + std::string(path) + "' has an empty, '.' or '..' component");
    start = end + 1;
  }
  return {};
}

std::string ToJson(const Message& m) {
  json::object o;
  o["type"] = MsgTypeName(m.type);
  auto put = [&o](std::string_view key, const std::string& v) {
    if (!v.empty()) o[key] = v;
  };
  if (m.type == MsgType::kHello || m.type == MsgType::kWelcome) o["version"] = m.version;
  put("name", m.name);
  put("credential", m.credential);
  put("slot", m.slot);
  put("job", m.job);
  put("run", m.run);
  put("ad", m.ad);
  put("reason", m.reason);
  put("path", m.path);
  put("in_place", m.in_place);
  put("remote_io", m.remote_io);
  if (NeedsOf(m.type).file) {
    o["offset"] = m.offset;
    o["last"] = m.last;
    o["mode"] = m.mode;
  }
  if (m.checkpoint) o["checkpoint"] = true;
  if (m.streaming) o["streaming"] = true;
  if (m.pid != 0) o["pid"] = m.pid;
  if (m.type == MsgType::kRsc || m.type == MsgType::kRscReply) o["chan"] = m.chan;
  if (!m.slots.empty()) {
    json::array a;
    for (const auto& s : m.slots) a.push_back(json::object{{"name", s.name}, {"ad", s.ad}});
    o["slots"] = std::move(a);
  }
  if (!m.runs.empty()) {
    json::array a;
    for (const auto& r : m.runs)
      a.push_back(json::object{{"slot", r.slot}, {"job", r.job}, {"run", r.run}});
    o["runs"] = std::move(a);
  }
  if (!m.files.empty()) {
    json::array a;
    for (const auto& f : m.files)
      a.push_back(json::object{{"path", f.path}, {"size", f.size}, {"mode", f.mode}});
    o["files"] = std::move(a);
  }
  if (m.type == MsgType::kEnded) {
    std::string_view kind;
    for (auto [k, n] : kExitNames) {
      if (k == m.exit.kind) kind = n;
    }
    json::object e{{"kind", kind}, {"code", m.exit.code}};
    if (!m.exit.message.empty()) e["message"] = m.exit.message;
    o["exit"] = std::move(e);
  }
  if (m.type == MsgType::kEnded || m.type == MsgType::kVacated ||
      m.type == MsgType::kCheckpointed) {
    if (m.type == MsgType::kCheckpointed && m.took > 0) o["took"] = m.took;
    o["usage"] = json::object{{"user_cpu", m.usage.user_cpu},
                              {"sys_cpu", m.usage.sys_cpu},
                              {"rss_kb", m.usage.rss_kb},
                              {"start", m.usage.start},
                              {"end", m.usage.end}};
  }
  return json::serialize(o);
}

Result<Message> ParseMessage(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Bad("header is not JSON: " + ec.message());
  if (!v.is_object()) return Bad("header must be a JSON object");
  const auto& o = v.as_object();
  KITE_TRY(type_name, Str(o, "type", true));
  auto type = ParseMsgType(type_name);
  if (!type) return Bad("unknown message type '" + type_name + "'");
  Message m;
  m.type = *type;
  Needs needs = NeedsOf(m.type);
  KITE_TRY(version, Int(o, "version", 0, std::numeric_limits<int>::max(), kProtocolVersion));
  m.version = static_cast<int>(version);
  KITE_TRY(name, Str(o, "name", m.type == MsgType::kHello));
  KITE_TRY(credential, Str(o, "credential", false));
  KITE_TRY(slot, Str(o, "slot", needs.slot));
  KITE_TRY(job, Str(o, "job", needs.job));
  KITE_TRY(run, Str(o, "run", needs.job));
  KITE_TRY(ad, Str(o, "ad", m.type == MsgType::kSlot || m.type == MsgType::kActivate));
  KITE_TRY(reason, Str(o, "reason", false));
  KITE_TRY(path, Str(o, "path", needs.file));
  if (needs.file) {
    if (auto st = CheckRelativePath(path); !st) return std::unexpected(st.error());
  }
  KITE_TRY(in_place, Str(o, "in_place", false));
  if (!in_place.empty() && (m.type != MsgType::kActivate || in_place.front() != '/' ||
                            in_place.find('\0') != std::string::npos)) {
    return Bad("in_place must be an absolute directory, and only in activate");
  }
  KITE_TRY(remote_io, Str(o, "remote_io", false));
  if (!remote_io.empty() &&
      (m.type != MsgType::kStarted || (remote_io != "fuse" && remote_io != "preload"))) {
    return Bad("remote_io must be fuse or preload, and only in started");
  }
  KITE_TRY(offset, Int(o, "offset", 0, std::numeric_limits<int64_t>::max(), 0));
  KITE_TRY(last, Bool(o, "last"));
  KITE_TRY(checkpoint, Bool(o, "checkpoint"));
  KITE_TRY(streaming, Bool(o, "streaming"));
  if (streaming && (m.type != MsgType::kOutput || checkpoint || last))
    return Bad("streaming is only for an output piece that is neither a checkpoint's nor the last");
  KITE_TRY(mode, Int(o, "mode", 0, 07777, 0644));
  KITE_TRY(pid, Int(o, "pid", 0, std::numeric_limits<int32_t>::max(), 0));
  m.pid = pid;
  KITE_TRY(took, Num(o, "took"));
  if (!(took >= 0 && took < 1e9) || (took > 0 && m.type != MsgType::kCheckpointed))
    return Bad("took must be seconds, and only in checkpointed");
  m.took = took;
  KITE_TRY(chan, Int(o, "chan", 0, std::numeric_limits<int32_t>::max(), 0));
  m.chan = chan;
  m.name = std::move(name);
  m.credential = std::move(credential);
  m.slot = std::move(slot);
  m.job = std::move(job);
  m.run = std::move(run);
  m.ad = std::move(ad);
  m.reason = std::move(reason);
  m.path = std::move(path);
  m.in_place = std::move(in_place);
  m.remote_io = std::move(remote_io);
  m.offset = static_cast<uint64_t>(offset);
  m.last = last;
  m.checkpoint = checkpoint;
  m.streaming = streaming;
  m.mode = static_cast<uint32_t>(mode);
  if (auto st = ReadList(o, "slots", &m.slots, ReadSlotAd); !st) return std::unexpected(st.error());
  if (auto st = ReadList(o, "runs", &m.runs, ReadRunRef); !st) return std::unexpected(st.error());
  if (auto st = ReadList(o, "files", &m.files, ReadFileInfo); !st)
    return std::unexpected(st.error());
  if (auto st = ReadExit(o, &m.exit); !st) return std::unexpected(st.error());
  if (auto st = ReadUsage(o, &m.usage); !st) return std::unexpected(st.error());
  return m;
}

#undef KITE_TRY

std::string EncodeFrame(const Message& m, std::string_view body) {
  std::string header = ToJson(m);
  std::string out;
  out.reserve(8 + header.size() + body.size());
  PutU32(&out, static_cast<uint32_t>(header.size()));
  PutU32(&out, static_cast<uint32_t>(body.size()));
  out += header;
  out += body;
  return out;
}

Result<std::optional<Frame>> FrameReader::Next() {
  size_t avail = buf_.size() - pos_;
  if (avail < 8) return std::optional<Frame>();
  uint32_t hlen = ReadU32(buf_.data() + pos_);
  uint32_t blen = ReadU32(buf_.data() + pos_ + 4);
  if (hlen == 0 || hlen > kMaxHeader)
    return Bad("frame header of " + std::to_string(hlen) + " bytes (limit " +
               std::to_string(kMaxHeader) + ")");
  if (blen > kMaxBody)
    return Bad("frame body of " + std::to_string(blen) + " bytes (limit " +
               std::to_string(kMaxBody) + ")");
  if (avail < 8 + static_cast<size_t>(hlen) + blen) return std::optional<Frame>();
  auto msg = ParseMessage(std::string_view(buf_).substr(pos_ + 8, hlen));
  if (!msg) return std::unexpected(msg.error());
  Frame f{std::move(*msg), buf_.substr(pos_ + 8 + hlen, blen)};
  pos_ += 8 + static_cast<size_t>(hlen) + blen;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

}  // namespace kite::pool
