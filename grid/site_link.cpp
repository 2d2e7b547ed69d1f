// Site requests' names, what counts as no answer, and the table of links by grid type.
#include "grid/site_link.h"

#include <map>
#include <mutex>
#include <shared_mutex>

#include "grid/grid_type.h"

namespace kite::grid {
namespace {

struct Row {
  LinkMaker make;
  SiteInfoAsker info;
};

struct Links {
  std::shared_mutex mu;
  std::map<std::string, Row, std::less<>> by_type;
  Links() {
    by_type.emplace("kite", Row{MakeKiteLink, AskKiteSiteInfo});
    by_type.emplace("arc", Row{MakeArcLink, {}});
    by_type.emplace("gt5", Row{MakeGt5Link, {}});
  }
};

Links& TheLinks() {
  static Links links;
  return links;
}

// The row of `type`, copied out of the lock; nullopt when the type has no link here.
std::optional<Row> RowOf(const std::string& type) {
  Links& l = TheLinks();
  std::shared_lock lock(l.mu);
  auto it = l.by_type.find(type);
  if (it == l.by_type.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::string_view OpName(SiteRequest::Op op) {
  switch (op) {
    case SiteRequest::Op::kDelegate:
      return "delegation";
    case SiteRequest::Op::kSubmit:
      return "submit";
    case SiteRequest::Op::kCommit:
      return "commit";
    case SiteRequest::Op::kStatus:
      return "status probe";
    case SiteRequest::Op::kCancel:
      return "cancel";
    case SiteRequest::Op::kSignal:
      return "signal";
    case SiteRequest::Op::kCommitEnd:
      return "commit-end";
  }
  return "?";
}

bool SiteDown(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kUnavailable:
    case ErrorCode::kTimeout:
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      return true;
    default:
      return false;
  }
}

Status AddSiteLink(std::string type, LinkMaker make, SiteInfoAsker info) {
  Links& l = TheLinks();
  std::unique_lock lock(l.mu);
  if (!l.by_type.emplace(type, Row{std::move(make), std::move(info)}).second) {
    return Fail(ErrorCode::kConflict, "grid type '" + type + "' has a site link already");
  }
  return {};
}

Result<std::shared_ptr<SiteLink>> ConnectSite(const GridResource& site,
                                              const LinkContext& context) {
  auto row = RowOf(site.type);
  if (!row) {
    return Fail(ErrorCode::kInvalidInput,
                "this gridmanager has no link for grid type '" + site.type + "'");
  }
  return row->make(site, context);
}

Result<std::string> AskSiteInfo(const GridResource& site, const SiteInfoRequest& request) {
  auto row = RowOf(site.type);
  const GridType* type = FindGridType(site.type);
  if (!row || !row->info || type == nullptr || !type->caps.site_info) {
    return Fail(ErrorCode::kUnavailable,
                "a " + (type ? type->display : site.type) + " gives no site information");
  }
  return row->info(site, request);
}

}  // namespace kite::grid
