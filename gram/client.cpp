// The gatekeeper client: a pool of HttpsConnections and the protocol's calls over it.
#include "gram/client.h"

#include "credentials/delegation.h"
#include "credentials/tls.h"
#include "gram/https_connection.h"

namespace kite::gram {
namespace {

// A reply that is not 2xx, as an Error with the site's code and message.
Error ReplyError(const HttpReply& r, const std::string& what) {
  auto e = ParseErrorReply(r.body);
  ErrorCode code = ErrorCodeForHttp(r.status);
  std::string msg = e ? e->message : "HTTP " + std::to_string(r.status) + ": " + r.body;
  if (e && e->code != ErrorCode::kInternal) code = e->code;
  return Error(code, what + ": " + msg);
}

}  // namespace

std::string JobIdFromContact(const std::string& contact) {
  auto slash = contact.rfind('/');
  return slash == std::string::npos ? contact : contact.substr(slash + 1);
}

Client::Client(ClientOptions options) : options_(std::move(options)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  if (options.host.empty() || options.port == 0) {
    return Fail(ErrorCode::kInvalidInput, "gatekeeper host and port are required");
  }
  if (options.credential.chain.empty()) return Fail(ErrorCode::kInvalidInput, "no credential");
  auto ctx = credentials::MakeClientContext(options.credential, options.verifier);
  if (!ctx) return Fail(ctx.error());
  std::unique_ptr<Client> c(new Client(std::move(options)));
  c->ctx_ = *ctx;
  return c;
}

size_t Client::connections_opened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

Result<std::unique_ptr<HttpsConnection>> Client::Borrow(bool* reused) {
  {
    std::lock_guard lock(mu_);
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (c->reusable()) {
        *reused = true;
        return c;
      }
    }
  }
  *reused = false;
  if (options_.credential.leaf().NotAfter() <= credentials::Clock::now()) {
    return Fail(ErrorCode::kProxyExpired, "our proxy has expired: renew it");
  }
  auto ctx = std::static_pointer_cast<boost::asio::ssl::context>(ctx_);
  auto c = HttpsConnection::Open(ctx, options_.host, options_.port, options_.timeout);
  if (c) {
    std::lock_guard lock(mu_);
    ++opened_;
  }
  return c;
}

void Client::Return(std::unique_ptr<HttpsConnection> c) {
  if (!c->reusable()) return;
  std::lock_guard lock(mu_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(c));
}

Result<std::string> Client::Call(const std::string& method, const std::string& target,
                                 const std::string& body, int* status) {
  std::string where = options_.host + ":" + std::to_string(options_.port) + " " + target;
  // A kept-alive connection the site closed fails before any reply byte: every call is safe to
  // send again (reads, or mutations carrying a request id), so retry once on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = false;
    auto conn = Borrow(&reused);
    if (!conn) return Fail(conn.error().Wrap(where));
    bool nothing = false;
    auto r = (*conn)->RoundTrip(method, target, body, {}, options_.timeout, &nothing);
    if (!r) {
      if (reused && nothing && r.error().code() == ErrorCode::kUnavailable) continue;
      return Fail(r.error().Wrap(where));
    }
    Return(std::move(*conn));
    if (r->protocol != std::to_string(kProtocolVersion)) {
      if (r->status >= 300) return Fail(ReplyError(*r, where));
      return Fail(ErrorCode::kProtocol, where + ": the site speaks Kite-Protocol '" + r->protocol +
                                            "', this client " + std::to_string(kProtocolVersion));
    }
    if (r->status < 200 || r->status >= 300) return Fail(ReplyError(*r, where));
    if (status) *status = r->status;
    return std::move(r->body);
  }
  return Fail(ErrorCode::kUnavailable, where + ": connection lost twice");
}

Result<std::string> Client::Ping() {
  auto body = Call("GET", "/ping", "");
  if (!body) return Fail(body.error());
  auto pos = body->find("\"account\":\"");
  if (pos == std::string::npos) return std::string();
  pos += 11;
  return body->substr(pos, body->find('"', pos) - pos);
}

Result<std::string> Client::Info() {
  auto body = Call("GET", "/info", "");
  if (!body) return Fail(body.error());
  auto ad = ParseInfoReply(*body);
  if (!ad) return Fail(ErrorCode::kProtocol, "info reply: " + ad.error().message());
  return ad;
}

Result<Delegation> Client::Delegate(const std::string& request_id, const std::string& existing_id,
                                    std::chrono::seconds lifetime) {
  auto start =
      Call("POST", "/delegations", ToJson(DelegationStartRequest{request_id, existing_id}));
  if (!start) return Fail(start.error());
  auto reply = ParseDelegationReply(*start);
  if (!reply) return Fail(ErrorCode::kProtocol, "delegation reply: " + reply.error().message());
  credentials::ProxyOptions po;
  po.lifetime = lifetime;
  auto chain = credentials::SignDelegation(reply->csr_pem, options_.credential, po);
  if (!chain) return Fail(chain.error().Wrap("signing the site's delegation request"));
  auto done = Call("PUT", "/delegations/" + reply->delegation_id,
                   ToJson(DelegationCompleteRequest{request_id + "/complete", *chain}));
  if (!done) return Fail(done.error());
  auto fin = ParseDelegationReply(*done);
  if (!fin) return Fail(ErrorCode::kProtocol, "delegation reply: " + fin.error().message());
  return Delegation{fin->delegation_id, fin->not_after};
}

namespace {
Result<JobStatus> AsStatus(Result<std::string> body) {
  if (!body) return Fail(body.error());
  auto s = ParseJobStatus(*body);
  if (!s) return Fail(ErrorCode::kProtocol, "job status reply: " + s.error().message());
  return s;
}
}  // namespace

Result<JobStatus> Client::Submit(const std::string& request_id, const JobDescription& job,
                                 bool* existing) {
  int status = 0;
  auto st = AsStatus(Call("POST", "/jobs", ToJson(SubmitRequest{request_id, job}), &status));
  // 201: made now; 200: made for an earlier send of this request id.
  if (st && existing) *existing = status == 200;
  return st;
}

Result<JobStatus> Client::Commit(const std::string& request_id, const std::string& job_id) {
  return AsStatus(Call("POST", "/jobs/" + JobIdFromContact(job_id) + "/commit",
                       ToJson(SimpleRequest{request_id})));
}

Result<JobStatus> Client::Status(const std::string& job_id) {
  return AsStatus(Call("GET", "/jobs/" + JobIdFromContact(job_id), ""));
}

Result<JobStatus> Client::Cancel(const std::string& request_id, const std::string& job_id,
                                 bool only_pending) {
  return AsStatus(Call("POST", "/jobs/" + JobIdFromContact(job_id) + "/cancel",
                       ToJson(SimpleRequest{request_id, only_pending})));
}

Result<JobStatus> Client::Signal(const std::string& request_id, const std::string& job_id,
                                 const SignalRequest& what) {
  SignalRequest r = what;
  r.request_id = request_id;
  return AsStatus(Call("POST", "/jobs/" + JobIdFromContact(job_id) + "/signal", ToJson(r)));
}

kite::Status Client::CommitEnd(const std::string& request_id, const std::string& job_id) {
  auto r = Call("POST", "/jobs/" + JobIdFromContact(job_id) + "/commit-end",
                ToJson(SimpleRequest{request_id}));
  if (!r) return Fail(r.error());
  return {};
}

}  // namespace kite::gram
