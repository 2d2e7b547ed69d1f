// The proxy watch.
#include "gridmanager/proxy_watch.h"

#include <spdlog/spdlog.h>

namespace kite::gridmanager {

ProxyWatch::ProxyWatch(std::string path, std::shared_ptr<const credentials::Verifier> verifier,
                       std::string identity, struct stat loaded)
    : path_(std::move(path)),
      verifier_(std::move(verifier)),
      identity_(std::move(identity)),
      loaded_(loaded) {}

std::optional<ProxyWatch::Refreshed> ProxyWatch::Check() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return std::nullopt;  // gone for now: keep what we have
  if (st.st_ino == loaded_.st_ino && st.st_size == loaded_.st_size &&
      st.st_mtim.tv_sec == loaded_.st_mtim.tv_sec &&
      st.st_mtim.tv_nsec == loaded_.st_mtim.tv_nsec) {
    return std::nullopt;
  }
  auto cred = credentials::LoadProxyFile(path_);
  Result<credentials::Identity> id = Fail(ErrorCode::kInvalidInput, "unreadable");
  if (cred) {
    id = verifier_->Verify(cred->chain);
  } else {
    id = Fail(cred.error());
  }
  if (!id) {
    // Half-written or not (yet) valid: look again at the next tick, keep the old one meanwhile.
    spdlog::warn("gridmanager: proxy {} changed but cannot be used: {}", path_,
                 id.error().message());
    return std::nullopt;
  }
  loaded_ = st;
  if (id->subject != identity_) {
    spdlog::error("gridmanager: proxy {} now speaks for {}, not {}; keeping the old one", path_,
                  id->subject, identity_);
    return std::nullopt;
  }
  return Refreshed{std::move(*cred), std::move(*id)};
}

}  // namespace kite::gridmanager
