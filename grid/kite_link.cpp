// Kite's own gatekeeper protocol (docs/protocol.md) as a site link -- gram::Client's blocking calls
// run on the gridmanager's pool, answers are posted back to the engine's io_context -- and its
// site information (`info`).
#include <boost/asio/post.hpp>
#include <chrono>

#include "credentials/proxy.h"
#include "gram/client.h"
#include "grid/site_link.h"

namespace kite::grid {
namespace {

namespace asio = boost::asio;
using Op = SiteRequest::Op;

class GramSiteLink : public SiteLink {
 public:
  GramSiteLink(std::shared_ptr<gram::Client> client, asio::thread_pool& pool, asio::io_context& io)
      : client_(std::move(client)), pool_(pool), io_(io) {}

  void Send(const SiteRequest& req, SiteDone done) override {
    asio::post(pool_, [client = client_, req, done = std::move(done), &io = io_]() mutable {
      auto answer = std::make_shared<Result<SiteAnswer>>(Call(*client, req));
      asio::post(io, [answer, done = std::move(done)] { done(std::move(*answer)); });
    });
  }

 private:
  static Result<SiteAnswer> Answer(Result<gram::JobStatus> st) {
    if (!st) return Fail(st.error());
    return SiteAnswer{.job = std::move(*st)};
  }
  static Result<SiteAnswer> Call(gram::Client& c, const SiteRequest& r) {
    switch (r.op) {
      case Op::kDelegate: {
        auto d = c.Delegate(r.request_id, r.delegation_id);
        if (!d) return Fail(d.error());
        return SiteAnswer{.delegation = std::move(*d)};
      }
      case Op::kSubmit: {
        bool existing = false;
        auto a = Answer(c.Submit(r.request_id, r.job, &existing));
        if (a) a->existing = existing;
        return a;
      }
      case Op::kCommit:
        return Answer(c.Commit(r.request_id, r.job_id));
      case Op::kStatus:
        return Answer(c.Status(r.job_id));
      case Op::kCancel:
        return Answer(c.Cancel(r.request_id, r.job_id, r.only_pending));
      case Op::kSignal:
        return Answer(c.Signal(r.request_id, r.job_id, r.signal));
      case Op::kCommitEnd: {
        auto st = c.CommitEnd(r.request_id, r.job_id);
        if (!st) return Fail(st.error());
        return SiteAnswer{};
      }
    }
    return Fail(ErrorCode::kInternal, "unknown site request");
  }

  std::shared_ptr<gram::Client> client_;
  asio::thread_pool& pool_;
  asio::io_context& io_;
};

}  // namespace

Result<std::shared_ptr<SiteLink>> MakeKiteLink(const GridResource& site,
                                               const LinkContext& context) {
  gram::ClientOptions co;
  co.host = site.host;
  co.port = site.port;
  co.credential = *context.credential;
  co.verifier = context.verifier;
  co.max_idle_connections = static_cast<size_t>(context.max_requests) + 2;
  auto client = gram::Client::Create(std::move(co));
  if (!client) return Fail(client.error());
  return std::make_shared<GramSiteLink>(std::shared_ptr<gram::Client>(std::move(*client)),
                                        *context.pool, *context.io);
}

Result<std::string> AskKiteSiteInfo(const GridResource& site, const SiteInfoRequest& request) {
  auto cred = credentials::LoadProxyFile(request.proxy);
  if (!cred) return Fail(cred.error());
  auto verifier = credentials::Verifier::Create(
      {.ca_dir = request.ca_dir.empty() ? credentials::DefaultCaDir() : request.ca_dir});
  if (!verifier) return Fail(verifier.error());
  gram::ClientOptions o;
  o.host = site.host;
  o.port = site.port;
  o.credential = *cred;
  o.verifier = *verifier;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(request.timeout * 1000));
  o.max_idle_connections = 1;
  auto client = gram::Client::Create(std::move(o));
  if (!client) return Fail(client.error());
  return (*client)->Info();
}

}  // namespace kite::grid
