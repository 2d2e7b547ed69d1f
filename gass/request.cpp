// Access checks and header validation for one GASS request, and the server's file opening.
#include "gass/request.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include "common/strings.h"

namespace kite::gass {
namespace {

namespace http = boost::beast::http;
using Kind = RequestPlan::Kind;

RequestPlan Refuse(http::status status, std::string message) {
  RequestPlan p;
  p.status = status;
  p.message = std::move(message);
  return p;
}

http::status StatusOf(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return http::status::not_found;
    case ErrorCode::kAuthFailed:
    case ErrorCode::kPermission:
      return http::status::forbidden;
    case ErrorCode::kInvalidInput:
      return http::status::bad_request;
    default:
      return http::status::internal_server_error;
  }
}

// A body of unannounced length follows (Beast accepts only "chunked" as the final coding).
bool HasTransferEncoding(const http::request_header<>& req) {
  return req.count(http::field::transfer_encoding) > 0;
}

std::optional<uint64_t> ContentLength(const http::request_header<>& req) {
  auto it = req.find(http::field::content_length);
  if (it == req.end()) return std::nullopt;
  return ParseDecimal(Trim(it->value()));
}

bool HasBody(const http::request_header<>& req) {
  return HasTransferEncoding(req) || ContentLength(req).value_or(0) > 0 ||
         (req.count(http::field::content_length) > 0 && !ContentLength(req));
}

RequestPlan PlanRead(std::string path, const http::request_header<>& req, bool head) {
  if (HasBody(req)) return Refuse(http::status::bad_request, "GET and HEAD take no body");
  auto fd = OpenRegularFile(path, Access::kRead);
  if (!fd) return Refuse(StatusOf(fd.error()), fd.error().message());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return Refuse(http::status::internal_server_error, "fstat");
  RequestPlan p;
  p.kind = Kind::kSend;
  p.status = http::status::ok;
  p.file_size = static_cast<uint64_t>(st.st_size);
  p.range = {0, p.file_size};
  p.head = head;
  p.path = std::move(path);
  if (auto it = req.find(http::field::range); it != req.end() && !head) {
    auto r = ParseRange(it->value());
    if (!r) return Refuse(http::status::bad_request, r.error().message());
    auto resolved = ResolveRange(*r, p.file_size);
    if (!resolved) {
      RequestPlan bad = Refuse(http::status::range_not_satisfiable, "range outside the file");
      bad.file_size = p.file_size;
      return bad;
    }
    p.range = *resolved;
    p.partial = true;
    p.status = http::status::partial_content;
  }
  p.fd = std::move(*fd);
  return p;
}

// Validates a PUT's headers into the byte interval the body will fill.
Result<ByteRange> PutRange(const http::request_header<>& req, uint64_t length) {
  auto it = req.find(http::field::content_range);
  if (it == req.end()) {
    if (length > 0) return Fail(ErrorCode::kInvalidInput, "a PUT with a body needs Content-Range");
    return ByteRange{0, 0};
  }
  auto cr = ParseContentRange(it->value());
  if (!cr) return Fail(cr.error());
  if (!cr->range || cr->complete_size) {
    return Fail(ErrorCode::kInvalidInput, "PUT takes Content-Range \"bytes A-B/*\"");
  }
  if (cr->range->length != length) {
    return Fail(ErrorCode::kInvalidInput, "Content-Range length differs from Content-Length");
  }
  if (cr->range->first + cr->range->length > kMaxOffset) {
    return Fail(ErrorCode::kInvalidInput, "range past the largest file offset");
  }
  return *cr->range;
}

RequestPlan PlanWrite(std::string path, const http::request_header<>& req) {
  if (HasTransferEncoding(req) || req.count(http::field::content_length) == 0) {
    return Refuse(http::status::length_required, "PUT needs a Content-Length");
  }
  auto length = ContentLength(req);
  if (!length) return Refuse(http::status::bad_request, "bad Content-Length");
  if (*length > kMaxPutBody) {
    return Refuse(http::status::payload_too_large, "PUT body larger than 16 MiB");
  }
  auto range = PutRange(req, *length);
  if (!range) return Refuse(http::status::bad_request, range.error().message());
  RequestPlan p;
  if (auto it = req.find(kTruncateHeader); it != req.end()) {
    p.truncate = ParseDecimal(Trim(it->value()));
    if (!p.truncate || *p.truncate < range->first + range->length) {
      return Refuse(http::status::bad_request, "Kite-Truncate must be >= the end of the write");
    }
  }
  auto fd = OpenRegularFile(path, Access::kWrite);
  if (!fd) return Refuse(StatusOf(fd.error()), fd.error().message());
  p.kind = Kind::kReceive;
  p.status = http::status::ok;
  p.fd = std::move(*fd);
  p.range = *range;
  p.expect_continue = EqualsIgnoreCase(Trim(req[http::field::expect]), "100-continue");
  p.path = std::move(path);
  return p;
}

RequestPlan Route(const JobTable& jobs, const std::string& identity,
                  const http::request_header<>& req) {
  if (auto it = req.find(kVersionHeader); it != req.end() && Trim(it->value()) != kVersion) {
    return Refuse(http::status::bad_request, "unsupported Kite-Gass-Version");
  }
  http::verb method = req.method();
  if (method != http::verb::get && method != http::verb::head && method != http::verb::put) {
    return Refuse(http::status::method_not_allowed, "only GET, HEAD and PUT");
  }
  auto target = ParseTarget(req.target());
  if (!target) return Refuse(http::status::not_found, "no such file: " + target.error().message());
  Access access = method == http::verb::put ? Access::kWrite : Access::kRead;
  auto path = jobs.Resolve(identity, *target, access);
  if (!path && path.error().code() == ErrorCode::kNotFound && method == http::verb::head) {
    // A writer may ask how much of its file arrived (a restarted streamer does).
    path = jobs.Resolve(identity, *target, Access::kWrite);
  }
  if (!path) return Refuse(StatusOf(path.error()), path.error().message());
  if (access == Access::kWrite) return PlanWrite(std::move(*path), req);
  return PlanRead(std::move(*path), req, method == http::verb::head);
}

}  // namespace

Result<UniqueFd> OpenRegularFile(const std::string& path, Access access) {
  int flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  flags |= access == Access::kRead ? O_RDONLY : (O_WRONLY | O_CREAT);
  UniqueFd fd(::open(path.c_str(), flags, 0666));
  if (!fd) {
    int err = errno;
    if (err == ENOENT) return Fail(ErrorCode::kNotFound, "file does not exist");
    if (err == ELOOP) return Fail(ErrorCode::kPermission, "file is a symbolic link; refused");
    if (err == EACCES || err == EISDIR) return Fail(ErrorCode::kPermission, "file not accessible");
    return FailErrno("open", err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailErrno("fstat", errno);
  if (!S_ISREG(st.st_mode)) return Fail(ErrorCode::kPermission, "not a regular file; refused");
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

RequestPlan PlanRequest(const JobTable& jobs, const std::string& identity,
                        const http::request_header<>& req) {
  RequestPlan p = Route(jobs, identity, req);
  if (p.kind == Kind::kError) {
    // The body of a refused request is read and dropped to keep the connection, unless it is
    // unbounded (chunked), too large, or the client waits for our verdict before sending it.
    bool expect = EqualsIgnoreCase(Trim(req[http::field::expect]), "100-continue");
    auto length = ContentLength(req);
    p.close =
        HasBody(req) && (HasTransferEncoding(req) || expect || !length || *length > kMaxPutBody);
  }
  return p;
}

std::string ErrorBody(http::status status, std::string_view message) {
  boost::json::object o;
  o["error"] = message;
  o["status"] = static_cast<int>(status);
  return boost::json::serialize(o);
}

}  // namespace kite::gass
