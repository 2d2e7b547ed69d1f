// Shared CLI helpers.
#include "agent/cli/util.h"

#include <cctype>
#include <cstdio>

#include "agent/agent.h"
#include "common/paths.h"

namespace kite::cli {

void Die(const std::string& message, int code) {
  std::fprintf(stderr, "kite: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

void Die(const Error& e, int code) {
  Die(e.message(), code);
}

std::unique_ptr<AgentClient> ConnectOrDie() {
  auto c = AgentClient::Connect(KiteHome());
  if (!c) Die(c.error());
  return std::move(*c);
}

bool IsOwnerName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (unsigned char c : s) {
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.' && c != '@') return false;
  }
  return true;
}

Result<PoolListenerView> AskPoolListener(AgentClient& client, bool recheck) {
  boost::json::object body;
  if (recheck) body["recheck"] = true;
  auto v = client.PostJson("/v1/pool/listener", body);
  if (!v) return Fail(v.error());
  auto text = [&](const char* key) {
    const boost::json::value* x = v->if_contains(key);
    return x && x->is_string() ? std::string(x->as_string()) : std::string();
  };
  auto flag = [&](const char* key) {
    const boost::json::value* x = v->if_contains(key);
    return x && x->is_bool() && x->as_bool();
  };
  return PoolListenerView{.configured = flag("configured"),
                          .listening = flag("listening"),
                          .address = text("address"),
                          .problem = text("problem")};
}

boost::json::array IdsJson(const std::vector<std::string>& ids) {
  boost::json::array a;
  for (auto& id : ids) {
    if (auto s = agent::ParseJobSelector(id); !s) Die(s.error());
    a.push_back(boost::json::string(id));
  }
  return a;
}

}  // namespace kite::cli
