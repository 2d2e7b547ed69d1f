// HTTPS to an ARC CE's REST interface over libcurl.
#include "grid/arc_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "common/strings.h"

namespace kite::grid::arc {
namespace {

constexpr size_t kMaxReplyBody = 8u << 20;  // replies larger than this are not the CE's JSON
constexpr char kRestRoot[] = "/rest/1.0/";

struct Exchange {
  std::string body;
  std::string location;
  std::string reason;  // the status line's words: A-REX says why it refuses there
  int fd = -1;         // a download's file; -1: into body
  // A download that may be a folder: asked with Accept: application/xml, and an XML answer (the
  // CE's listing; a file always comes as application/octet-stream) goes to `body`.
  bool may_list = false;
  bool listed = false;  // the answer was a listing
  bool failed_write = false;
  long status = 0;
};

size_t OnHeader(char* p, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view line(p, size * n);
  if (StartsWith(line, "HTTP/")) {  // a new response (after 100 Continue): its status
    ex->location.clear();
    auto space = line.find(' ');
    ex->status = space == std::string_view::npos ? 0 : std::atol(line.data() + space + 1);
    auto words = space == std::string_view::npos ? space : line.find(' ', space + 1);
    ex->reason = words == std::string_view::npos ? "" : std::string(Trim(line.substr(words + 1)));
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string_view field = Trim(line.substr(0, colon)), value = Trim(line.substr(colon + 1));
    if (EqualsIgnoreCase(field, "location")) ex->location = std::string(value);
    if (EqualsIgnoreCase(field, "content-type")) {
      ex->listed = ex->may_list && StartsWith(value, "application/xml");
    }
  }
  return size * n;
}

size_t OnBody(char* p, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t len = size * n;
  // A download's file takes only a successful answer's body; an error's goes to `body`.
  if (ex->fd >= 0 && ex->status >= 200 && ex->status < 300 && !ex->listed) {
    size_t done = 0;
    while (done < len) {
      ssize_t w = ::write(ex->fd, p + done, len - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        ex->failed_write = true;
        return 0;
      }
      done += static_cast<size_t>(w);
    }
    return len;
  }
  if (ex->body.size() + len > kMaxReplyBody) return 0;
  ex->body.append(p, len);
  return len;
}

ErrorCode CodeOfStatus(long status) {
  if (status == 401 || status == 403) return ErrorCode::kAuthFailed;
  if (status == 404) return ErrorCode::kNotFound;
  if (status == 409) return ErrorCode::kConflict;
  if (status >= 500) return ErrorCode::kUnavailable;
  if (status >= 400) return ErrorCode::kInvalidInput;
  return ErrorCode::kProtocol;  // 1xx or 3xx as a final answer
}

}  // namespace

Error HttpError(long status, std::string_view body, std::string_view what,
                std::string_view reason) {
  std::string words(Trim(body).empty() ? Trim(reason) : Trim(body));
  return Error(CodeOfStatus(status), std::string(what) + ": HTTP " + std::to_string(status) +
                                         (words.empty() ? "" : ": " + ForLog(words, 300)));
}

struct ArcClient::Impl {
  ArcClientOptions options;
  std::mutex mu;
  std::vector<CURL*> idle;  // handles with their connections, for the next call

  ~Impl() {
    for (CURL* c : idle) curl_easy_cleanup(c);
  }

  CURL* Take() {
    {
      std::lock_guard lock(mu);
      if (!idle.empty()) {
        CURL* c = idle.back();
        idle.pop_back();
        return c;
      }
    }
    return curl_easy_init();
  }
  void Give(CURL* c) {
    std::lock_guard lock(mu);
    if (idle.size() < 16) {
      idle.push_back(c);
      return;
    }
    curl_easy_cleanup(c);
  }

  // Perform, a second time when the first failed in the TLS handshake: A-REX refuses about one
  // handshake in a thousand with "unexpected message" and takes the next.
  Status PerformRetried(std::string_view method, std::string_view target, std::string_view body,
                        std::string_view content_type, int upload_fd, Exchange& ex) {
    Status st = Perform(method, target, body, content_type, upload_fd, ex);
    if (st || st.error().code() != ErrorCode::kAuthFailed || ex.status != 0) return st;
    ex = Exchange{.fd = ex.fd, .may_list = ex.may_list};
    if (ex.fd >= 0 && (::ftruncate(ex.fd, 0) != 0 || ::lseek(ex.fd, 0, SEEK_SET) != 0)) return st;
    return Perform(method, target, body, content_type, upload_fd, ex);
  }

  // One request; `upload_fd` >= 0 sends that file as the body. Fills `ex`; a non-2xx answer is
  // an error carrying the CE's words.
  Status Perform(std::string_view method, std::string_view target, std::string_view body,
                 std::string_view content_type, int upload_fd, Exchange& ex) {
    FILE* upload = nullptr;
    off_t upload_size = 0;
    if (upload_fd >= 0) {
      struct stat st {};
      if (::fstat(upload_fd, &st) != 0) return FailErrno("stat the file to upload");
      upload_size = st.st_size;
      int copy = ::dup(upload_fd);
      upload = copy < 0 ? nullptr : ::fdopen(copy, "rb");
      if (upload == nullptr) {
        if (copy >= 0) ::close(copy);
        return FailErrno("open the file to upload");
      }
      std::rewind(upload);  // from the start, also when this is a second attempt
    }
    CURL* c = Take();
    if (c == nullptr) {
      if (upload != nullptr) std::fclose(upload);
      return Fail(ErrorCode::kInternal, "libcurl cannot make a handle");
    }
    curl_easy_reset(c);
    std::string url = options.endpoint + kRestRoot + std::string(target);
    char error_buffer[CURL_ERROR_SIZE] = {};
    curl_slist* headers = nullptr;
    headers = curl_slist_append(
        headers, ex.may_list ? "Accept: application/xml" : "Accept: application/json");
    std::string type_header = "Content-Type: " + std::string(content_type);
    if (!body.empty() || upload_fd >= 0) headers = curl_slist_append(headers, type_header.c_str());
    headers = curl_slist_append(headers, "Expect:");
    auto setup = credentials::ConfigureCurl(c, options.tls);
    if (!setup) {
      curl_slist_free_all(headers);
      if (upload != nullptr) std::fclose(upload);
      curl_easy_cleanup(c);
      return setup;
    }
    std::string method_text(method);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
    // A transfer slower than one byte a second for stall_timeout is given up.
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
                     static_cast<long>(std::max<int64_t>(1, options.stall_timeout.count() / 1000)));
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &ex);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &ex);
    if (upload != nullptr) {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_READDATA, upload);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(upload_size));
    } else if (method == "GET") {
      curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_text.c_str());
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
    if (upload_fd >= 0 && method != "PUT") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_text.c_str());
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ex.status);
    curl_slist_free_all(headers);
    if (upload != nullptr) std::fclose(upload);
    if (rc != CURLE_OK) {
      curl_easy_cleanup(c);  // its connection is in an unknown state
      if (ex.failed_write) return FailErrno("write the downloaded file");
      std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(rc);
      return Fail(credentials::CurlFailureCode(rc, detail),
                  std::string(method) + " " + url + ": " + detail);
    }
    Give(c);
    if (ex.status < 200 || ex.status >= 300) {
      return Fail(HttpError(ex.status, ex.body, std::string(method) + " " + url, ex.reason));
    }
    return {};
  }
};

ArcClient::ArcClient(ArcClientOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  while (!impl_->options.endpoint.empty() && impl_->options.endpoint.back() == '/') {
    impl_->options.endpoint.pop_back();
  }
}

ArcClient::~ArcClient() = default;

const std::string& ArcClient::endpoint() const {
  return impl_->options.endpoint;
}

Result<HttpReply> ArcClient::Call(std::string_view method, std::string_view target,
                                  std::string_view body, std::string_view content_type) {
  Exchange ex;
  if (auto st = impl_->PerformRetried(method, target, body, content_type, -1, ex); !st) {
    return Fail(st.error());
  }
  return HttpReply{.status = ex.status, .body = std::move(ex.body), .location = ex.location};
}

Status ArcClient::PutFile(std::string_view target, const std::string& local_path) {
  int fd = ::open(local_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FailErrno("open " + local_path);
  Exchange ex;
  auto st = impl_->PerformRetried("PUT", target, "", "application/octet-stream", fd, ex);
  ::close(fd);
  return st;
}

Status ArcClient::GetFile(std::string_view target, const std::string& local_path) {
  auto got = Download(target, local_path, false);
  if (!got) return Fail(got.error());
  return {};
}

Result<std::optional<std::string>> ArcClient::GetFileOrListing(std::string_view target,
                                                               const std::string& local_path) {
  return Download(target, local_path, true);
}

Result<std::string> ArcClient::List(std::string_view target) {
  Exchange ex;
  ex.may_list = true;
  if (auto st = impl_->PerformRetried("GET", target, "", "", -1, ex); !st) return Fail(st.error());
  if (!ex.listed) return Fail(ErrorCode::kNotFound, "it is a file, not a folder");
  return std::move(ex.body);
}

Result<std::optional<std::string>> ArcClient::Download(std::string_view target,
                                                       const std::string& local_path,
                                                       bool may_list) {
  // Into a file beside the target, renamed over it once whole: a cut download leaves the user's
  // file as it was.
  std::string part = local_path + ".kite-part";
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return FailErrno("create " + part);
  Exchange ex;
  ex.fd = fd;
  ex.may_list = may_list;
  auto st = impl_->PerformRetried("GET", target, "", "", -1, ex);
  if (st && !ex.listed && ::fsync(fd) != 0) st = FailErrno("sync " + part);
  ::close(fd);
  if (st && !ex.listed && ::rename(part.c_str(), local_path.c_str()) != 0) {
    st = FailErrno("rename " + part);
  }
  if (!st || ex.listed) ::unlink(part.c_str());
  if (!st) return Fail(st.error());
  if (ex.listed) return std::optional<std::string>(std::move(ex.body));
  return std::optional<std::string>();
}

}  // namespace kite::grid::arc
