// Shared bits of the CLI verbs: failing with one line, connecting, job id lists.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "client/agent_client.h"
#include "common/error.h"

namespace kite::cli {

// The agent's client (client/agent_client.h), as every verb uses it.
using client::AgentClient;
using client::AgentError;
using client::Reply;

// Prints "kite: MESSAGE" to stderr and ends the verb with exit status `code`.
[[noreturn]] void Die(const std::string& message, int code = 1);
[[noreturn]] void Die(const Error& e, int code = 1);

// Connects to the user's agent or dies with a hint to start it.
std::unique_ptr<AgentClient> ConnectOrDie();

// True for a word that names a user (condor_q's and condor_rm's owner arguments): a letter or
// '_', then letters, digits, '_', '-', '.' or '@'.
bool IsOwnerName(const std::string& s);

// The agent's glide-in listener as POST /v1/pool/listener tells it (docs/api.md): where glide-ins
// dial, or why they cannot. `recheck`: the agent looks at its proxy again first.
struct PoolListenerView {
  bool configured = false;
  bool listening = false;
  std::string address;
  std::string problem;
};
Result<PoolListenerView> AskPoolListener(AgentClient& client, bool recheck);

// Validates "C" / "C.P" ids; dies on a bad one.
boost::json::array IdsJson(const std::vector<std::string>& ids);

}  // namespace kite::cli
