// MyProxy renewal of proxies (see myproxy_renewal.h).
#include "agent/myproxy_renewal.h"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstdlib>

#include "common/files.h"
#include "credentials/certificate.h"
#include "credentials/myproxy.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"

namespace kite::agent {
namespace cred = kite::credentials;
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string LocalUser() {
  if (auto* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  return std::to_string(::geteuid());
}

Result<std::pair<std::string, uint16_t>> SplitServer(const std::string& server) {
  std::string host = server;
  long port = 7512;  // MyProxy's port
  if (auto colon = server.rfind(':'); colon != std::string::npos) {
    host = server.substr(0, colon);
    char* end = nullptr;
    port = std::strtol(server.c_str() + colon + 1, &end, 10);
    if (colon + 1 == server.size() || *end != '\0' || port <= 0 || port > 65535) {
      return Fail(ErrorCode::kInvalidInput, "'" + server + "': bad port (give HOST[:PORT])");
    }
  }
  if (host.empty() || host.find_first_of(" /\t") != std::string::npos) {
    return Fail(ErrorCode::kInvalidInput, "'" + server + "': bad host (give HOST[:PORT])");
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

Result<std::string> ReadPassphraseFile(const std::string& path) {
  if (!FileExists(path)) {
    return Fail(ErrorCode::kNotFound, "pass phrase file " + path + " does not exist");
  }
  // Private like a key: the owner's alone.
  if (auto st = CheckPrivateFile(path); !st) {
    return Fail(st.error().code(), "pass phrase file: " + st.error().message());
  }
  auto text = ReadFile(path, {.max_bytes = 4096});  // a pass phrase, not a file fed by mistake
  if (!text) return Fail(text.error());
  std::string pw = *text;
  while (!pw.empty() && (pw.back() == '\n' || pw.back() == '\r')) pw.pop_back();
  if (pw.size() < 6) {
    return Fail(ErrorCode::kInvalidInput,
                "pass phrase in " + path + " is shorter than 6 characters (MyProxy's minimum)");
  }
  return pw;
}

}  // namespace

std::string CheckMyProxyServer(const std::string& server) {
  auto hp = SplitServer(server);
  return hp ? "" : hp.error().message();
}

std::string CheckPassphraseFile(const std::string& path) {
  auto pw = ReadPassphraseFile(path);
  return pw ? "" : pw.error().message();
}

Result<double> RenewFromMyProxy(const MyProxySettings& s, const std::string& proxy_path) {
  auto hp = SplitServer(s.server);
  if (!hp) return Fail(hp.error());
  auto pw = ReadPassphraseFile(s.passphrase_file);
  if (!pw) return Fail(pw.error());
  auto verifier = cred::Verifier::Create({.ca_dir = cred::DefaultCaDir()});
  if (!verifier) return Fail(verifier.error().Wrap("trusted CAs"));

  // Whose proxy the file holds now (it may have expired: renewing such a one is the point).
  std::string want;
  if (auto old = cred::LoadProxyFile(proxy_path)) {
    want = cred::EndEntity(old->chain).Subject();
  }

  cred::MyProxyOptions o;
  o.host = hp->first;
  o.port = hp->second;
  o.username = s.username.empty() ? LocalUser() : s.username;
  o.passphrase = *pw;
  o.cred_name = s.credential_name;
  o.server_dn = s.server_dn;
  o.lifetime = std::chrono::seconds(static_cast<int64_t>(s.lifetime));
  o.verifier = *verifier;
  auto got = cred::MyProxyGet(o);
  if (!got) return Fail(got.error().Wrap("MyProxy " + s.server));
  auto id = (*verifier)->Verify(got->chain);
  if (!id) return Fail(id.error().Wrap("the proxy MyProxy returned"));
  if (!want.empty() && id->subject != want) {
    return Fail(ErrorCode::kAuthFailed, "MyProxy returned a proxy for " + id->subject +
                                            ", not for " + want + "; " + proxy_path +
                                            " left as it was");
  }
  if (auto st = cred::SaveProxyFile(proxy_path, *got); !st) return Fail(st.error());
  return std::chrono::duration<double>(id->not_after.time_since_epoch()).count();
}

ProxyRenewer::ProxyRenewer(boost::asio::io_context& io, MyProxySettings settings, Done done)
    : io_(io), settings_(std::move(settings)), done_(std::move(done)) {}

ProxyRenewer::~ProxyRenewer() {
  worker_.join();
}

bool ProxyRenewer::Consider(const std::string& proxy, double seconds_left) {
  if (!settings_.enabled() || seconds_left >= settings_.renew_before) return false;
  if (busy_[proxy]) return false;
  if (auto it = failed_at_.find(proxy);
      it != failed_at_.end() && SteadySeconds() - it->second < settings_.retry_after) {
    return false;
  }
  busy_[proxy] = true;
  spdlog::info("myproxy: renewing {} from {} ({:.0f} s left)", proxy, settings_.server,
               seconds_left);
  boost::asio::post(worker_, [this, proxy] {
    auto r = RenewFromMyProxy(settings_, proxy);
    boost::asio::post(io_, [this, proxy, r] {
      busy_[proxy] = false;
      if (r) {
        failed_at_.erase(proxy);
        spdlog::info("myproxy: renewed {}; valid until {:.0f}", proxy, *r);
      } else {
        failed_at_[proxy] = SteadySeconds();
        spdlog::warn("myproxy: renewing {} failed: {}", proxy, r.error().message());
      }
      if (done_) done_(proxy, r);
    });
  });
  return true;
}

}  // namespace kite::agent
