// The MyProxy client: a blocking OpenSSL connection with per-operation timeouts.
#include "credentials/myproxy.h"

#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/strings.h"
#include "credentials/delegation.h"
#include "credentials/ssl_util.h"
#include "credentials/tls.h"

namespace kite::credentials {

namespace {

constexpr size_t kMaxMessage = 1 << 20;

// One TLS connection to a MyProxy server. Not thread-safe; one per operation.
class Connection {
 public:
  ~Connection() {
    if (ssl_) {
      SSL_shutdown(ssl_);
      SSL_free(ssl_);
    }
    if (fd_ >= 0) ::close(fd_);
  }

  Status Open(const MyProxyOptions& o) {
    if (!o.verifier) return Fail(ErrorCode::kInvalidInput, "MyProxy needs trusted CAs");
    auto ctx = MakeClientContext(o.client_credential, o.verifier);
    if (!ctx) return Fail(ctx.error());
    ctx_ = *ctx;
    if (auto st = Connect(o); !st) return st;
    ssl_ = SSL_new(ctx_->native_handle());
    SSL_set_fd(ssl_, fd_);
    if (auto st = SetPeerHost(ssl_, o.host, o.server_dn); !st) return st;
    if (SSL_connect(ssl_) != 1) {
      std::string why = PeerVerifyError(ssl_);
      if (why.empty()) why = TimedOut() ? "timed out" : detail::TakeSslError();
      return Fail(ErrorCode::kAuthFailed, "TLS handshake with " + Where(o) + " failed: " + why);
    }
    // GSI compatibility: a single '0' says "no delegation during the handshake".
    return Write("0");
  }

  Status Write(std::string_view data) {
    if (SSL_write(ssl_, data.data(), static_cast<int>(data.size())) !=
        static_cast<int>(data.size())) {
      return Fail(TimedOut() ? ErrorCode::kTimeout : ErrorCode::kUnavailable,
                  "writing to the MyProxy server: " + detail::TakeSslError());
    }
    return {};
  }

  // One message: what one SSL_read returns (one TLS record, as the server writes them). The
  // server (Globus GSI over TLS 1.3) may send a lone NUL record ahead of its first message;
  // such records carry nothing and are skipped.
  Result<std::string> ReadMessage() {
    for (;;) {
      std::string buf(65536, '\0');
      int n = SSL_read(ssl_, buf.data(), static_cast<int>(buf.size()));
      if (n <= 0) {
        return Fail(TimedOut() ? ErrorCode::kTimeout : ErrorCode::kProtocol,
                    "the MyProxy server closed the connection");
      }
      buf.resize(static_cast<size_t>(n));
      if (buf.find_first_not_of('\0') == std::string::npos) continue;
      return buf;
    }
  }

  // Appends more bytes to `buf` (for messages larger than a record).
  Status ReadMore(std::string& buf) {
    if (buf.size() > kMaxMessage) return Fail(ErrorCode::kProtocol, "MyProxy message too large");
    auto more = ReadMessage();
    if (!more) return Fail(more.error());
    buf += *more;
    return {};
  }

 private:
  static std::string Where(const MyProxyOptions& o) {
    return o.host + ":" + std::to_string(o.port);
  }
  bool TimedOut() const { return errno == EAGAIN || errno == EWOULDBLOCK; }

  Status Connect(const MyProxyOptions& o) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port = std::to_string(o.port);
    if (int rc = getaddrinfo(o.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
      return Fail(ErrorCode::kUnavailable, "cannot resolve " + o.host + ": " + gai_strerror(rc));
    }
    Status st = Fail(ErrorCode::kUnavailable, "no address for " + o.host);
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      st = ConnectOne(ai, o);
      if (st) break;
    }
    freeaddrinfo(res);
    return st;
  }

  Status ConnectOne(const addrinfo* ai, const MyProxyOptions& o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) return FailErrno("socket");
    int rc = ::connect(fd_, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd_, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(o.timeout.count() * 1000));
      int err = 0;
      socklen_t len = sizeof err;
      if (rc == 0) return Fail(ErrorCode::kTimeout, "connecting to " + Where(o) + " timed out");
      getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc != 0) {
      return Fail(ErrorCode::kUnavailable,
                  "cannot connect to MyProxy server " + Where(o) + ": " + std::strerror(errno));
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    timeval tv{static_cast<time_t>(o.timeout.count()), 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return {};
  }

  SslContextPtr ctx_;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
};

std::string Request(int command, const MyProxyOptions& o) {
  std::string r = "VERSION=MYPROXYv2\nCOMMAND=" + std::to_string(command) +
                  "\nUSERNAME=" + o.username + "\nPASSPHRASE=" + o.passphrase +
                  "\nLIFETIME=" + std::to_string(o.lifetime.count()) + "\n";
  if (!o.cred_name.empty()) r += "CRED_NAME=" + o.cred_name + "\n";
  r.push_back('\0');
  return r;
}

Status CheckRequestFields(const MyProxyOptions& o) {
  if (o.host.empty()) return Fail(ErrorCode::kInvalidInput, "no MyProxy server given");
  if (o.username.empty()) return Fail(ErrorCode::kInvalidInput, "no MyProxy user name given");
  for (const std::string* s : {&o.username, &o.passphrase, &o.cred_name}) {
    if (s->find_first_of(std::string("\n\0", 2)) != std::string::npos) {
      return Fail(ErrorCode::kInvalidInput, "MyProxy fields may not contain newlines");
    }
  }
  return {};
}

Status ParseResponse(const std::string& message);

// Reads a response message; OK -> {}, ERROR -> kAuthFailed with the server's text.
Status ReadResponse(Connection& c) {
  auto msg = c.ReadMessage();
  if (!msg) return Fail(msg.error());
  return ParseResponse(*msg);
}

Status ParseResponse(const std::string& message) {
  const std::string* msg = &message;
  size_t start = msg->find_first_not_of('\0');
  std::string text(msg->c_str() + start);  // up to the terminating NUL
  std::string response, errors;
  bool version_ok = false;
  for (const auto& line : Split(text, '\n')) {
    if (line == "VERSION=MYPROXYv2") version_ok = true;
    if (StartsWith(line, "RESPONSE=")) response = line.substr(9);
    if (StartsWith(line, "ERROR=")) errors += (errors.empty() ? "" : " ") + line.substr(6);
  }
  if (!version_ok) return Fail(ErrorCode::kProtocol, "not a MyProxy v2 response: " + text);
  if (response == "0") return {};
  if (response == "1") {
    return Fail(ErrorCode::kAuthFailed,
                "MyProxy server refused: " + (errors.empty() ? "no reason given" : errors));
  }
  if (response == "2") {
    return Fail(ErrorCode::kAuthFailed,
                "MyProxy server asks for an authorization method Kite does not support");
  }
  return Fail(ErrorCode::kProtocol, "unknown MyProxy RESPONSE=" + response);
}

// A certificate chain message: a count byte, then that many DER certificates. The server sends
// an ERROR response instead when it cannot sign.
Result<CertChain> ReadChain(Connection& c) {
  auto first = c.ReadMessage();
  if (!first) return Fail(first.error());
  std::string buf = std::move(*first);
  if (buf.find("VERSION=MYPROXY") != std::string::npos) {
    auto st = ParseResponse(buf);
    return Fail(st ? Error(ErrorCode::kProtocol, "MyProxy server sent no certificates")
                   : st.error());
  }
  size_t count = static_cast<unsigned char>(buf[0]);
  if (count == 0) return Fail(ErrorCode::kProtocol, "MyProxy server sent no certificates");
  CertChain chain;
  size_t off = 1;
  while (chain.size() < count) {
    auto* p = reinterpret_cast<const unsigned char*>(buf.data() + off);
    const unsigned char* start = p;
    X509* x = d2i_X509(nullptr, &p, static_cast<long>(buf.size() - off));
    if (x == nullptr) {
      ERR_clear_error();
      if (auto st = c.ReadMore(buf); !st) return Fail(st.error());
      continue;
    }
    off += static_cast<size_t>(p - start);
    chain.emplace_back(x);
  }
  return chain;
}

}  // namespace

Result<Credential> MyProxyGet(const MyProxyOptions& o) {
  if (auto st = CheckRequestFields(o); !st) return Fail(st.error());
  auto request = DelegationRequest::Create(o.key);
  if (!request) return Fail(request.error());
  Connection c;
  if (auto st = c.Open(o); !st) return Fail(st.error());
  if (auto st = c.Write(Request(0, o)); !st) return Fail(st.error());
  if (auto st = ReadResponse(c); !st) return Fail(st.error());
  if (auto st = c.Write(request->csr_der()); !st) return Fail(st.error());
  auto chain = ReadChain(c);
  if (!chain) return Fail(chain.error());
  if (auto st = ReadResponse(c); !st) return Fail(st.error());
  return request->Complete(std::move(*chain));
}

Status MyProxyStore(const MyProxyOptions& o, const Credential& credential,
                    std::chrono::seconds stored_lifetime) {
  if (auto st = CheckRequestFields(o); !st) return st;
  // The server re-delegates with Globus, which signs only under RSA-signed certificates: a
  // credential stored from an EC key could never be retrieved, so refuse it up front.
  if (EVP_PKEY_get_base_id(credential.key.get()) != EVP_PKEY_RSA) {
    return Fail(ErrorCode::kInvalidInput,
                "MyProxy servers can only re-delegate from RSA keys; store from your certificate "
                "or from an RSA proxy (kite proxy init --bits 2048)");
  }
  MyProxyOptions with_cred = o;
  if (!with_cred.client_credential) with_cred.client_credential = credential;
  Connection c;
  if (auto st = c.Open(with_cred); !st) return st;
  if (auto st = c.Write(Request(1, o)); !st) return st;
  if (auto st = ReadResponse(c); !st) return st;
  auto csr = c.ReadMessage();
  if (!csr) return Fail(csr.error());
  ProxyOptions po;
  po.lifetime = stored_lifetime;
  auto chain = SignDelegationDer(*csr, credential, po);
  if (!chain) return Fail(chain.error().Wrap("MyProxy server's certificate request"));
  if (chain->size() > 255) return Fail(ErrorCode::kInvalidInput, "certificate chain too long");
  std::string msg(1, static_cast<char>(chain->size()));
  for (const auto& cert : *chain) msg += cert.ToDer();
  if (auto st = c.Write(msg); !st) return st;
  return ReadResponse(c);
}

}  // namespace kite::credentials
