// `kite myproxy get|store`: a proxy from or to a MyProxy server (myproxy-logon / myproxy-init).
#include <cstdlib>
#include <iostream>
#include <string>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "common/files.h"
#include "common/paths.h"
#include "credentials/certificate.h"
#include "credentials/myproxy.h"
#include "credentials/passphrase.h"
#include "credentials/verify.h"

namespace kite::cli {

namespace {

namespace cred = kite::credentials;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Flags {
  std::string server = Env("MYPROXY_SERVER");
  std::string user;
  std::string valid = "12:00";
  std::string cred_lifetime = "168:00";
  std::string out, proxy, cert, key, server_dn = Env("MYPROXY_SERVER_DN"), ca_dir, cred_name;
  bool pwstdin = false;
  int bits = 0;
};

// Fills host, port, lifetime, CAs and the passphrase from the flags.
cred::MyProxyOptions OptionsOf(const Flags& f, bool confirm) {
  cred::MyProxyOptions o;
  if (f.server.empty()) Die(Error(ErrorCode::kInvalidInput, "give --server HOST[:PORT]"));
  o.host = f.server;
  if (std::string p = Env("MYPROXY_SERVER_PORT"); !p.empty())
    o.port = static_cast<uint16_t>(std::atoi(p.c_str()));
  if (auto colon = f.server.rfind(':'); colon != std::string::npos) {
    o.host = f.server.substr(0, colon);
    int port = std::atoi(f.server.c_str() + colon + 1);
    if (port <= 0 || port > 65535) Die(Error(ErrorCode::kInvalidInput, "bad port in " + f.server));
    o.port = static_cast<uint16_t>(port);
  }
  o.username = f.user.empty() ? Env("LOGNAME") : f.user;
  o.server_dn = f.server_dn;
  o.cred_name = f.cred_name;
  auto lifetime = cred::ParseDuration(f.valid);
  if (!lifetime) Die(lifetime.error());
  o.lifetime = *lifetime;
  if (f.bits > 0) o.key = {cred::KeyAlgorithm::kRsa, f.bits};
  std::string dir = f.ca_dir.empty() ? cred::DefaultCaDir() : f.ca_dir;
  auto verifier = cred::Verifier::Create({.ca_dir = dir});
  if (!verifier) Die(verifier.error());
  o.verifier = *verifier;
  auto pw = cred::ReadPassphrase("Enter MyProxy pass phrase: ", f.pwstdin);
  if (!pw) Die(pw.error());
  if (confirm && !f.pwstdin) {
    auto again = cred::ReadPassphrase("Verifying - Enter MyProxy pass phrase: ", false);
    if (!again || *again != *pw) Die(Error(ErrorCode::kInvalidInput, "pass phrases differ"));
  }
  if (pw->size() < 6) {
    Die(Error(ErrorCode::kInvalidInput, "MyProxy pass phrases have at least 6 characters"));
  }
  o.passphrase = *pw;
  return o;
}

void RunGet(const Flags& f) {
  auto o = OptionsOf(f, false);
  auto c = cred::MyProxyGet(o);
  if (!c) Die(c.error());
  std::string out = f.out.empty() ? DefaultProxyPath() : f.out;
  if (auto st = cred::SaveProxyFile(out, *c); !st) Die(st.error());
  std::cout << "A credential has been received for user " << o.username << " in " << out << ".\n";
}

std::string HomeFile(const char* env, const char* rel) {
  if (const char* v = std::getenv(env); v && *v) return v;
  const char* home = std::getenv("HOME");
  return JoinPath(home ? home : ".", rel);
}

// What to delegate from: --proxy FILE, or (as myproxy-init) the user's certificate and key.
cred::Credential SourceCredential(const Flags& f) {
  if (!f.proxy.empty()) {
    auto proxy = cred::LoadProxyFile(f.proxy);
    if (!proxy) Die(proxy.error());
    return std::move(*proxy);
  }
  std::string cert = f.cert.empty() ? HomeFile("X509_USER_CERT", ".globus/usercert.pem") : f.cert;
  std::string key = f.key.empty() ? HomeFile("X509_USER_KEY", ".globus/userkey.pem") : f.key;
  auto ask = [&]() -> Result<std::string> {
    return cred::ReadPassphrase("Enter GRID pass phrase for this identity: ", f.pwstdin);
  };
  auto user = cred::LoadCertificateAndKey(cert, key, ask);
  if (!user) Die(user.error());
  return std::move(*user);
}

void RunStore(const Flags& f) {
  auto source = SourceCredential(f);
  auto stored = cred::ParseDuration(f.cred_lifetime);
  if (!stored) Die(stored.error());
  auto o = OptionsOf(f, true);
  if (auto st = cred::MyProxyStore(o, source, *stored); !st) Die(st.error());
  std::cout << "A proxy valid for " << stored->count() / 3600 << " hours for user " << o.username
            << " now exists on " << o.host << ".\n";
}

void AddCommon(CLI::App* c, Flags& f) {
  c->add_option("-s,--server", f.server, "MyProxy server HOST[:PORT] (default $MYPROXY_SERVER)");
  c->add_option("-l,--user", f.user, "MyProxy account name (default $LOGNAME)");
  c->add_option("--server-dn", f.server_dn, "Expected server subject (default host/HOST)");
  c->add_option("--ca-dir", f.ca_dir, "Trusted-CA directory (default $X509_CERT_DIR, ...)");
  c->add_option("-k,--cred-name", f.cred_name, "Credential name");
  c->add_flag("-S,--pwstdin", f.pwstdin, "Read the pass phrase from stdin");
}

}  // namespace

void RegisterMyproxyCommands(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* mp = app.add_subcommand("myproxy", "Proxies kept on a MyProxy server");
  mp->require_subcommand(1);

  CLI::App* get = mp->add_subcommand("get", "Retrieve a proxy (like myproxy-logon)");
  AddCommon(get, *flags);
  get->add_option("-t,--valid", flags->valid, "Lifetime asked for, HH:MM (default 12:00)");
  get->add_option("-o,--out", flags->out, "Where to write it (default the proxy path)");
  get->add_option("--bits", flags->bits, "RSA key of N bits instead of EC P-256")
      ->check(CLI::Range(2048, 16384));
  get->callback([flags] { RunGet(*flags); });

  CLI::App* store = mp->add_subcommand("store", "Store a proxy (like myproxy-init)");
  AddCommon(store, *flags);
  store->add_option("-c,--cred-lifetime", flags->cred_lifetime,
                    "Lifetime of the stored credential, HH:MM (default 168:00)");
  store->add_option("-t,--valid", flags->valid,
                    "Longest lifetime a retrieval may ask for, HH:MM (default 12:00)");
  store->add_option("--proxy", flags->proxy, "Delegate from this proxy file instead");
  store->add_option("--cert", flags->cert, "Certificate (default ~/.globus/usercert.pem)");
  store->add_option("--key", flags->key, "Private key (default ~/.globus/userkey.pem)");
  store->callback([flags] { RunStore(*flags); });
}

}  // namespace kite::cli
