// `kite ca init|issue-host|issue-user`: a personal test CA and the certificates it issues.
#include <cstdlib>
#include <iostream>
#include <string>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "common/files.h"
#include "common/paths.h"
#include "credentials/ca.h"
#include "credentials/passphrase.h"

namespace kite::cli {

namespace {

namespace cred = kite::credentials;

struct CaFlags {
  std::string ca_dir;  // default $KITE_HOME/ca
  std::string out;
  std::string subject;
  bool ec = false;
  bool force = false;
  bool pwstdin = false;
  int days = 365;
};

std::string CaDir(const CaFlags& f) {
  return f.ca_dir.empty() ? JoinPath(KiteHome(), "ca") : AbsolutePath(f.ca_dir);
}

cred::KeySpec KeyOf(const CaFlags& f) {
  return f.ec ? cred::KeySpec{cred::KeyAlgorithm::kEcP256}
              : cred::KeySpec{cred::KeyAlgorithm::kRsa};
}

cred::TestCa OpenCa(const CaFlags& f) {
  auto ca = cred::TestCa::Open(CaDir(f));
  if (!ca) Die(ca.error());
  return std::move(*ca);
}

cred::IssueOptions IssueOptionsOf(const CaFlags& f, bool ask_passphrase) {
  cred::IssueOptions o;
  o.key = KeyOf(f);
  o.lifetime = std::chrono::hours(24 * f.days);
  o.overwrite = f.force;
  if (ask_passphrase) {
    auto pw = cred::ReadPassphrase("Enter a passphrase for the new key: ", true);
    if (!pw) Die(pw.error());
    o.passphrase = *pw;
  }
  return o;
}

void RunInit(const CaFlags& f) {
  cred::CaOptions o;
  if (!f.subject.empty()) o.subject = f.subject;
  o.key = KeyOf(f);
  auto ca = cred::TestCa::Init(CaDir(f), o);
  if (!ca) Die(ca.error());
  std::cout << "Created CA " << ca->certificate().Subject() << " in " << ca->dir() << "\n"
            << "Trusted-CA directory: " << ca->trusted_dir() << "\n"
            << "(export X509_CERT_DIR=" << ca->trusted_dir() << " for Globus tools)\n";
}

void RunIssueHost(const CaFlags& f, const std::string& name) {
  auto ca = OpenCa(f);
  std::string out = f.out.empty() ? JoinPath(CaDir(f), "hosts/" + name) : AbsolutePath(f.out);
  auto files = ca.IssueHost(name, out, IssueOptionsOf(f, false));
  if (!files) Die(files.error());
  std::cout << "Issued " << files->subject << "\n  " << files->cert_path << "\n  "
            << files->key_path << "\n";
}

void RunIssueUser(const CaFlags& f, const std::string& dn) {
  auto ca = OpenCa(f);
  std::string out = f.out;
  if (out.empty()) {
    const char* home = std::getenv("HOME");
    out = JoinPath(home ? home : ".", ".globus");
  }
  auto files = ca.IssueUser(dn, AbsolutePath(out), IssueOptionsOf(f, f.pwstdin));
  if (!files) Die(files.error());
  std::cout << "Issued " << files->subject << "\n  " << files->cert_path << "\n  "
            << files->key_path << "\n";
}

void AddCommon(CLI::App* c, CaFlags& f) {
  c->add_option("--ca", f.ca_dir, "CA directory (default $KITE_HOME/ca)");
  c->add_flag("--ec", f.ec, "EC P-256 key instead of RSA-2048");
}

}  // namespace

void RegisterCaCommands(CLI::App& app) {
  auto flags = std::make_shared<CaFlags>();
  auto name = std::make_shared<std::string>();
  CLI::App* ca = app.add_subcommand("ca", "Personal test certificate authority");
  ca->require_subcommand(1);

  CLI::App* init = ca->add_subcommand("init", "Create a test CA in $KITE_HOME/ca");
  AddCommon(init, *flags);
  init->add_option("--subject", flags->subject,
                   "CA subject (default /O=Grid/OU=Kite/CN=Kite Test CA)");
  init->callback([flags] { RunInit(*flags); });

  CLI::App* host =
      ca->add_subcommand("issue-host", "Issue a host certificate (hostcert.pem, hostkey.pem)");
  AddCommon(host, *flags);
  host->add_option("NAME", *name, "Host name")->required();
  host->add_option("--out", flags->out, "Output directory (default $KITE_HOME/ca/hosts/NAME)");
  host->add_option("--days", flags->days, "Validity in days")->check(CLI::PositiveNumber);
  host->add_flag("--force", flags->force, "Replace existing files");
  host->callback([flags, name] { RunIssueHost(*flags, *name); });

  CLI::App* user =
      ca->add_subcommand("issue-user", "Issue a user certificate (usercert.pem, userkey.pem)");
  AddCommon(user, *flags);
  user->add_option("DN", *name, "Subject, e.g. \"CN=Jane Doe\" (put under the CA's name)")
      ->required();
  user->add_option("--out", flags->out, "Output directory (default ~/.globus)");
  user->add_option("--days", flags->days, "Validity in days")->check(CLI::PositiveNumber);
  user->add_flag("--force", flags->force, "Replace existing files");
  user->add_flag("--pwstdin", flags->pwstdin, "Encrypt the key with a passphrase read from stdin");
  user->callback([flags, name] { RunIssueUser(*flags, *name); });
}

}  // namespace kite::cli
