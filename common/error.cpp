// Error formatting.
#include "common/error.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace kite {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidInput:
      return "invalid-input";
    case ErrorCode::kNotFound:
      return "not-found";
    case ErrorCode::kAlreadyExists:
      return "already-exists";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kAuthFailed:
      return "auth-failed";
    case ErrorCode::kProxyExpired:
      return "proxy-expired";
    case ErrorCode::kPermission:
      return "permission";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kProtocol:
      return "protocol";
  }
  return "unknown";
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
