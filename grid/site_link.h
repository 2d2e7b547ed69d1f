// A site as the gridmanager talks to it, whatever its grid type: the requests (docs/protocol.md
// names them for Kite's own type), the link that carries them, and the table of links by grid
// type -- the half of each grid-type row (grid/grid_type.h) that speaks to sites. A new grid type
// adds its link and its site information here; nothing else names it.
//
// Threads: links are added at start-up (and by tests); ConnectSite and AskSiteInfo may run on
// any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "gram/client.h"
#include "gram/protocol.h"
#include "grid/resource.h"

namespace kite::grid {

// A job's files on this machine, by the names its description gives them (gram::FileRef::gass,
// gram::StageFile::gass). Kite's own sites fetch and send them through the gridmanager's GASS
// server; a link whose protocol has no such server (ARC's) moves them itself.
struct LocalFile {
  std::string name;
  std::string path;  // absolute
  bool operator==(const LocalFile&) const = default;
};
struct JobFiles {
  std::vector<LocalFile> in;       // executable, stdin, transfer_input_files
  std::vector<LocalFile> out;      // stdout, stderr
  std::vector<LocalFile> results;  // transfer_output_files: the name at the site, the path here
};

// One request to a gatekeeper (docs/protocol.md).
struct SiteRequest {
  enum class Op { kDelegate, kSubmit, kCommit, kStatus, kCancel, kSignal, kCommitEnd };
  Op op = Op::kStatus;
  std::string request_id;      // kStatus: the attempt's base, without a "/op" suffix
  std::string job_id;          // the site's id of the job
  gram::JobDescription job;    // kSubmit; for the others, as planned (links that move files)
  gram::SignalRequest signal;  // kSignal
  std::string delegation_id;   // kDelegate: refresh this delegation in place ("": a new one)
  bool only_pending = false;   // kCancel: only if the job has not started (the broker moves it)
  std::shared_ptr<const JobFiles> files;  // every op but kDelegate: the job's files here
};
std::string_view OpName(SiteRequest::Op op);  // "submit", "status probe", ...

struct SiteAnswer {
  gram::JobStatus job;          // kSubmit, kCommit, kStatus, kCancel, kSignal
  gram::Delegation delegation;  // kDelegate
  // kSubmit: the site had made the job for an earlier send of the request id (perhaps by an
  // earlier run of the gridmanager): it carries that send's addresses and delegation.
  bool existing = false;
};
using SiteDone = std::function<void(Result<SiteAnswer>)>;

// The link to one site, of the site's grid type, with the errors of gram::Client (kUnavailable,
// kTimeout, kIo: no answer; kNotFound, kConflict, kAuthFailed, kInvalidInput: the site's answer).
// `done` runs later on the engine's thread (LinkContext::io), never inside Send.
class SiteLink {
 public:
  virtual ~SiteLink() = default;
  virtual void Send(const SiteRequest& request, SiteDone done) = 0;
};
// Errors that mean "no answer": the site is backed off and the request sent again later.
bool SiteDown(const Error& e);

// What a link is made with: the proxy the gridmanager presents, and where blocking calls run and
// answers go.
struct LinkContext {
  const credentials::Credential* credential = nullptr;
  std::shared_ptr<const credentials::Verifier> verifier;
  boost::asio::thread_pool* pool = nullptr;  // blocking calls
  boost::asio::io_context* io = nullptr;     // where answers are posted (the engine's)
  int max_requests = 8;                      // requests in flight to one site
  std::string proxy_file;  // the proxy file the credential was read from (links that hand it on)
  std::string home;        // KITE_HOME: where links keep what must outlive the gridmanager
  // The site says job `job_id` (SiteRequest::job_id) has news: the engine asks for its status at
  // once rather than at its next probe. Callable from any thread; may be empty.
  std::function<void(const std::string& job_id)> news;
};

using LinkMaker =
    std::function<Result<std::shared_ptr<SiteLink>>(const GridResource&, const LinkContext&)>;

// One request for a site's information (the broker's): as whom, and how long to wait.
struct SiteInfoRequest {
  std::string proxy;   // the proxy file presented
  std::string ca_dir;  // trusted CAs ("" for the default)
  double timeout = 30;
};
// The site's ad (a ClassAd in the new syntax, grid/site_ad.h), or why there is none. Blocking.
using SiteInfoAsker =
    std::function<Result<std::string>(const GridResource&, const SiteInfoRequest&)>;

// Adds the link of grid type `type` (its registry name), and how to ask its sites for their
// information (empty when the type has none). kConflict when the type has a link.
Status AddSiteLink(std::string type, LinkMaker make, SiteInfoAsker info = {});
// A link to `site` through its type's maker: kInvalidInput when the type has no link here.
Result<std::shared_ptr<SiteLink>> ConnectSite(const GridResource& site, const LinkContext& context);
// The site's information through its type's asker: kUnavailable when the type gives none.
Result<std::string> AskSiteInfo(const GridResource& site, const SiteInfoRequest& request);

// Kite's own gatekeeper protocol (grid/kite_link.cpp): the first row.
Result<std::shared_ptr<SiteLink>> MakeKiteLink(const GridResource& site,
                                               const LinkContext& context);
Result<std::string> AskKiteSiteInfo(const GridResource& site, const SiteInfoRequest& request);

// An ARC CE through its REST interface (grid/arc_link.cpp, docs/grid-arc.md): the second row.
Result<std::shared_ptr<SiteLink>> MakeArcLink(const GridResource& site, const LinkContext& context);
// "https://HOST:PORT/PATH": the CE's A-REX service, under which its REST interface lies.
std::string ArcEndpoint(const GridResource& site);

// A Globus GRAM5 gatekeeper through kite-gt5-helper (grid/gt5_link.cpp, docs/grid-gt5.md): the
// third row.
Result<std::shared_ptr<SiteLink>> MakeGt5Link(const GridResource& site, const LinkContext& context);
// "HOST:PORT/SERVICE": the gatekeeper contact GRAM's client takes.
std::string Gt5Contact(const GridResource& site);

}  // namespace kite::grid
