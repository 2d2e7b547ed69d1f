// A stand-in `kite` with only the credential verbs, for running the integration scripts before (or
// without) the full CLI: same Register* functions, same exit-status contract.
#include <CLI/CLI.hpp>

#include "agent/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kite (credential verbs only)"};
  app.require_subcommand(1);
  kite::cli::RegisterCaCommands(app);
  kite::cli::RegisterProxyCommands(app);
  kite::cli::RegisterMyproxyCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
