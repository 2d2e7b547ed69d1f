// kite: the command line. Talks only to the user's kite-agent (and, for credentials, files).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "agent/cli/commands.h"

namespace {

// HTCondor users type long options with one dash (condor_q -json -constraint ...). CLI11 wants
// two; rewrite the ones Kite knows. Short options (-h) are left alone.
std::vector<std::string> HtcondorStyleArgs(int argc, char** argv) {
  static const std::set<std::string> kLong = {
      "json", "constraint", "reason", "nobatch", "batch",      "grid",         "limit", "timeout",
      "help", "server",     "user",   "valid",   "cert",       "key",          "out",   "limited",
      "bits", "ec",         "exists", "pwstdin", "foreground", "batch-system", "rest"};
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i > 0 && a.size() > 2 && a[0] == '-' && a[1] != '-') {
      auto eq = a.find('=');
      std::string name = a.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
      if (kLong.count(name)) a = "-" + a;
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kite: a personal grid job manager in the spirit of Condor-G"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kite 0.1.0");
  kite::cli::RegisterAgentCommands(app);
  kite::cli::RegisterJobCommands(app);
  kite::cli::RegisterCaCommands(app);
  kite::cli::RegisterProxyCommands(app);
  kite::cli::RegisterMyproxyCommands(app);
  kite::cli::RegisterTestgridCommands(app);

  auto args = HtcondorStyleArgs(argc, argv);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
