// kite: the command line. Talks only to the user's kite-agent (and, for credentials, files).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent/cli/commands.h"

namespace {

// True for a word shaped like a single-dash long option: "-name" or "-name=value", name being a
// letter and then letters, digits, '-' or '_' (so "-5", "-1 < x" and "-" are not).
bool LooksLikeLongOption(const std::string& a) {
  if (a.size() < 3 || a[0] != '-' || !std::isalpha(static_cast<unsigned char>(a[1]))) return false;
  size_t end = std::min(a.find('='), a.size());
  for (size_t i = 2; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(a[i]);
    if (!std::isalnum(c) && c != '-' && c != '_') return false;
  }
  return end > 2;
}

// HTCondor users type long options with one dash (condor_q -json, condor_submit -dry-run). CLI11
// wants two and would read "-dry-run" as the short flags -d -r -y ..., or "-terse" as -t with
// the value "erse". So every single-dash word shaped like a long option ("-name",
// "-name=value") becomes a double-dash one before CLI11 sees it: a long option Kite knows is
// taken, any other is refused as unknown by name. Short options stand alone (-h, -a VALUE);
// anything after "--" is left as it is. condor_q's "-af:MODS" (or -autoformat:MODS) becomes
// "--af-modifiers=MODS --af", CLI11 knowing no option suffixes.
std::vector<std::string> HtcondorStyleArgs(int argc, char** argv) {
  std::vector<std::string> out;
  bool rest = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    rest = rest || a == "--";
    if (!rest && i > 0) {
      for (const char* af : {"-af:", "--af:", "-autoformat:", "--autoformat:"}) {
        if (a.rfind(af, 0) == 0) {
          out.push_back("--af-modifiers=" + a.substr(std::strlen(af)));
          a = "--af";
          break;
        }
      }
    }
    if (!rest && i > 0 && LooksLikeLongOption(a)) a = "-" + a;
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
  kite::cli::RegisterSubmitCommand(app);
  kite::cli::RegisterQueryCommands(app);
  kite::cli::RegisterJobCommands(app);
  kite::cli::RegisterCaCommands(app);
  kite::cli::RegisterProxyCommands(app);
  kite::cli::RegisterMyproxyCommands(app);
  kite::cli::RegisterTestgridCommands(app);
  kite::cli::RegisterStatusCommand(app);
  kite::cli::RegisterGlideinCommands(app);
  kite::cli::RegisterDagCommands(app);
  kite::cli::RegisterPoolCommands(app);

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
