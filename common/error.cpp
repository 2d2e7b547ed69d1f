// Error formatting.
#include "common/error.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace kite {

namespace {

// Every error code's one name (on the wire and in messages) and HTTP status.
struct CodeRow {
  ErrorCode code;
  std::string_view name;
  unsigned http;
};
constexpr CodeRow kCodes[] = {
    {ErrorCode::kOk, "ok", 200},
    {ErrorCode::kInvalidInput, "invalid-input", 400},
    {ErrorCode::kNotFound, "not-found", 404},
    {ErrorCode::kAlreadyExists, "already-exists", 409},
    {ErrorCode::kIo, "io", 500},
    {ErrorCode::kUnavailable, "unavailable", 503},
    {ErrorCode::kTimeout, "timeout", 504},
    {ErrorCode::kAuthFailed, "auth-failed", 403},
    {ErrorCode::kProxyExpired, "proxy-expired", 401},
    {ErrorCode::kPermission, "permission", 403},
    {ErrorCode::kConflict, "conflict", 409},
    {ErrorCode::kInternal, "internal", 500},
    {ErrorCode::kProtocol, "protocol", 400},
};

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& r : kCodes) {
    if (r.code == code) return r.name;
  }
  return "unknown";
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (const auto& r : kCodes) {
    if (r.name == name) return r.code;
  }
  return ErrorCode::kInternal;
}

unsigned HttpStatusFor(ErrorCode code) {
  for (const auto& r : kCodes) {
    if (r.code == code) return r.http;
  }
  return 500;
}

std::string Error::ToString() const {
  std::string s(ErrorCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Error Error::Wrap(std::string_view context) const {
  std::string m(context);
  m += ": ";
  m += message_;
  return Error(code_, std::move(m));
}

std::unexpected<Error> FailErrno(std::string_view what, int err) {
  std::string m(what);
  m += ": ";
  m += std::strerror(err);
  ErrorCode code = ErrorCode::kIo;
  if (err == ENOENT) code = ErrorCode::kNotFound;
  if (err == EACCES || err == EPERM) code = ErrorCode::kPermission;
  if (err == EEXIST) code = ErrorCode::kAlreadyExists;
  return Fail(code, std::move(m));
}

std::unexpected<Error> FailErrno(std::string_view what) {
  return FailErrno(what, errno);
}

}  // namespace kite
