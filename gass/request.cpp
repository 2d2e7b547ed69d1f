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

Result<UniqueFd> Open(const ResolvedFile& f, Access access) {
  return f.root.empty() ? OpenRegularFile(f.path, access) : OpenBeneath(f.root, f.rel, access);
}

RequestPlan PlanRead(ResolvedFile file, const http::request_header<>& req, bool head) {
  if (HasBody(req)) return Refuse(http::status::bad_request, "GET and HEAD take no body");
  std::string path = file.path;
  auto fd = Open(file, Access::kRead);
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

RequestPlan PlanWrite(ResolvedFile file, const http::request_header<>& req) {
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
  if (auto it = req.find(kFolderHeader); it != req.end()) {
    if (Trim(it->value()) != "1" || *length != 0 || req.count(kTruncateHeader) > 0) {
      return Refuse(http::status::bad_request, "Kite-Folder takes \"1\" on an empty PUT");
    }
    if (!file.tree) return Refuse(http::status::forbidden, "no folder may be made there");
    auto dir = OpenFolderBeneath(file.root.empty() ? file.path : file.root, file.rel);
    if (!dir) return Refuse(StatusOf(dir.error()), dir.error().message());
    RequestPlan p;
    p.kind = Kind::kReceive;
    p.status = http::status::ok;
    p.fd = std::move(*dir);
    p.path = std::move(file.path);
    return p;
  }
  RequestPlan p;
  if (auto it = req.find(kTruncateHeader); it != req.end()) {
    p.truncate = ParseDecimal(Trim(it->value()));
    if (!p.truncate || *p.truncate < range->first + range->length) {
      return Refuse(http::status::bad_request, "Kite-Truncate must be >= the end of the write");
    }
  }
  auto fd = Open(file, Access::kWrite);
  if (!fd) return Refuse(StatusOf(fd.error()), fd.error().message());
  p.kind = Kind::kReceive;
  p.status = http::status::ok;
  p.fd = std::move(*fd);
  p.range = *range;
  p.expect_continue = EqualsIgnoreCase(Trim(req[http::field::expect]), "100-continue");
  p.path = std::move(file.path);
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

namespace {

// Opens `name` in the folder `dir` (or the path itself when `dir` is AT_FDCWD) as
// OpenRegularFile does.
Result<UniqueFd> OpenRegularAt(int dir, const std::string& name, Access access) {
  int flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  flags |= access == Access::kRead ? O_RDONLY : (O_WRONLY | O_CREAT);
  UniqueFd fd(::openat(dir, name.c_str(), flags, 0666));
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

// The folder `name` in `dir`, made first when `make`; never through a symbolic link.
Result<UniqueFd> OpenFolderAt(int dir, const std::string& name, bool make,
                              const std::string& shown) {
  if (make && ::mkdirat(dir, name.c_str(), 0777) != 0 && errno != EEXIST) {
    return FailErrno("making the folder " + shown, errno);
  }
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd) return fd;
  int err = errno;
  if (err == ENOENT) return Fail(ErrorCode::kNotFound, shown + " does not exist");
  if (err == ENOTDIR || err == ELOOP) {
    return Fail(ErrorCode::kPermission, shown + " is not a folder (a file or a symbolic link)");
  }
  return FailErrno("open " + shown, err);
}

}  // namespace

Result<UniqueFd> OpenRegularFile(const std::string& path, Access access) {
  return OpenRegularAt(AT_FDCWD, path, access);
}

namespace {

// A plain name: not empty, ".", ".." or holding a '/'.
bool PlainSegment(std::string_view seg) {
  return !seg.empty() && seg != "." && seg != ".." && seg.find('/') == std::string_view::npos;
}

// The folder `rel` ("a/b", or "" for the root itself) beneath `root`, each folder on the way made
// first when `make`. The root is the user's own choice (it may be a link the user made); what lies
// beneath it comes from the site, and is never a symbolic link.
Result<UniqueFd> WalkFolders(const std::string& root, std::string_view rel, bool make) {
  if (make && ::mkdir(root.c_str(), 0777) != 0 && errno != EEXIST) {
    return FailErrno("making the folder " + root, errno);
  }
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    int err = errno;
    if (err == ENOENT) return Fail(ErrorCode::kNotFound, root + " does not exist");
    if (err == ENOTDIR) return Fail(ErrorCode::kPermission, root + " is not a folder");
    return FailErrno("open " + root, err);
  }
  std::string shown = root;
  while (!rel.empty()) {
    size_t slash = rel.find('/');
    std::string seg(rel.substr(0, slash));
    if (!PlainSegment(seg)) return Fail(ErrorCode::kInvalidInput, "not a name beneath " + root);
    shown += "/" + seg;
    auto next = OpenFolderAt(dir.get(), seg, make, shown);
    if (!next) return Fail(next.error());
    dir = std::move(*next);
    rel.remove_prefix(slash == std::string_view::npos ? rel.size() : slash + 1);
  }
  return dir;
}

}  // namespace

Result<UniqueFd> OpenFolderBeneath(const std::string& root, std::string_view rel) {
  return WalkFolders(root, rel, true);
}

Result<UniqueFd> OpenBeneath(const std::string& root, std::string_view rel, Access access) {
  size_t slash = rel.rfind('/');
  std::string_view folders = slash == std::string_view::npos ? "" : rel.substr(0, slash);
  std::string name(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
  if (!PlainSegment(name)) return Fail(ErrorCode::kInvalidInput, "not a name beneath " + root);
  auto dir = WalkFolders(root, folders, access == Access::kWrite);
  if (!dir) return Fail(dir.error());
  return OpenRegularAt(dir->get(), name, access);
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
