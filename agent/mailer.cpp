// The mailer: message formatting, the outbox, and the SMTP worker.
#include "agent/mailer.h"

#include <curl/curl.h>
#include <dirent.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>

#include "common/clock.h"
#include "common/files.h"
#include "common/strings.h"

namespace kite::agent {
namespace {

std::string RfcDate(double now) {
  std::time_t t = static_cast<std::time_t>(now);
  struct tm tm {};
  gmtime_r(&t, &tm);
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d +0000", kDays[tm.tm_wday],
                tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

std::string Base64(std::string_view in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                 static_cast<uint8_t>(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += k[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Body lines end in CRLF and are at most 998 octets (longer ones are broken).
std::string BodyText(std::string_view body) {
  std::string out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t nl = body.find('\n', start);
    std::string_view l = body.substr(start, nl == std::string_view::npos ? nl : nl - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    do {
      std::string_view piece = l.substr(0, 990);
      for (char c : piece) out += (c == '\r' || c == '\0') ? ' ' : c;
      out += "\r\n";
      l.remove_prefix(piece.size());
    } while (!l.empty());
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

bool ConnectionError(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_USE_SSL_FAILED:
    case CURLE_LOGIN_DENIED:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_ABORTED_BY_CALLBACK:
      return true;
    default:
      return false;
  }
}

struct Upload {
  std::string_view data;
  size_t pos = 0;
};

size_t ReadChunk(char* buf, size_t size, size_t n, void* p) {
  auto* u = static_cast<Upload*>(p);
  size_t len = std::min(size * n, u->data.size() - u->pos);
  std::copy_n(u->data.data() + u->pos, len, buf);
  u->pos += len;
  return len;
}

int Progress(void* p, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(p)->load() ? 1 : 0;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::string HeaderText(std::string_view text) {
  std::string clean;
  bool ascii = true;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      clean += ' ';
    } else {
      if (u >= 0x80) ascii = false;
      clean += c;
    }
  }
  if (ascii) {
    // "=?" starts an encoded word; spell it safely when the text has one of its own.
    if (clean.find("=?") == std::string::npos && clean.size() <= 900) return clean;
  }
  // RFC 2047 encoded words of at most 75 characters, split on UTF-8 character boundaries.
  std::string out;
  size_t i = 0;
  while (i < clean.size()) {
    size_t end = std::min(clean.size(), i + 45);
    while (end > i && end < clean.size() && (static_cast<unsigned char>(clean[end]) & 0xC0) == 0x80)
      --end;
    if (end == i) end = std::min(clean.size(), i + 45);
    if (!out.empty()) out += "\r\n ";
    out += "=?UTF-8?B?" + Base64(std::string_view(clean).substr(i, end - i)) + "?=";
    i = end;
  }
  return out;
}

std::string FormatMessage(const MailMessage& m, const std::string& from, double now,
                          const std::string& message_id) {
  std::string to;
  for (auto& a : m.to) to += (to.empty() ? "" : ", ") + a;
  std::string out;
  out += "Date: " + RfcDate(now) + "\r\n";
  out += "Message-ID: <" + message_id + ">\r\n";
  out += "From: " + from + "\r\n";
  out += "To: " + to + "\r\n";
  out += "Subject: " + HeaderText(m.subject) + "\r\n";
  out += "MIME-Version: 1.0\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Transfer-Encoding: 8bit\r\n";
  out += "Auto-Submitted: auto-generated\r\n";
  out += "\r\n";
  out += BodyText(m.body);
  return out;
}

std::string FormatOutboxEntry(const OutboxEntry& e) {
  std::string out = "kite-outbox 1\nfrom " + e.from + "\n";
  for (auto& r : e.rcpt) out += "rcpt " + r + "\n";
  out += "\n";
  out += e.message;
  return out;
}

Result<OutboxEntry> ParseOutboxEntry(std::string_view text) {
  OutboxEntry e;
  size_t pos = 0;
  auto next_line = [&](std::string_view* line) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return false;
    *line = text.substr(pos, nl - pos);
    pos = nl + 1;
    return true;
  };
  std::string_view line;
  if (!next_line(&line) || line != "kite-outbox 1")
    return Fail(ErrorCode::kInvalidInput, "not a kite outbox file");
  for (;;) {
    if (!next_line(&line))
      return Fail(ErrorCode::kInvalidInput, "outbox file ends in its envelope");
    if (line.empty()) break;
    if (line.starts_with("from ")) {
      auto a = ParseMailAddress(line.substr(5));
      if (!a) return Fail(a.error());
      e.from = *a;
    } else if (line.starts_with("rcpt ")) {
      auto a = ParseMailAddress(line.substr(5));
      if (!a) return Fail(a.error());
      e.rcpt.push_back(*a);
    } else {
      return Fail(ErrorCode::kInvalidInput, "bad envelope line in outbox file");
    }
  }
  if (e.from.empty() || e.rcpt.empty())
    return Fail(ErrorCode::kInvalidInput, "outbox file without sender or recipients");
  e.message = std::string(text.substr(pos));
  return e;
}

Mailer::Mailer(MailOptions options, std::string outbox_dir)
    : options_(std::move(options)), dir_(std::move(outbox_dir)) {
  from_ = options_.from.empty() ? "kite@" + UidDomain(options_) : options_.from;
}

Mailer::~Mailer() {
  Stop();
}

Status Mailer::Start() {
  if (auto st = MakeDirs(dir_, 0700); !st) return st;
  if (auto st = MakeDirs(DirName(dir_) + "/failed", 0700); !st) return st;
  // Half-written messages of an agent that crashed while writing them were never queued.
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (dirent* ent = ::readdir(d)) {
      std::string n = ent->d_name;
      if (n.find(".eml.tmp.") != std::string::npos) ::unlink((dir_ + "/" + n).c_str());
    }
    ::closedir(d);
  }
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  abort_ = false;
  worker_ = std::thread([this] { Run(); });
  return {};
}

void Mailer::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_ && !worker_.joinable()) return;
    stop_ = true;
  }
  abort_ = true;
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Status Mailer::Send(const MailMessage& m) {
  double now = WallNow();
  OutboxEntry e;
  e.from = from_;
  e.rcpt = m.to;
  if (!options_.admin.empty() &&
      std::find(e.rcpt.begin(), e.rcpt.end(), options_.admin) == e.rcpt.end())
    e.rcpt.push_back(options_.admin);  // a blind copy: in the envelope, not in To:
  if (e.rcpt.empty()) return Fail(ErrorCode::kInvalidInput, "a message needs a recipient");
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%016lld", static_cast<long long>(now * 1e6));
  std::string id =
      std::string(stamp) + "." + std::to_string(::getpid()) + "." + std::to_string(++seq_);
  e.message = FormatMessage(m, from_, now, id + "@" + UidDomain(options_));
  if (auto st = WriteFileAtomic(dir_ + "/" + id + ".eml", FormatOutboxEntry(e), 0600); !st)
    return st;
  {
    std::lock_guard lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
  return {};
}

std::string Mailer::Deliver(const OutboxEntry& e, bool* server_down) {
  *server_down = false;
  auto u = ParseSmtpUrl(options_.smtp_url);
  if (!u) {
    *server_down = true;
    return u.error().message();
  }
  CURL* c = curl_easy_init();
  if (!c) {
    *server_down = true;
    return "curl_easy_init failed";
  }
  std::string url = options_.smtp_url;
  if (!url.ends_with("/")) url += "/";
  Upload up{e.message, 0};
  curl_slist* rcpt = nullptr;
  for (auto& r : e.rcpt) rcpt = curl_slist_append(rcpt, ("<" + r + ">").c_str());
  std::string password;
  if (!options_.password_file.empty()) {
    auto pw = ReadFile(options_.password_file);
    if (!pw) {
      curl_slist_free_all(rcpt);
      curl_easy_cleanup(c);
      *server_down = true;
      return "password_file: " + pw.error().message();
    }
    password = std::string(Trim(*pw));
  }
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_MAIL_FROM, ("<" + e.from + ">").c_str());
  curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
  curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(c, CURLOPT_READFUNCTION, ReadChunk);
  curl_easy_setopt(c, CURLOPT_READDATA, &up);
  curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(e.message.size()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  long timeout_ms = static_cast<long>(options_.timeout * 1000);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 30000L));
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &abort_);
  if (options_.starttls) curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (!options_.username.empty()) {
    curl_easy_setopt(c, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, password.c_str());
  }
  CURLcode rc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(rcpt);
  curl_easy_cleanup(c);
  if (!password.empty()) std::fill(password.begin(), password.end(), '\0');
  if (rc == CURLE_OK) return "";
  *server_down = ConnectionError(rc) && code < 500;
  std::string msg = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  if (code > 0) msg += " (server said " + std::to_string(code) + ")";
  return msg;
}

void Mailer::Run() {
  double server_next = 0, server_backoff = 0;
  for (;;) {
    double now = WallNow();
    double wake_at = now + 3600;
    if (now >= server_next) {
      // Oldest first: names start with the time they were written.
      std::vector<std::string> names;
      if (DIR* d = ::opendir(dir_.c_str())) {
        while (dirent* ent = ::readdir(d)) {
          std::string n = ent->d_name;
          if (n.ends_with(".eml")) names.push_back(n);
        }
        ::closedir(d);
      }
      std::sort(names.begin(), names.end());
      for (auto it = retry_.begin(); it != retry_.end();) {
        it = std::binary_search(names.begin(), names.end(), it->first) ? std::next(it)
                                                                       : retry_.erase(it);
      }
      for (auto& n : names) {
        {
          std::lock_guard lock(mu_);
          if (stop_) return;
        }
        auto r = retry_.find(n);
        if (r != retry_.end() && r->second.next > WallNow()) {
          wake_at = std::min(wake_at, r->second.next);
          continue;
        }
        std::string path = dir_ + "/" + n;
        auto text = ReadFile(path);
        if (!text) continue;  // sent and removed by an earlier round, or unreadable
        auto entry = ParseOutboxEntry(*text);
        if (!entry) {
          spdlog::error("mail: {} is not a message Kite can send ({}); moved to mail/failed", path,
                        entry.error().message());
          ::rename(path.c_str(), (DirName(dir_) + "/failed/" + n).c_str());
          continue;
        }
        bool down = false;
        std::string err = Deliver(*entry, &down);
        {
          std::lock_guard lock(mu_);
          if (stop_) return;
        }
        if (err.empty()) {
          ::unlink(path.c_str());
          retry_.erase(n);
          server_backoff = 0;
          spdlog::info("mail: sent {} to {}", n, Join(entry->rcpt));
          continue;
        }
        Retry& rt = retry_[n];
        ++rt.attempts;
        if (down) {
          server_backoff =
              server_backoff == 0
                  ? options_.retry_interval
                  : std::min(server_backoff * 2, std::max(3600.0, options_.retry_interval));
          server_next = WallNow() + server_backoff;
          spdlog::warn("mail: cannot send {} via {}: {}; trying again in {:.0f} s", n,
                       options_.smtp_url, err, server_backoff);
          break;
        }
        double wait = std::min(options_.retry_interval * std::pow(2.0, rt.attempts - 1),
                               std::max(3600.0, options_.retry_interval));
        rt.next = WallNow() + wait;
        wake_at = std::min(wake_at, rt.next);
        spdlog::warn("mail: {} to {} not accepted: {}; trying again in {:.0f} s (attempt {})", n,
                     Join(entry->rcpt), err, wait, rt.attempts);
      }
    }
    if (server_next > WallNow()) wake_at = std::min(wake_at, server_next);
    std::unique_lock lock(mu_);
    double wait = std::max(0.0, wake_at - WallNow());
    cv_.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(wait * 1e6)),
                 [this] { return stop_ || wake_; });
    if (stop_) return;
    if (wake_ && WallNow() < server_next) {
      // New mail while the server is down waits for the back-off, not for a new failure.
      wake_ = false;
      continue;
    }
    wake_ = false;
  }
}

}  // namespace kite::agent
