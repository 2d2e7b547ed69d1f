// Parsing config.toml with toml++.
#include "agent/config.h"

#include <toml++/toml.h>

#include <boost/asio/ip/address.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "agent/listen_address.h"
#include "agent/myproxy_renewal.h"
#include "agent/site_ads.h"
#include "classad/expr.h"
#include "classad/parser.h"
#include "common/files.h"
#include "common/strings.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "grid/resource.h"

namespace kite::agent {
namespace {

std::string FormatNumber(double v) {
  std::string t = std::to_string(v);
  t.erase(t.find_last_not_of('0') + 1);
  if (t.back() == '.') t.pop_back();
  return t;
}

std::string Where(const std::string& file, const toml::node& n, const std::string& key) {
  return file + ":" + std::to_string(n.source().begin.line) + ": " + key;
}

using Setter = std::function<Status(const toml::node&, const std::string& where)>;

// A finite number from `min` to `max`: NaN and infinities are refused like any value out of range.
Setter Number(double* out, double min, double max) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<double>();
    if (!v) return Fail(ErrorCode::kInvalidInput, where + ": expected a number");
    if (!(*v >= min && *v <= max))
      return Fail(ErrorCode::kInvalidInput, where + ": must be at least " + FormatNumber(min) +
                                                " and at most " + FormatNumber(max));
    *out = *v;
    return {};
  };
}

Setter Integer(int* out, int min, int max) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<int64_t>();
    if (!v || !n.is_integer())
      return Fail(ErrorCode::kInvalidInput, where + ": expected an integer");
    if (*v < min || *v > max)
      return Fail(ErrorCode::kInvalidInput, where + ": out of range (" + std::to_string(min) +
                                                " to " + std::to_string(max) + ")");
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

Setter Bool(bool* out) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    if (!n.is_boolean()) return Fail(ErrorCode::kInvalidInput, where + ": expected true or false");
    *out = *n.value<bool>();
    return {};
  };
}

// A string that `check` accepts (the check's message follows the key).
Setter Checked(std::string* out, std::function<Status(const std::string&)> check) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<std::string>();
    if (!v) return Fail(ErrorCode::kInvalidInput, where + ": expected a string");
    if (auto st = check(*v); !st)
      return Fail(ErrorCode::kInvalidInput, where + ": " + st.error().message());
    *out = *v;
    return {};
  };
}

// A ClassAd expression, written as a string ("KeyboardIdle > 600") or as a TOML boolean.
Setter Expression(std::string* out) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    if (n.is_boolean()) {
      *out = *n.value<bool>() ? "true" : "false";
      return {};
    }
    auto v = n.value<std::string>();
    if (!v || !n.is_string())
      return Fail(ErrorCode::kInvalidInput, where + ": expected a ClassAd expression (a string)");
    if (auto e = classad::ParseExpr(*v); !e)
      return Fail(ErrorCode::kInvalidInput, where + ": " + e.error().message());
    *out = *v;
    return {};
  };
}

Setter String(std::string* out) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto v = n.value<std::string>();
    if (!v || !n.is_string()) return Fail(ErrorCode::kInvalidInput, where + ": expected a string");
    *out = *v;
    return {};
  };
}

// Adapts a check that answers with the problem ("" when none) to Checked.
std::function<Status(const std::string&)> Problem(std::string (*check)(const std::string&)) {
  return [check](const std::string& v) -> Status {
    if (std::string p = check(v); !p.empty()) return Fail(ErrorCode::kInvalidInput, p);
    return {};
  };
}

std::string CheckListenHost(const std::string& v) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(v, ec);
  return ec ? "'" + v + "' is not an IP address" : "";
}

Status AnyText(const std::string& v) {
  for (char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return Fail(ErrorCode::kInvalidInput, "control characters are not allowed");
  }
  return {};
}

// Seconds as a number, or a duration string such as "10m".
Setter Seconds(double* out, double min) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    double v = 0;
    if (auto s = n.value_exact<std::string>()) {
      auto d = ParseDurationText(*s);
      if (d) {
        v = static_cast<double>(*d);
      } else if (auto hm = credentials::ParseDuration(*s)) {  // "12:00", as --valid takes it
        v = static_cast<double>(hm->count());
      } else {
        return Fail(ErrorCode::kInvalidInput, where + ": " + d.error().message());
      }
    } else if (auto num = n.value<double>()) {
      v = *num;
    } else {
      return Fail(ErrorCode::kInvalidInput,
                  where + ": expected seconds or a duration like \"10m\"");
    }
    if (!(v >= min) || v > 1e9)
      return Fail(ErrorCode::kInvalidInput,
                  where + ": must be at least " + std::to_string(min) + " s");
    *out = v;
    return {};
  };
}

// "2h, 30m" or ["2h", "30m"] (numbers are seconds).
Setter Alarms(std::vector<int64_t>* out) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    std::string text;
    if (auto s = n.value_exact<std::string>()) {
      text = *s;
    } else if (auto* arr = n.as_array()) {
      for (auto&& e : *arr) {
        if (auto es = e.value_exact<std::string>()) {
          text += *es + ",";
        } else if (auto ei = e.value_exact<int64_t>()) {
          text += std::to_string(*ei) + "s,";
        } else {
          return Fail(ErrorCode::kInvalidInput, where + ": expected durations like \"2h\"");
        }
      }
      if (!text.empty()) text.pop_back();
    } else {
      return Fail(ErrorCode::kInvalidInput, where + ": expected a list like \"2h, 30m\"");
    }
    auto list = ParseDurationList(text);
    if (!list) return Fail(ErrorCode::kInvalidInput, where + ": " + list.error().message());
    *out = std::move(*list);
    return {};
  };
}

// A list of distinguished names, "/O=Grid/CN=Jane" or "O=Grid, CN=Jane", kept in the Globus form
// that certificate identities are compared in.
Setter DistinguishedNames(std::vector<std::string>* out) {
  return [=](const toml::node& n, const std::string& where) -> Status {
    auto* arr = n.as_array();
    if (!arr) return Fail(ErrorCode::kInvalidInput, where + ": expected a list of DNs");
    std::vector<std::string> dns;
    for (auto&& e : *arr) {
      auto s = e.value_exact<std::string>();
      if (!s) return Fail(ErrorCode::kInvalidInput, where + ": expected a list of DNs");
      auto rdns = credentials::ParseDistinguishedName(*s);
      if (!rdns || rdns->empty())
        return Fail(ErrorCode::kInvalidInput,
                    where + ": '" + *s + "' is not a distinguished name (e.g. /O=Grid/CN=Jane)");
      dns.push_back(credentials::FormatDistinguishedName(*rdns));
    }
    *out = std::move(dns);
    return {};
  };
}

// [[resource]]: the user's grid sites, each a grid_resource and any attributes to rank by.
Status ParseResources(const toml::node& node, const std::string& filename,
                      std::vector<ResourceSetting>* out) {
  auto* arr = node.as_array();
  if (!arr || !arr->is_array_of_tables()) {
    return Fail(ErrorCode::kInvalidInput,
                Where(filename, node, "resource") + ": write each site as a [[resource]] table");
  }
  for (auto&& item : *arr) {
    auto& tbl = *item.as_table();
    ResourceSetting r;
    for (auto&& [key, value] : tbl) {
      std::string k(key.str());
      std::string where = Where(filename, value, "resource." + k);
      if (k == "grid_resource") {
        auto v = value.value_exact<std::string>();
        if (!v) return Fail(ErrorCode::kInvalidInput, where + ": expected a string");
        if (auto g = grid::ParseGridResource(*v); !g)
          return Fail(ErrorCode::kInvalidInput, where + ": " + g.error().message());
        r.grid_resource = std::string(Trim(*v));
        continue;
      }
      if (auto st = classad::CheckAttributeName(k); !st)
        return Fail(ErrorCode::kInvalidInput, where + ": not an attribute name");
      if (IsAgentSiteAttribute(k))
        return Fail(ErrorCode::kInvalidInput, where + ": the broker sets " + k + " itself");
      std::string literal;
      if (auto s = value.value_exact<std::string>()) {
        literal = classad::Unparse(*classad::MakeString(*s));
      } else if (auto i = value.value_exact<int64_t>()) {
        literal = std::to_string(*i);
      } else if (auto d = value.value_exact<double>(); d && std::isfinite(*d)) {
        literal = classad::Unparse(*classad::MakeReal(*d));
      } else if (auto b = value.value_exact<bool>()) {
        literal = *b ? "true" : "false";
      } else {
        return Fail(ErrorCode::kInvalidInput,
                    where + ": expected a string, a number or true/false");
      }
      r.attributes.emplace_back(k, literal);
    }
    if (r.grid_resource.empty()) {
      return Fail(ErrorCode::kInvalidInput,
                  Where(filename, tbl, "resource") + ": grid_resource is required");
    }
    for (const auto& other : *out) {
      if (other.grid_resource == r.grid_resource)
        return Fail(ErrorCode::kInvalidInput,
                    Where(filename, tbl, "resource") + ": " + r.grid_resource + " is listed twice");
    }
    out->push_back(std::move(r));
  }
  return {};
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
        {"periodic_interval", Number(&o.periodic_interval, 0.1, 86400)},
        {"max_local_jobs", Integer(&o.max_local_jobs, 0, 100000)},
        {"kill_grace", Number(&o.kill_grace, 0, 3600)},
        {"commit_delay_ms", Integer(&o.commit_delay_ms, 0, 10000)},
        {"history_max", Integer(&o.history_max, 0, 100000000)}}},
      {"grid",
       {{"probe_interval", Number(&o.grid.probe_interval, 0.1, 86400)},
        {"max_resubmits", Integer(&o.grid.max_resubmits, 0, 1000)},
        {"max_jobs_per_resource", Integer(&o.grid.max_jobs_per_resource, 1, 1000000)},
        {"max_requests_per_resource", Integer(&o.grid.max_requests_per_resource, 1, 1024)},
        {"listen_host", Checked(&o.grid.listen_host, Problem(CheckListenHost))}}},
      {"myproxy",
       {{"server", Checked(&o.myproxy.server, Problem(CheckMyProxyServer))},
        {"username", Checked(&o.myproxy.username, AnyText)},
        {"credential_name", Checked(&o.myproxy.credential_name, AnyText)},
        {"passphrase_file", Checked(&o.myproxy.passphrase_file, Problem(CheckPassphraseFile))},
        {"server_dn", Checked(&o.myproxy.server_dn, AnyText)},
        {"renew_before", Seconds(&o.myproxy.renew_before, 1)},
        {"lifetime", Seconds(&o.myproxy.lifetime, 60)},
        {"retry_after", Seconds(&o.myproxy.retry_after, 1)}}},
      {"rest", {{"listen", String(&o.rest_listen)}, {"allow_remote", Bool(&o.rest_allow_remote)}}},
      {"pool",
       {{"local_slots", Integer(&o.pool.local_slots, 0, 4096)},
        {"local_start", Expression(&o.pool.local_start)},
        {"local_suspend", Expression(&o.pool.local_policy.suspend)},
        {"local_continue", Expression(&o.pool.local_policy.cont)},
        {"local_preempt", Expression(&o.pool.local_policy.preempt)},
        {"local_kill", Expression(&o.pool.local_policy.kill)},
        {"local_max_job_retirement_time", Expression(&o.pool.local_policy.retirement)},
        {"local_periodic_checkpoint", Expression(&o.pool.local_policy.periodic_checkpoint)},
        {"listen", String(&o.pool.listen)},
        {"allow_remote", Bool(&o.pool.allow_remote)},
        {"proxy", Checked(&o.pool.proxy, AnyText)},
        {"allow_identities", DistinguishedNames(&o.pool.allow_identities)},
        {"local_restore_site_checkpoints", Bool(&o.pool.local_restore_site_checkpoints)}}},
      {"mail",
       {{"smtp_url", Checked(&o.mail.smtp_url,
                             [](const std::string& v) -> Status {
                               if (auto u = ParseSmtpUrl(v); !u) return Fail(u.error());
                               return {};
                             })},
        {"from", Checked(&o.mail.from,
                         [](const std::string& v) -> Status {
                           if (auto a = ParseMailAddress(v); !a) return Fail(a.error());
                           return {};
                         })},
        {"admin", Checked(&o.mail.admin,
                          [](const std::string& v) -> Status {
                            if (auto a = ParseMailAddress(v); !a) return Fail(a.error());
                            return {};
                          })},
        {"uid_domain", Checked(&o.mail.uid_domain,
                               [](const std::string& v) -> Status {
                                 if (auto a = ParseMailAddress("x@" + v); !a)
                                   return Fail(ErrorCode::kInvalidInput, "bad domain '" + v + "'");
                                 return {};
                               })},
        {"starttls", Bool(&o.mail.starttls)},
        {"username", Checked(&o.mail.username, AnyText)},
        {"password_file", Checked(&o.mail.password_file,
                                  [&o](const std::string& v) -> Status {
                                    if (v.empty())
                                      return Fail(ErrorCode::kInvalidInput, "empty path");
                                    // Private like a key: refused when others may read it.
                                    return CheckPrivateFile(JoinPath(o.home, v));
                                  })},
        {"ca_file", Checked(&o.mail.ca_file, AnyText)},
        {"retry_interval", Seconds(&o.mail.retry_interval, 0.1)},
        {"timeout", Seconds(&o.mail.timeout, 1)}}},
      {"broker",
       {{"refresh_interval", Seconds(&o.broker.refresh_interval, 0.1)},
        {"max_pending_per_site", Integer(&o.broker.max_pending_per_site, 1, 1000000)},
        {"max_queue_wait", Seconds(&o.broker.max_queue_wait, 0)},
        {"info_timeout", Seconds(&o.broker.info_timeout, 1)}}},
      {"credentials",
       {{"check_interval", Seconds(&o.credentials.check_interval, 0.1)},
        {"min_lifetime", Seconds(&o.credentials.min_lifetime, 0)},
        {"credential_alarm", Alarms(&o.credentials.alarms)}}},
  };
  for (auto&& [section, node] : root) {
    std::string sec(section.str());
    if (sec == "resource") {
      if (auto st = ParseResources(node, filename, &o.broker.resources); !st)
        return Fail(st.error());
      continue;
    }
    auto it = known.find(sec);
    auto* tbl = node.as_table();
    if (it == known.end() || !tbl) {
      // Sections of later parts of Kite are accepted here and checked by their owners.
      return Fail(ErrorCode::kInvalidInput, Where(filename, node, sec) + ": unknown section");
    }
    for (auto&& [key, value] : *tbl) {
      std::string k(key.str());
      auto s = it->second.find(k);
      std::string where = Where(filename, value, sec + "." + k);
      if (s == it->second.end()) return Fail(ErrorCode::kInvalidInput, where + ": unknown key");
      if (auto st = s->second(value, where); !st) return Fail(st.error());
    }
  }
  if (auto* mp = root["myproxy"].as_table(); mp && o.myproxy.enabled()) {
    if (o.myproxy.passphrase_file.empty()) {
      return Fail(ErrorCode::kInvalidInput,
                  Where(filename, *mp, "myproxy") + ": passphrase_file is required with server");
    }
  }
  // Checked once the whole [rest] table is read: allow_remote may come after listen.
  if (auto* listen = root.at_path("rest.listen").node()) {
    if (auto a = ParseListenAddress(o.rest_listen, o.rest_allow_remote); !a)
      return Fail(ErrorCode::kInvalidInput,
                  Where(filename, *listen, "rest.listen") + ": " + a.error().message());
  }
  if (auto* listen = root.at_path("pool.listen").node(); listen && !o.pool.listen.empty()) {
    if (auto a = ParsePoolListen(o.pool.listen, o.pool.allow_remote); !a)
      return Fail(ErrorCode::kInvalidInput,
                  Where(filename, *listen, "pool.listen") + ": " + a.error().message());
  }
  if (!o.pool.proxy.empty()) o.pool.proxy = JoinPath(home, o.pool.proxy);
  if (auto* mail = root["mail"].as_table()) {
    std::string where = Where(filename, *mail, "mail");
    if (!o.mail.username.empty() && o.mail.password_file.empty())
      return Fail(ErrorCode::kInvalidInput, where + ": username needs password_file");
    if (o.mail.starttls && o.mail.smtp_url.starts_with("smtps://"))
      return Fail(ErrorCode::kInvalidInput,
                  where + ": starttls is for smtp:// (smtps:// is TLS from the start)");
  }
  if (!o.mail.password_file.empty()) o.mail.password_file = JoinPath(home, o.mail.password_file);
  if (!o.mail.ca_file.empty()) o.mail.ca_file = JoinPath(home, o.mail.ca_file);
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
