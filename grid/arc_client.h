// HTTPS to one ARC CE's REST interface (version 1.0, docs/grid-arc.md): requests with bodies,
// and files put into and fetched from a job's session directory. libcurl over mutual TLS with
// the user's proxy; blocking, safe from several threads at once (each call takes a handle of its
// own from a small pool, so connections are reused).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "credentials/tls.h"

namespace kite::grid::arc {

struct ArcClientOptions {
  std::string endpoint;  // "https://HOST:PORT/PATH", the A-REX service ("/arex" on most CEs)
  credentials::CurlTls tls;
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(10);
  // A request (or a file transfer) that moves no byte for this long is given up.
  std::chrono::milliseconds stall_timeout = std::chrono::seconds(60);
};

struct HttpReply {
  long status = 0;
  std::string body;
  std::string location;  // the Location header, when given
};

// Errors: no connection, a timeout, a lost connection or a 5xx answer -> kUnavailable (try again
// later); a TLS handshake the CE refused, 401 or 403 -> kAuthFailed; 404 -> kNotFound; 409 ->
// kConflict; other 4xx -> kInvalidInput; a local file problem -> kIo. Messages carry the CE's
// words.
class ArcClient {
 public:
  explicit ArcClient(ArcClientOptions options);
  ~ArcClient();
  ArcClient(const ArcClient&) = delete;
  ArcClient& operator=(const ArcClient&) = delete;

  // METHOD endpoint/rest/1.0/TARGET; a non-2xx answer is an error (above). `content_type` is
  // sent with a body.
  Result<HttpReply> Call(std::string_view method, std::string_view target, std::string_view body,
                         std::string_view content_type = "application/json");
  // PUT of a whole local file to TARGET.
  Status PutFile(std::string_view target, const std::string& local_path);
  // GET of TARGET into a local file (created 0666 & ~umask, replaced whole).
  Status GetFile(std::string_view target, const std::string& local_path);
  // The same for a session path that may be a folder: its listing's XML when it is one (nothing
  // is written then), nullopt when the file was fetched.
  Result<std::optional<std::string>> GetFileOrListing(std::string_view target,
                                                      const std::string& local_path);
  // The listing (XML) of a session folder; kNotFound when TARGET is missing or not a folder.
  Result<std::string> List(std::string_view target);

  const std::string& endpoint() const;

  struct Impl;

 private:
  Result<std::optional<std::string>> Download(std::string_view target,
                                              const std::string& local_path, bool may_list);
  std::unique_ptr<Impl> impl_;
};

// The error for an HTTP answer `status` to `what` ("submit"), in the CE's words: its body, or,
// when that is empty, the status line's reason phrase (where A-REX puts most refusals).
Error HttpError(long status, std::string_view body, std::string_view what,
                std::string_view reason = "");

}  // namespace kite::grid::arc
