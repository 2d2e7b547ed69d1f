// `kite status`: the personal pool's slots, as condor_status shows them (-json, -long, -af,
// -constraint, -total).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "agent/print_format.h"
#include "classad/io.h"
#include "common/paths.h"

namespace kite::cli {
namespace {

struct StatusArgs {
  std::string constraint;
  bool json = false, long_form = false, total = false, grid = false;
  std::vector<std::string> af;
  std::string af_modifiers;
};

std::string Text(const classad::ClassAd& ad, const char* attr, const char* dflt = "") {
  return ad.EvaluateString(attr).value_or(dflt);
}

// "1+02:03:04", or "-" when there is no limit (a startd with no lifetime says 2^31 - 1).
std::string Duration(std::optional<int64_t> secs) {
  if (!secs || *secs < 0 || *secs >= 2147483647) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld+%02lld:%02lld:%02lld", static_cast<long long>(*secs / 86400),
                static_cast<long long>(*secs / 3600 % 24), static_cast<long long>(*secs / 60 % 60),
                static_cast<long long>(*secs % 60));
  return buf;
}

std::string Table(const std::vector<classad::ClassAd>& ads, bool rows) {
  std::string out;
  char line[512];
  if (rows) {
    std::snprintf(line, sizeof line, "%-28s %-6s %-7s %-10s %-9s %6s %6s %11s %s\n", "Name",
                  "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem", "TimeToLive", "JobId");
    out += line;
  }
  std::map<std::string, int> by_state;
  for (const auto& ad : ads) {
    std::string state = Text(ad, "State", "?");
    ++by_state[state];
    if (!rows) continue;
    std::snprintf(line, sizeof line, "%-28s %-6s %-7s %-10s %-9s %6.3f %6lld %11s %s\n",
                  Text(ad, "Name").c_str(), Text(ad, "OpSys").c_str(), Text(ad, "Arch").c_str(),
                  state.c_str(), Text(ad, "Activity", "?").c_str(),
                  ad.EvaluateReal("LoadAvg").value_or(0),
                  static_cast<long long>(ad.EvaluateInt("Memory").value_or(0)),
                  Duration(ad.EvaluateInt("TimeToLive")).c_str(), Text(ad, "JobId").c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "%sTotal %zu slot(s):", rows ? "\n" : "", ads.size());
  out += line;
  for (const auto& [state, n] : by_state) out += " " + std::to_string(n) + " " + state;
  out += "\n";
  return out;
}

// Seconds as "1h05m", "42s", "-" when absent.
std::string Wait(std::optional<int64_t> s) {
  if (!s) return "-";
  char buf[32];
  if (*s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(*s / 3600),
                  static_cast<long long>(*s / 60 % 60));
  } else if (*s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(*s / 60),
                  static_cast<long long>(*s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(*s));
  }
  return buf;
}

// `kite status -grid`: one line per site (and proxy), as the broker sees it.
std::string GridTable(const std::vector<classad::ClassAd>& ads, bool rows) {
  std::string out;
  char line[768];
  if (rows) {
    std::snprintf(line, sizeof line, "%-34s %-6s %-9s %9s %7s %8s %8s %8s %7s %7s %5s  %s\n",
                  "GridResource", "Batch", "State", "Free/CPUs", "Pending", "EstWait", "WaitP50",
                  "WaitP90", "KiteRun", "KitePnd", "Fail", "Why");
    out += line;
  }
  int usable = 0;
  for (const auto& ad : ads) {
    bool ok = ad.EvaluateBool("Usable").value_or(false);
    usable += ok ? 1 : 0;
    if (!rows) continue;
    std::string why = Text(ad, "UnusableReason");
    std::string state = ok                                              ? "usable"
                        : why.starts_with("not asked")                  ? "unasked"
                        : !ad.EvaluateBool("Reachable").value_or(false) ? "unreach"
                                                                        : "unusable";
    std::string cpus = ad.Lookup("TotalCpus")
                           ? std::to_string(ad.EvaluateInt("FreeCpus").value_or(0)) + "/" +
                                 std::to_string(ad.EvaluateInt("TotalCpus").value_or(0))
                           : "-";
    std::string pending =
        ad.Lookup("PendingJobs") ? std::to_string(ad.EvaluateInt("PendingJobs").value_or(0)) : "-";
    std::snprintf(
        line, sizeof line, "%-34s %-6s %-9s %9s %7s %8s %8s %8s %7lld %7lld %4.0f%%  %s\n",
        Text(ad, "GridResource").c_str(), Text(ad, "BatchSystem", "-").c_str(), state.c_str(),
        cpus.c_str(), pending.c_str(), Wait(ad.EvaluateInt("EstimatedWaitTime")).c_str(),
        Wait(ad.EvaluateInt("ObservedWaitP50")).c_str(),
        Wait(ad.EvaluateInt("ObservedWaitP90")).c_str(),
        static_cast<long long>(ad.EvaluateInt("KiteRunning").value_or(0)),
        static_cast<long long>(ad.EvaluateInt("KitePending").value_or(0)),
        100 * ad.EvaluateReal("FailureRate").value_or(0), Text(ad, "UnusableReason").c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "%sTotal %zu site(s): %d usable\n", rows ? "\n" : "", ads.size(),
                usable);
  out += line;
  return out;
}

void Status(const StatusArgs& a) {
  std::optional<agent::AutoFormat> af;
  if (!a.af.empty() || !a.af_modifiers.empty()) {
    auto parsed = agent::ParseAutoFormat(a.af_modifiers, a.af);
    if (!parsed) Die(parsed.error());
    af = std::move(*parsed);
  }
  auto client = ConnectOrDie();
  auto r = client->Post("/v1/status", {{"constraint", a.constraint}, {"grid", a.grid}});
  if (!r) Die(r.error());
  if (r->status != 200) Die(AgentError(*r));
  if (a.json) {
    std::fwrite(r->body.data(), 1, r->body.size(), stdout);
    return;
  }
  auto ads = classad::ParseJsonAds(r->body);
  if (!ads) Die("the agent's answer did not parse: " + ads.error().message());
  std::string out;
  bool first = true;
  for (const auto& ad : *ads) {
    if (a.long_form) out += agent::FormatLong(ad);
    if (af) out += agent::FormatAutoLine(*af, ad, 0, 0, first);
    first = false;
  }
  if (!a.long_form && !af) out = a.grid ? GridTable(*ads, !a.total) : Table(*ads, !a.total);
  // The pool's table ends with where glide-ins dial, or why they cannot (a configured listener
  // that is down is the one that needs saying).
  if (!a.long_form && !af && !a.grid) {
    if (auto v = AskPoolListener(*client, /*recheck=*/false)) {
      if (v->listening) {
        out += "Glide-ins dial tls:" + v->address + "\n";
      } else if (v->configured) {
        out += "Glide-ins cannot join: " + v->problem + "\n";
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void RegisterStatusCommand(CLI::App& app) {
  static StatusArgs s;
  auto* c = app.add_subcommand("status", "show the personal pool's slots (condor_status)");
  c->add_option("--constraint", s.constraint,
                "only slots for which this ClassAd expression is true");
  c->add_flag("--json", s.json, "whole slot ads as JSON, like condor_status -json");
  c->add_flag("-l,--long", s.long_form, "whole slot ads in ClassAd form, a blank line after each");
  c->add_flag("--total", s.total, "only the totals line");
  c->add_flag("--grid", s.grid,
              "the grid sites of config.toml's [[resource]] list instead: one ad per site (and "
              "proxy), what it offers and what Kite observed there (condor_status -grid)");
  c->add_option("--af,--autoformat", s.af,
                "print these attributes or expressions, one slot per line (-af:MODS as kite q)")
      ->expected(1, 1 << 20);
  c->add_option("--af-modifiers", s.af_modifiers)->group("");
  c->callback([] { Status(s); });
}

}  // namespace kite::cli
