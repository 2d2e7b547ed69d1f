// The `kite` command line: each group of verbs registers itself on the root CLI11 app.
//
// A Register* function adds its subcommands and their callbacks. A callback that fails prints one
// line to stderr and throws CLI::RuntimeError(exit_code), which main() turns into the exit status.
#pragma once

#include <CLI/CLI.hpp>

namespace kite::cli {

void RegisterAgentCommands(CLI::App& app);     // agent start|stop|status
void RegisterSubmitCommand(CLI::App& app);     // submit
void RegisterQueryCommands(CLI::App& app);     // q, history
void RegisterJobCommands(CLI::App& app);       // rm, hold, release, wait, log
void RegisterCaCommands(CLI::App& app);        // ca init|issue-host|issue-user
void RegisterProxyCommands(CLI::App& app);     // proxy init|info|destroy
void RegisterMyproxyCommands(CLI::App& app);   // myproxy get|store
void RegisterTestgridCommands(CLI::App& app);  // testgrid up|status|down
void RegisterStatusCommand(CLI::App& app);     // status (the pool's slots)
void RegisterGlideinCommands(CLI::App& app);   // glidein submit|q|rm
void RegisterDagCommands(CLI::App& app);       // dag submit|status
void RegisterPoolCommands(CLI::App& app);      // pool credential create|revoke

}  // namespace kite::cli
