// Deciding what the GASS server does with one request, from its header alone: access checks,
// header validation and opening the file. Callable without a socket (the session does the I/O).
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <optional>
#include <string>

#include "common/error.h"
#include "gass/job_table.h"
#include "gass/protocol.h"
#include "gass/unique_fd.h"

namespace kite::gass {

// Opens a registered file the way the server does. The last path component must not be a
// symbolic link (O_NOFOLLOW: a link swapped in after registration is refused with kPermission,
// never followed) and must be a regular file (no FIFO or device; opened non-blocking so a FIFO
// cannot stall the server). Directories above it are trusted: they are the user's own.
// Reading: kNotFound when missing. Writing: created (mode 0666 & ~umask) when missing.
Result<UniqueFd> OpenRegularFile(const std::string& path, Access access);
// The same for `rel` ("a/b/c") beneath the folder `root`: no folder on the way may be a symbolic
// link (kPermission). Writing makes `root` and the folders on the way when missing (0777 &
// ~umask).
Result<UniqueFd> OpenBeneath(const std::string& root, std::string_view rel, Access access);
// The folder `rel` beneath `root` (the root itself when empty), made with those on the way when
// missing; none of them may be a symbolic link or a file (kPermission).
Result<UniqueFd> OpenFolderBeneath(const std::string& root, std::string_view rel);

struct RequestPlan {
  enum class Kind {
    kError,    // reply `status` with {"error": message}
    kSend,     // GET/HEAD: send `range` of `fd`
    kReceive,  // PUT: write the body at range.first
  };
  Kind kind = Kind::kError;
  boost::beast::http::status status = boost::beast::http::status::internal_server_error;
  std::string message;  // kError: why (also logged)
  // kError: the request's body (if any) must not be read; close after replying.
  bool close = false;

  UniqueFd fd;
  ByteRange range;                   // kSend: the bytes to send; kReceive: where the body goes
  uint64_t file_size = 0;            // kSend: the whole file's size (Content-Range, HEAD)
  bool head = false;                 // kSend: headers only
  bool partial = false;              // kSend: 206 with Content-Range
  std::optional<uint64_t> truncate;  // kReceive: Kite-Truncate
  bool expect_continue = false;      // kReceive: the client waits for "100 Continue"
  std::string path;                  // the local file (for logs)
};

// Checks `req` from the peer `identity` against `jobs` and opens the file it names. Every refusal
// happens before anything is opened, read or written.
RequestPlan PlanRequest(const JobTable& jobs, const std::string& identity,
                        const boost::beast::http::request_header<>& req);

// The JSON body of an error reply: {"error":"<message>","status":<code>}.
std::string ErrorBody(boost::beast::http::status status, std::string_view message);

}  // namespace kite::gass
