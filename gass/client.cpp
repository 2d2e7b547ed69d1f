// The GASS client over one reused libcurl easy handle.
#include "gass/client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "common/strings.h"
#include "gass/protocol.h"
#include "gass/unique_fd.h"

namespace kite::gass {
namespace {

constexpr size_t kMaxErrorBody = 64u << 10;
constexpr long kTransferBuffer = 256L << 10;

// One request and what came back. Callbacks fill it during curl_easy_perform.
struct Exchange {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the final response; names lower-case
  bool in_body = false;
  // Receives 2xx body bytes; returns false (with `sink_error` set) to abort the transfer.
  std::function<bool(Exchange&, const char*, size_t)> sink;
  std::optional<Error> sink_error;
  std::string error_body;  // body of a non-2xx reply (bounded)

  const std::string* Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? nullptr : &it->second;
  }
};

size_t OnHeader(char* p, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view line(p, size * n);
  if (StartsWith(line, "HTTP/")) {  // a new response (after 100 Continue, or a redirect)
    ex->headers.clear();
    size_t sp = line.find(' ');
    ex->status = sp == line.npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon != line.npos) {
    ex->headers[ToLower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
  }
  return size * n;
}

size_t OnBody(char* p, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t len = size * n;
  if (ex->status < 200 || ex->status >= 300) {
    size_t room = kMaxErrorBody - std::min(kMaxErrorBody, ex->error_body.size());
    ex->error_body.append(p, std::min(room, len));
    return len;
  }
  if (!ex->sink) return len;
  return ex->sink(*ex, p, len) ? len : 0;
}

ErrorCode CodeOfStatus(long status) {
  switch (status) {
    case 403:
      return ErrorCode::kAuthFailed;
    case 404:
      return ErrorCode::kNotFound;
    case 400:
    case 405:
    case 411:
    case 413:
    case 416:
    case 431:
      return ErrorCode::kInvalidInput;
    case 500:
      return ErrorCode::kIo;
    case 502:
    case 503:
    case 504:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kProtocol;
  }
}

// The server's {"error": "..."} message, or the raw start of the body.
std::string ServerMessage(const std::string& body) {
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const auto* e = v.as_object().if_contains("error"); e && e->is_string()) {
      return std::string(e->as_string());
    }
  }
  return body.substr(0, 200);
}

std::optional<uint64_t> HeaderNumber(const Exchange& ex, const std::string& name) {
  const std::string* v = ex.Header(name);
  return v ? ParseDecimal(*v) : std::nullopt;
}

Status WriteAll(int fd, const char* p, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return FailErrno("write local file", errno);
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return {};
}

// Where a 206 body starts (from Content-Range); 0 for a 200; nullopt when unusable.
std::optional<uint64_t> RangeStart(const Exchange& ex) {
  if (ex.status == 200) return 0;
  const std::string* h = ex.Header("content-range");
  if (ex.status != 206 || h == nullptr) return std::nullopt;
  auto cr = ParseContentRange(*h);
  if (!cr || !cr->range) return std::nullopt;
  return cr->range->first;
}

// The complete size a 206 or 416 reply states in Content-Range.
std::optional<uint64_t> CompleteSize(const Exchange& ex) {
  const std::string* h = ex.Header("content-range");
  if (h == nullptr) return std::nullopt;
  auto cr = ParseContentRange(*h);
  return cr ? cr->complete_size : std::nullopt;
}

enum class Method { kGet, kHead, kPut };

}  // namespace

// `options.tls` must stay at one address: ConfigureCurl points the handle at it.
struct GassClient::Impl {
  GassClientOptions options;
  CURL* curl = nullptr;
  uint64_t connections = 0;
  char error_buffer[CURL_ERROR_SIZE] = {};

  ~Impl() {
    if (curl) curl_easy_cleanup(curl);
  }
  Status Perform(Method method, std::string_view path, const std::vector<std::string>& headers,
                 std::string_view upload, Exchange& ex);
  Status Setup(Method method, std::string_view path, curl_slist* headers, std::string_view upload,
               Exchange& ex);
  // Downloads into `fd` from byte `have`: the final size, or nullopt when the local file is
  // longer than the remote one and the download must start again from zero.
  Result<std::optional<uint64_t>> Fetch(std::string_view path, int fd, uint64_t have);
  Status Check(Method method, std::string_view path, const Exchange& ex,
               std::initializer_list<long> accepted) const;
};

Status GassClient::Impl::Setup(Method method, std::string_view path, curl_slist* headers,
                               std::string_view upload, Exchange& ex) {
  curl_easy_reset(curl);  // keeps the open connection and TLS session cache
  if (auto st = credentials::ConfigureCurl(curl, options.tls); !st) return st;
  std::string url = options.base_url + std::string(path);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);  // targets are literal (docs/gass.md)
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  long stall_s = std::max<long>(1, static_cast<long>(options.stall_timeout.count() / 1000));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, stall_s);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, kTransferBuffer);  // fewer, larger callbacks
  curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, kTransferBuffer);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
  if (method == Method::kHead) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (method == Method::kPut) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, upload.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(upload.size()));
  }
  return {};
}

Status GassClient::Impl::Perform(Method method, std::string_view path,
                                 const std::vector<std::string>& headers, std::string_view upload,
                                 Exchange& ex) {
  curl_slist* list = nullptr;
  list =
      curl_slist_append(list, (std::string(kVersionHeader) + ": " + std::string(kVersion)).c_str());
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip: bodies are bounded
  if (method == Method::kPut)
    list = curl_slist_append(list, "Content-Type: application/octet-stream");
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  error_buffer[0] = '\0';
  Status st = Setup(method, path, list, upload, ex);
  CURLcode rc = st ? curl_easy_perform(curl) : CURLE_OK;
  curl_slist_free_all(list);
  if (!st) return st;
  long connects = 0;
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &connects);
  connections += static_cast<uint64_t>(connects);
  if (rc == CURLE_WRITE_ERROR && ex.sink_error) return Fail(*ex.sink_error);
  if (rc != CURLE_OK) {
    std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(rc);
    return Fail(credentials::CurlFailureCode(rc, detail),
                "GASS " + options.base_url + std::string(path) + ": " + detail);
  }
  return {};
}

Status GassClient::Impl::Check(Method method, std::string_view path, const Exchange& ex,
                               std::initializer_list<long> accepted) const {
  const char* verb = method == Method::kGet ? "GET" : method == Method::kHead ? "HEAD" : "PUT";
  std::string what = std::string("GASS ") + verb + " " + std::string(path);
  if (std::find(accepted.begin(), accepted.end(), ex.status) == accepted.end()) {
    std::string why = ex.error_body.empty() ? "" : ": " + ServerMessage(ex.error_body);
    return Fail(CodeOfStatus(ex.status), what + ": HTTP " + std::to_string(ex.status) + why);
  }
  const std::string* version = ex.Header(ToLower(kVersionHeader));
  if (version == nullptr || *version != kVersion) {
    return Fail(ErrorCode::kProtocol, what + ": the server does not speak Kite GASS version 1");
  }
  return {};
}

GassClient::GassClient(GassClientOptions options) : impl_(std::make_unique<Impl>()) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  impl_->options = std::move(options);
  while (!impl_->options.base_url.empty() && impl_->options.base_url.back() == '/') {
    impl_->options.base_url.pop_back();
  }
  impl_->curl = curl_easy_init();
}

GassClient::~GassClient() = default;
GassClient::GassClient(GassClient&&) noexcept = default;
GassClient& GassClient::operator=(GassClient&&) noexcept = default;

uint64_t GassClient::connections() const {
  return impl_->connections;
}

Result<uint64_t> GassClient::Size(std::string_view path) {
  Exchange ex;
  if (auto st = impl_->Perform(Method::kHead, path, {}, {}, ex); !st) return Fail(st.error());
  if (auto st = impl_->Check(Method::kHead, path, ex, {200}); !st) return Fail(st.error());
  auto size = HeaderNumber(ex, "content-length");
  if (!size) return Fail(ErrorCode::kProtocol, "GASS HEAD " + std::string(path) + ": no size");
  return *size;
}

Result<std::optional<uint64_t>> GassClient::Impl::Fetch(std::string_view path, int fd,
                                                        uint64_t have) {
  Exchange ex;
  std::optional<uint64_t> base;
  uint64_t written = 0;
  ex.sink = [&](Exchange& e, const char* p, size_t n) {
    if (!base) {
      base = RangeStart(e);
      if (e.status == 206 && base != have) {
        e.sink_error = Error(ErrorCode::kProtocol, "GASS: the server sent another range");
        return false;
      }
    }
    if (auto st = WriteAll(fd, p, n, *base + written); !st) {
      e.sink_error = st.error();
      return false;
    }
    written += n;
    return true;
  };
  std::vector<std::string> h;
  if (have > 0) h.push_back("Range: bytes=" + std::to_string(have) + "-");
  if (auto st = Perform(Method::kGet, path, h, {}, ex); !st) return Fail(st.error());
  std::string what = "GASS GET " + std::string(path);
  if (ex.status == 416) {  // nothing after `have`: complete already, or the remote is shorter
    auto size = CompleteSize(ex);
    if (!size || *size > have) return Fail(ErrorCode::kProtocol, what + ": bad 416 reply");
    if (*size < have) return std::optional<uint64_t>();
    return std::optional<uint64_t>(have);
  }
  if (auto st = Check(Method::kGet, path, ex, {200, 206}); !st) return Fail(st.error());
  auto size = ex.status == 200 ? HeaderNumber(ex, "content-length") : CompleteSize(ex);
  uint64_t start = ex.status == 200 ? 0 : have;
  if (!size || start + written != *size) {
    return Fail(ErrorCode::kUnavailable, what + ": transfer ended before the end of the file");
  }
  if (::ftruncate(fd, static_cast<off_t>(*size)) != 0)
    return FailErrno("truncate local file", errno);
  return std::optional<uint64_t>(*size);
}

Result<uint64_t> GassClient::Get(std::string_view path, const std::string& local_path) {
  UniqueFd fd(::open(local_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (!fd) return FailErrno("open " + local_path, errno);
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return FailErrno("stat " + local_path, errno);
    auto got = impl_->Fetch(path, fd.get(), static_cast<uint64_t>(st.st_size));
    if (!got) return Fail(got.error());
    if (*got) {
      if (::fdatasync(fd.get()) != 0) return FailErrno("fsync " + local_path, errno);
      return **got;
    }
    if (::ftruncate(fd.get(), 0) != 0) return FailErrno("truncate " + local_path, errno);
  }
  return Fail(ErrorCode::kProtocol, "GASS GET " + std::string(path) + ": size keeps changing");
}

Result<std::string> GassClient::GetRange(std::string_view path, uint64_t offset, uint64_t length) {
  if (length == 0) return std::string();
  if (offset >= kMaxOffset) return Fail(ErrorCode::kInvalidInput, "offset out of range");
  uint64_t last = offset + std::min(length, kMaxOffset - offset) - 1;
  Exchange ex;
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(length, kMaxPutBody)));
  ex.sink = [&](Exchange& e, const char* p, size_t n) {
    if (out.empty() && RangeStart(e) != offset) {
      e.sink_error = Error(ErrorCode::kProtocol, "GASS: the server sent another range");
      return false;
    }
    out.append(p, n);
    if (out.size() <= length) return true;
    e.sink_error = Error(ErrorCode::kProtocol, "GASS: more bytes than asked for");
    return false;
  };
  std::vector<std::string> h{"Range: bytes=" + std::to_string(offset) + "-" + std::to_string(last)};
  if (auto st = impl_->Perform(Method::kGet, path, h, {}, ex); !st) return Fail(st.error());
  if (ex.status == 416) return std::string();
  if (auto st = impl_->Check(Method::kGet, path, ex, {206}); !st) return Fail(st.error());
  return out;
}

Result<uint64_t> GassClient::PutAt(std::string_view path, uint64_t offset, std::string_view data) {
  if (data.size() > kMaxPutBody) {
    return Fail(ErrorCode::kInvalidInput, "GASS PUT of more than 16 MiB; send chunks");
  }
  if (offset >= kMaxOffset || data.size() > kMaxOffset - offset) {
    return Fail(ErrorCode::kInvalidInput, "offset out of range");
  }
  std::vector<std::string> h;
  if (!data.empty()) {
    h.push_back("Content-Range: " +
                FormatContentRange(ByteRange{offset, data.size()}, std::nullopt));
  }
  Exchange ex;
  if (auto st = impl_->Perform(Method::kPut, path, h, data, ex); !st) return Fail(st.error());
  if (auto st = impl_->Check(Method::kPut, path, ex, {200}); !st) return Fail(st.error());
  auto size = HeaderNumber(ex, ToLower(kFileSizeHeader));
  if (!size || *size < offset + data.size()) {
    return Fail(ErrorCode::kProtocol, "GASS PUT " + std::string(path) + ": bad Kite-File-Size");
  }
  return *size;
}

Result<uint64_t> GassClient::Truncate(std::string_view path, uint64_t size) {
  std::vector<std::string> h{std::string(kTruncateHeader) + ": " + std::to_string(size)};
  Exchange ex;
  if (auto st = impl_->Perform(Method::kPut, path, h, {}, ex); !st) return Fail(st.error());
  if (auto st = impl_->Check(Method::kPut, path, ex, {200}); !st) return Fail(st.error());
  auto got = HeaderNumber(ex, ToLower(kFileSizeHeader));
  if (!got) return Fail(ErrorCode::kProtocol, "GASS PUT " + std::string(path) + ": no size");
  return *got;
}

Status GassClient::MakeFolder(std::string_view path) {
  std::vector<std::string> h{std::string(kFolderHeader) + ": 1"};
  Exchange ex;
  if (auto st = impl_->Perform(Method::kPut, path, h, {}, ex); !st) return st;
  return impl_->Check(Method::kPut, path, ex, {200});
}

}  // namespace kite::gass
