// Parsing config.toml with toml++.
#include "agent/config.h"

#include <toml++/toml.h>

#include <boost/asio/ip/address.hpp>

#include <functional>
#include <map>
#include <string>

#include "agent/myproxy_renewal.h"
#include "agent/rest_server.h"
#include "common/files.h"
#include "credentials/proxy.h"

namespace kite::agent {
namespace {

std::string Where(const std::string& file, const toml::node& n, const std::string& key) {
  return file + ":" + std::to_string(n.source().begin.line) + ": " + key;
}

using Setter = std::function<Status(const toml::node&, const std::string& where)>;

Setter Number(double* out, double min) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<double>();
    if (!v) return Fail(ErrorCode::kInvalidInput, where + ": expected a number");
    if (*v < min)
      return Fail(ErrorCode::kInvalidInput, where + ": must be at least " + std::to_string(min));
    *out = *v;
    return {};
  };
}

Setter Integer(int* out, int min) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<int64_t>();
    if (!v || !n.is_integer())
      return Fail(ErrorCode::kInvalidInput, where + ": expected an integer");
    if (*v < min || *v > 1000000000)
      return Fail(ErrorCode::kInvalidInput, where + ": out of range");
    *out = static_cast<int>(*v);
    return {};
  };
}

Setter OneOf(std::string* out, std::initializer_list<const char*> allowed) {
  std::vector<std::string> ok(allowed.begin(), allowed.end());
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<std::string>();
    if (!v) return Fail(ErrorCode::kInvalidInput, where + ": expected a string");
    for (auto& a : ok) {
      if (*v == a) {
        *out = *v;
        return {};
      }
    }
    std::string list;
    for (auto& a : ok) list += (list.empty() ? "" : ", ") + a;
    return Fail(ErrorCode::kInvalidInput, where + ": must be one of " + list);
  };
}

Setter String(std::string* out, std::function<std::string(const std::string&)> check = {}) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<std::string>();
    if (!v || !n.is_string()) return Fail(ErrorCode::kInvalidInput, where + ": expected a string");
    if (check) {
      if (std::string problem = check(*v); !problem.empty()) {
        return Fail(ErrorCode::kInvalidInput, where + ": " + problem);
      }
    }
    *out = *v;
    return {};
  };
}

std::string CheckListenHost(const std::string& v) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(v, ec);
  return ec ? "'" + v + "' is not an IP address" : "";
}

// Seconds as a number, or a duration as `kite proxy init --valid` takes it ("1h", "30m", "12:00").
Setter Seconds(double* out, double min) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    double v = 0;
    if (auto text = n.value<std::string>(); text && n.is_string()) {
      auto d = credentials::ParseDuration(*text);
      if (!d) return Fail(ErrorCode::kInvalidInput, where + ": " + d.error().message());
      v = static_cast<double>(d->count());
    } else if (auto num = n.value<double>()) {
      v = *num;
    } else {
      return Fail(ErrorCode::kInvalidInput, where + ": expected seconds or a duration (\"1h\")");
    }
    if (v < min)
      return Fail(ErrorCode::kInvalidInput, where + ": must be at least " + std::to_string(min));
    *out = v;
    return {};
  };
}

Setter Bool(bool* out) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    if (!n.is_boolean()) return Fail(ErrorCode::kInvalidInput, where + ": expected true or false");
    *out = *n.value<bool>();
    return {};
  };
}

}  // namespace

Result<AgentOptions> ParseAgentOptions(const std::string& home, std::string_view text,
                                       const std::string& filename) {
  AgentOptions o;
  o.home = home;
  toml::table root;
  try {
    root = toml::parse(text, filename);
  } catch (const toml::parse_error& e) {
    return Fail(ErrorCode::kInvalidInput, filename + ":" + std::to_string(e.source().begin.line) +
                                              ": " + std::string(e.description()));
  }
  std::map<std::string, std::map<std::string, Setter>> known = {
      {"agent",
       {{"log_level", OneOf(&o.log_level, {"debug", "info", "warn", "error"})},
        {"periodic_interval", Number(&o.periodic_interval, 0.1)},
        {"max_local_jobs", Integer(&o.max_local_jobs, 0)},
        {"kill_grace", Number(&o.kill_grace, 0)},
        {"commit_delay_ms", Integer(&o.commit_delay_ms, 0)},
        {"history_max", Integer(&o.history_max, 0)}}},
      {"grid",
       {{"probe_interval", Number(&o.grid_probe_interval, 0.1)},
        {"max_resubmits", Integer(&o.grid_max_resubmits, 0)},
        {"max_jobs_per_resource", Integer(&o.grid_max_jobs_per_resource, 1)},
        {"max_requests_per_resource", Integer(&o.grid_max_requests_per_resource, 1)},
        {"listen_host", String(&o.grid_listen_host, CheckListenHost)}}},
      {"myproxy",
       {{"server", String(&o.myproxy.server, CheckMyProxyServer)},
        {"username", String(&o.myproxy.username)},
        {"credential_name", String(&o.myproxy.credential_name)},
        {"passphrase_file", String(&o.myproxy.passphrase_file, CheckPassphraseFile)},
        {"server_dn", String(&o.myproxy.server_dn)},
        {"renew_before", Seconds(&o.myproxy.renew_before, 1)},
        {"lifetime", Seconds(&o.myproxy.lifetime, 60)},
        {"retry_after", Seconds(&o.myproxy.retry_after, 1)}}},
      {"rest", {{"listen", String(&o.rest_listen)}, {"allow_remote", Bool(&o.rest_allow_remote)}}},
  };
  const toml::node* myproxy_section = nullptr;
  for (auto&& [section, node] : root) {
    std::string sec(section.str());
    auto it = known.find(sec);
    auto* tbl = node.as_table();
    if (it == known.end() || !tbl) {
      // Sections of later parts of Kite are accepted here and checked by their owners.
      if (tbl && (sec == "mail" || sec == "rest" || sec == "credentials")) continue;
      return Fail(ErrorCode::kInvalidInput, Where(filename, node, sec) + ": unknown section");
    }
    if (sec == "myproxy") myproxy_section = &node;
    for (auto&& [key, value] : *tbl) {
      std::string k(key.str());
      auto s = it->second.find(k);
      std::string where = Where(filename, value, sec + "." + k);
      if (s == it->second.end()) return Fail(ErrorCode::kInvalidInput, where + ": unknown key");
      if (auto st = s->second(value, where); !st) return Fail(st.error());
    }
  }
  if (myproxy_section && o.myproxy.enabled() && o.myproxy.passphrase_file.empty()) {
    return Fail(ErrorCode::kInvalidInput, Where(filename, *myproxy_section, "myproxy") +
                                              ": passphrase_file is required with server");
  }
  // Checked once the whole [rest] table is read: allow_remote may come after listen.
  if (auto* listen = root.at_path("rest.listen").node()) {
    if (auto a = ParseListenAddress(o.rest_listen, o.rest_allow_remote); !a)
      return Fail(ErrorCode::kInvalidInput,
                  Where(filename, *listen, "rest.listen") + ": " + a.error().message());
  }
  return o;
}

Result<AgentOptions> LoadAgentOptions(const std::string& home) {
  std::string path = home + "/config.toml";
  auto text = ReadFile(path);
  if (!text) {
    if (text.error().code() == ErrorCode::kNotFound) {
      AgentOptions o;
      o.home = home;
      return o;
    }
    return Fail(text.error());
  }
  return ParseAgentOptions(home, *text, path);
}

}  // namespace kite::agent
