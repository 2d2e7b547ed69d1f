// kite::Error and kite::Result: how every library reports failure.
//
// Errors are values at library boundaries (no exception crosses one). A Result<T> is either a T or
// an Error with a code a caller can branch on and a message a user can act on.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace kite {

enum class ErrorCode {
  kOk = 0,
  kInvalidInput,   // malformed text, bad value, unknown name
  kNotFound,       // no such job, file, attribute
  kAlreadyExists,  // creating something that exists
  kIo,             // a system call failed
  kUnavailable,    // peer unreachable or not answering; try again later
  kTimeout,        // an operation ran out of time
  kAuthFailed,     // authentication or authorisation refused
  kProxyExpired,   // the credential is out of its validity window
  kPermission,     // file modes or ownership not acceptable
  kConflict,       // operation not valid in the object's current state
  kInternal,       // a bug; should not happen
  kProtocol,       // peer spoke the protocol wrongly
};

// One table gives each code its name (in messages and on the wire, e.g. "auth-failed") and the
// HTTP status every Kite server answers it with (e.g. 403).
std::string_view ErrorCodeName(ErrorCode code);
ErrorCode ErrorCodeFromName(std::string_view name);  // kInternal for a name not in the table
unsigned HttpStatusFor(ErrorCode code);

class Error {
 public:
  Error() = default;
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid-input: message"
  std::string ToString() const;

  // Returns a copy with `context + ": "` put in front of the message.
  Error Wrap(std::string_view context) const;

 private:
  ErrorCode code_ = ErrorCode::kInternal;
  std::string message_;
};

template <typename T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> Fail(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error(code, std::move(message)));
}
inline std::unexpected<Error> Fail(Error e) {
  return std::unexpected<Error>(std::move(e));
}

// An error from errno, e.g. Errno("open /x") -> "io: open /x: No such file or directory".
std::unexpected<Error> FailErrno(std::string_view what, int err);
std::unexpected<Error> FailErrno(std::string_view what);

}  // namespace kite
