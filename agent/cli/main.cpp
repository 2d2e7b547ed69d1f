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

// Edits (insertions, deletions, substitutions) from `a` to `b`.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// HTCondor's tools a user may reach for by their condor_ name, and what Kite has instead ("":
// nothing yet).
struct Equivalent {
  const char* htcondor;
  const char* kite;
};
constexpr Equivalent kEquivalents[] = {
    {"rm", "rm"},         {"hold", "hold"},         {"release", "release"},
    {"q", "q"},           {"submit", "submit"},     {"history", "history"},
    {"status", "status"}, {"vacate_job", "vacate"}, {"submit_dag", "dag submit"},
    {"tail", ""},         {"ssh_to_job", ""},
};

// "" when `word` names a command of `app`; otherwise what to tell the user: that it is unknown,
// and the nearest commands (or Kite's name for an HTCondor tool).
std::string UnknownCommand(CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
    for (const auto& alias : sub->get_aliases()) names.push_back(alias);
  }
  if (std::find(names.begin(), names.end(), word) != names.end()) return "";
  std::string bare = word.rfind("condor_", 0) == 0 ? word.substr(7) : word;
  std::string out = "kite: unknown command '" + word + "'";
  for (const auto& e : kEquivalents) {
    if (bare != e.htcondor) continue;
    if (*e.kite == '\0')
      return out + " (HTCondor's condor_" + bare + " has no Kite equivalent yet)\n";
    return out + "; did you mean 'kite " + e.kite + "'?\n";
  }
  // The nearest command: one it begins, or one a typo away (an edit per three letters at most).
  std::string hint;
  size_t best = std::max<size_t>(1, bare.size() / 3) + 1;
  for (const auto& n : names) {
    size_t d = n.rfind(bare, 0) == 0 && bare.size() >= 2 ? 1 : EditDistance(bare, n);
    if (d < best) best = d, hint = "kite " + n;
  }
  if (!hint.empty()) out += "; did you mean '" + hint + "'?";
  return out + "\n'kite --help' lists the commands.\n";
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

  // A command word Kite does not know is said so by name (CLI11 would only say that a command is
  // required), with the nearest one.
  if (argc > 1 && argv[1][0] != '-' && argv[1][0] != '\0') {
    if (auto why = UnknownCommand(app, argv[1]); !why.empty()) {
      std::fputs(why.c_str(), stderr);
      return 2;
    }
  }
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
