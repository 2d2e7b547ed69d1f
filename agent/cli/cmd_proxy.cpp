// `kite proxy init|info|destroy`: the user's RFC 3820 proxy, as grid-proxy-init/-info/-destroy.
#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "common/files.h"
#include "common/paths.h"
#include "credentials/passphrase.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"

namespace kite::cli {

namespace {

namespace cred = kite::credentials;

std::string HomeFile(const char* env, const char* rel) {
  if (const char* v = std::getenv(env); v && *v) return v;
  const char* home = std::getenv("HOME");
  return JoinPath(home ? home : ".", rel);
}

std::string LocalTime(cred::Clock::time_point t) {
  std::time_t tt = cred::Clock::to_time_t(t);
  char buf[64];
  struct tm tm {};
  localtime_r(&tt, &tm);
  std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return buf;
}

struct InitFlags {
  std::string cert, key, out, valid = "12:00";
  bool limited = false, ec = false, pwstdin = false, quiet = false, no_verify = false;
  int bits = 0, path_length = -1;
};

void RunInit(const InitFlags& f) {
  std::string cert = f.cert.empty() ? HomeFile("X509_USER_CERT", ".globus/usercert.pem") : f.cert;
  std::string key = f.key.empty() ? HomeFile("X509_USER_KEY", ".globus/userkey.pem") : f.key;
  // Someone with no certificate of their own who ran `kite testgrid up` has the test grid's: the
  // same command then works for them (it is the one the expiry e-mail gives).
  std::string testgrid = JoinPath(KiteHome(), "testgrid");
  if (f.cert.empty() && f.key.empty() && !FileExists(cert) &&
      FileExists(testgrid + "/usercert.pem")) {
    cert = testgrid + "/usercert.pem";
    key = testgrid + "/userkey.pem";
    if (!f.quiet) std::cout << "Using the test grid's certificate " << cert << "\n";
  }
  auto lifetime = cred::ParseDuration(f.valid);
  if (!lifetime) Die(lifetime.error());
  auto ask = [&]() -> Result<std::string> {
    return cred::ReadPassphrase("Enter GRID pass phrase for this identity: ", f.pwstdin);
  };
  auto user = cred::LoadCertificateAndKey(cert, key, ask);
  if (!user) Die(user.error());
  if (!f.quiet) std::cout << "Your identity: " << cred::EndEntity(user->chain).Subject() << "\n";
  cred::ProxyOptions o;
  o.lifetime = *lifetime;
  o.limited = f.limited;
  o.path_length = f.path_length;
  if (f.bits > 0) o.key = {cred::KeyAlgorithm::kRsa, f.bits};
  auto proxy = cred::CreateProxy(*user, o);
  if (!proxy) Die(proxy.error());
  if (!f.no_verify) {
    if (std::string dir = cred::DefaultCaDir(); !dir.empty()) {
      auto v = cred::Verifier::Create({.ca_dir = dir});
      auto id = v ? (*v)->Verify(proxy->credential.chain) : Result<cred::Identity>(Fail(v.error()));
      if (!id) Die(id.error().Wrap("the new proxy does not verify against " + dir));
    }
  }
  std::string out = f.out.empty() ? DefaultProxyPath() : f.out;
  if (auto st = cred::SaveProxyFile(out, proxy->credential); !st) Die(st.error());
  if (proxy->clipped) {
    std::cerr << "Warning: your certificate expires before the requested proxy lifetime; the "
                 "proxy ends with it.\n";
  }
  if (!f.quiet) {
    std::cout << "Your proxy is valid until: " << LocalTime(proxy->credential.leaf().NotAfter())
              << "\n";
  }
}

struct InfoFlags {
  std::string file, valid;
  bool json = false, exists = false, subject = false, identity = false, timeleft = false,
       path = false, verify = false;
};

void PrintInfo(const cred::ProxyInfo& i, const std::string& path, const InfoFlags& f) {
  if (f.subject) std::cout << i.subject << "\n";
  if (f.identity) std::cout << i.identity << "\n";
  if (f.timeleft) std::cout << i.time_left.count() << "\n";
  if (f.path) std::cout << path << "\n";
  if (f.subject || f.identity || f.timeleft || f.path) return;
  if (f.json) {
    boost::json::object o{{"subject", i.subject},
                          {"issuer", i.issuer},
                          {"identity", i.identity},
                          {"type", std::string(cred::ProxyTypeName(i.type))},
                          {"limited", i.type == cred::ProxyType::kLimited},
                          {"key_algorithm", i.key_algorithm},
                          {"strength", i.bits},
                          {"path", path},
                          {"not_after", cred::Clock::to_time_t(i.not_after)},
                          {"timeleft", i.time_left.count()}};
    std::cout << boost::json::serialize(o) << "\n";
    return;
  }
  std::cout << "subject  : " << i.subject << "\n"
            << "issuer   : " << i.issuer << "\n"
            << "identity : " << i.identity << "\n"
            << "type     : " << cred::ProxyTypeName(i.type) << "\n"
            << "strength : " << i.bits << " bits (" << i.key_algorithm << ")\n"
            << "path     : " << path << "\n"
            << "timeleft : " << cred::FormatDuration(i.time_left)
            << (i.time_left.count() == 0 ? "  (EXPIRED)" : "") << "\n";
}

// Checks the chain against the trusted CAs as a gatekeeper would; dies with the reason.
void VerifyOrDie(const cred::CertChain& chain) {
  std::string dir = cred::DefaultCaDir();
  if (dir.empty()) Die(Error(ErrorCode::kNotFound, "no trusted-CA directory (set X509_CERT_DIR)"));
  auto v = cred::Verifier::Create({.ca_dir = dir});
  if (!v) Die(v.error());
  if (auto id = (*v)->Verify(chain); !id) Die(id.error().Wrap("proxy does not verify"));
}

void RunInfo(const InfoFlags& f) {
  std::string path = f.file.empty() ? DefaultProxyPath() : f.file;
  auto proxy = cred::LoadProxyFile(path);
  if (!proxy) {
    if (f.exists) throw CLI::RuntimeError(1);
    Die(proxy.error());
  }
  auto info = cred::DescribeCredential(proxy->chain);
  if (f.verify) VerifyOrDie(proxy->chain);
  if (f.exists) {
    std::chrono::seconds need{1};
    if (!f.valid.empty()) {
      auto d = cred::ParseDuration(f.valid);
      if (!d) Die(d.error(), 2);
      need = std::max(*d, need);
    }
    if (info.time_left < need) throw CLI::RuntimeError(1);
    return;
  }
  PrintInfo(info, path, f);
}

void RunDestroy(const std::string& file) {
  std::string path = file.empty() ? DefaultProxyPath() : file;
  if (!FileExists(path)) Die(Error(ErrorCode::kNotFound, "no proxy at " + path));
  // Overwrite before unlinking so the key does not linger in freed blocks of a tmpfs.
  if (int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC); fd >= 0) {
    off_t size = ::lseek(fd, 0, SEEK_END);
    ::lseek(fd, 0, SEEK_SET);
    std::string zeros(static_cast<size_t>(std::max<off_t>(size, 0)), '\0');
    (void)!::write(fd, zeros.data(), zeros.size());
    ::fsync(fd);
    ::close(fd);
  }
  if (::unlink(path.c_str()) != 0) Die(FailErrno("remove " + path).error());
}

}  // namespace

void RegisterProxyCommands(CLI::App& app) {
  CLI::App* proxy = app.add_subcommand("proxy", "Your X.509 proxy certificate");
  proxy->require_subcommand(1);

  auto init_flags = std::make_shared<InitFlags>();
  CLI::App* init = proxy->add_subcommand("init", "Make a proxy from your certificate and key");
  init->add_option("--cert", init_flags->cert,
                   "Certificate (default ~/.globus/usercert.pem, else the test grid's)");
  init->add_option("--key", init_flags->key,
                   "Private key (default ~/.globus/userkey.pem, else the test grid's)");
  init->add_option("--out", init_flags->out,
                   "Proxy file (default $X509_USER_PROXY or /tmp/x509up_u<uid>)");
  init->add_option("--valid", init_flags->valid, "Lifetime HH:MM (default 12:00)");
  init->add_flag("--limited", init_flags->limited, "Make a limited proxy");
  auto* bits = init->add_option("--bits", init_flags->bits, "RSA key of N bits")
                   ->check(CLI::Range(2048, 16384));
  init->add_flag("--ec", init_flags->ec, "EC P-256 key (the default)")->excludes(bits);
  init->add_option("--path-length", init_flags->path_length, "Proxies allowed below this one");
  init->add_flag("--pwstdin", init_flags->pwstdin, "Read the key's passphrase from stdin");
  init->add_flag("-q,--quiet", init_flags->quiet, "Print nothing on success");
  init->add_flag("--no-verify", init_flags->no_verify, "Skip checking the new proxy's chain");
  init->callback([init_flags] { RunInit(*init_flags); });

  auto info_flags = std::make_shared<InfoFlags>();
  CLI::App* info = proxy->add_subcommand("info", "Show the proxy");
  info->add_option("-f,--file", info_flags->file, "Proxy file");
  info->add_flag("-j,--json", info_flags->json, "JSON output");
  info->add_flag("-e,--exists", info_flags->exists,
                 "Print nothing; exit 1 when there is no valid proxy");
  info->add_option("--valid", info_flags->valid, "With --exists: needs at least HH:MM left");
  info->add_flag("--verify", info_flags->verify,
                 "Also check the chain against the trusted CAs ($X509_CERT_DIR, ...)");
  info->add_flag("--subject", info_flags->subject, "Print only the subject");
  info->add_flag("--identity", info_flags->identity, "Print only the identity");
  info->add_flag("--timeleft", info_flags->timeleft, "Print only the seconds left");
  info->add_flag("--path", info_flags->path, "Print only the file's path");
  info->callback([info_flags] { RunInfo(*info_flags); });

  auto destroy_file = std::make_shared<std::string>();
  CLI::App* destroy = proxy->add_subcommand("destroy", "Erase the proxy file");
  destroy->add_option("-f,--file", *destroy_file, "Proxy file");
  destroy->callback([destroy_file] { RunDestroy(*destroy_file); });
}

}  // namespace kite::cli
