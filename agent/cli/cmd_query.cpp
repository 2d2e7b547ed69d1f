// `kite q` and `kite history`: condor_q's restrictions (ids, owners, -constraint, -hold, -run,
// -idle) and output forms (tables, -json, -long, -af, -format, -totals).
#include <cctype>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/cli/commands.h"
#include "agent/cli/local_store.h"
#include "agent/cli/util.h"
#include "agent/listing.h"
#include "agent/print_format.h"
#include "agent/select.h"
#include "classad/io.h"
#include "common/paths.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

struct QueryArgs {
  std::vector<std::string> targets;  // job ids (C, C.P) and owner names
  std::string constraint;
  bool json = false, nobatch = false, batch = false, grid = false, dag = false;
  bool hold = false, run = false, idle = false, long_form = false, totals = false;
  bool analyze = false;
  std::vector<std::string> af;
  std::string af_modifiers;
  std::vector<std::string> printf_pairs;  // FMT, EXPR, FMT, EXPR...
  int limit = 0;
};

// How the ads are to be shown when the CLI prints them itself (-long, -af, -format).
struct CustomForm {
  bool long_form = false;
  std::optional<agent::AutoFormat> af;
  std::vector<agent::PrintfItem> items;
  bool any() const { return long_form || af || !items.empty(); }
};

// condor_q's restriction list: ids match their jobs, owner names their owners' jobs; with both,
// a job must match an owner and an id. -constraint and the status options narrow further.
std::string Constraint(const QueryArgs& a, std::vector<std::string>* ids) {
  std::vector<std::string> parts;
  if (!a.constraint.empty()) parts.push_back(a.constraint);
  int statuses = a.hold + a.run + a.idle;
  if (statuses > 1) Die("give one of -hold, -run and -idle");
  if (a.hold) parts.push_back("JobStatus == 5");
  if (a.run) parts.push_back("JobStatus == 2");
  if (a.idle) parts.push_back("JobStatus == 1");
  std::string owners;
  for (auto& t : a.targets) {
    if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0]))) {
      ids->push_back(t);  // checked by IdsJson
    } else if (IsOwnerName(t)) {
      owners += (owners.empty() ? "" : " || ") + std::string("Owner == \"") + t + "\"";
    } else {
      Die("'" + t + "' is neither a job id (C or C.P) nor an owner name");
    }
  }
  if (!owners.empty()) parts.push_back(owners);
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "(" : " && (") + p + ")";
  return out;
}

CustomForm ParseCustom(const QueryArgs& a) {
  CustomForm f;
  f.long_form = a.long_form;
  if (!a.af.empty() || !a.af_modifiers.empty()) {
    auto af = agent::ParseAutoFormat(a.af_modifiers, a.af);
    if (!af) Die(af.error());
    f.af = std::move(*af);
  }
  for (size_t i = 0; i + 1 < a.printf_pairs.size(); i += 2) {
    auto item = agent::ParsePrintfItem(a.printf_pairs[i], a.printf_pairs[i + 1]);
    if (!item) Die(item.error());
    f.items.push_back(std::move(*item));
  }
  if (a.printf_pairs.size() % 2) Die("-format needs a format and an attribute");
  if (f.af && !f.items.empty()) Die("give -af or -format, not both");
  return f;
}

void PrintCustom(const CustomForm& f, const std::vector<classad::ClassAd>& ads) {
  std::string out;
  bool first = true;
  for (auto& ad : ads) {
    int cluster = static_cast<int>(ad.EvaluateInt("ClusterId").value_or(0));
    int proc = static_cast<int>(ad.EvaluateInt("ProcId").value_or(0));
    if (f.long_form) {
      out += agent::FormatLong(ad);
    } else if (f.af) {
      out += agent::FormatAutoLine(*f.af, ad, cluster, proc, first);
    } else {
      out += agent::FormatPrintf(f.items, ad);
    }
    first = false;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

// The agent's name for the listing the options ask for.
std::string ListingFormat(const QueryArgs& a, bool history, bool custom, bool named_ids) {
  if (a.analyze) return "analyze";
  if (a.json || custom) return "json";
  if (a.totals) return a.grid ? "grid-totals" : "totals";
  if (a.hold) return "hold";
  if (a.run) return "run";
  if (a.grid) return "grid";
  if (a.dag && !history) return "dag";
  // condor_q shows batches by default and single jobs with -nobatch; naming jobs by id shows them.
  if (history || a.nobatch || a.idle || (!a.batch && named_ids)) return "table";
  return "batch";
}

// `kite history` with no agent running: the same listing, read from the queue store.
void LocalHistory(const QueryArgs& a, const CustomForm& custom, const std::vector<std::string>& ids,
                  const std::string& constraint) {
  std::vector<agent::JobSelector> sel;
  for (auto& id : ids) {
    auto s = agent::ParseJobSelector(id);
    if (!s) Die(s.error());
    sel.push_back(*s);
  }
  auto expr = agent::ParseConstraint(constraint);
  if (!expr) Die(expr.error());
  auto store = OpenQueueReadOnlyOrDie();
  auto rows = ReadHistory(*store, std::move(sel), *expr, a.limit > 0 ? a.limit : 0);
  if (custom.any() && !a.json) return PrintCustom(custom, rows.ads);
  std::vector<agent::ListedJob> listed;
  for (size_t i = 0; i < rows.ads.size(); ++i)
    listed.push_back({rows.keys[i], &rows.ads[i], nullptr});
  std::string out =
      a.json ? agent::FormatJson(listed)
             : agent::FormatJobTable(listed, static_cast<double>(std::time(nullptr)), true);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void Query(const QueryArgs& a, bool history) {
  CustomForm custom = ParseCustom(a);
  std::vector<std::string> ids;
  std::string constraint = Constraint(a, &ids);
  json::object body;
  body["ids"] = IdsJson(ids);
  body["constraint"] = constraint;
  body["history"] = history;
  body["limit"] = a.limit;
  body["format"] = ListingFormat(a, history, custom.any() && !a.json, !ids.empty());
  auto client = AgentClient::Connect(KiteHome());
  if (!client && history && client.error().code() == ErrorCode::kUnavailable)
    return LocalHistory(a, custom, ids, constraint);
  if (!client) Die(client.error());
  auto r = (*client)->Post("/v1/query", body);
  if (!r) Die(r.error());
  if (r->status != 200) Die(AgentError(*r));
  if (a.json || a.analyze || !custom.any()) {
    std::fwrite(r->body.data(), 1, r->body.size(), stdout);
    return;
  }
  auto ads = classad::ParseJsonAds(r->body);
  if (!ads) Die("the agent's answer did not parse: " + ads.error().message());
  PrintCustom(custom, *ads);
}

// Options `kite q` and `kite history` share.
void AddOutputOptions(CLI::App* c, QueryArgs& a) {
  c->add_option("targets", a.targets, "job ids (C or C.P) and owner names");
  c->add_option("--constraint", a.constraint,
                "only jobs for which this ClassAd expression is true");
  c->add_flag("--json", a.json, "whole job ads as JSON, like condor_q -json");
  c->add_flag("-l,--long", a.long_form, "whole job ads in ClassAd form, a blank line after each");
  c->add_option("--af,--autoformat", a.af,
                "print these attributes or expressions, space-separated, one job per line; "
                "-af:MODS adds modifiers: j job id, l labels, h header, t tab, ',' comma, "
                "n newline, g blank line, V quoted strings, r unevaluated")
      ->expected(1, 1 << 20);
  c->add_option("--af-modifiers", a.af_modifiers)->group("");  // from -af:MODS (main.cpp)
  c->add_option("--format", a.printf_pairs,
                "FMT EXPR: print EXPR with the printf-style FMT (%d %s %f %v %V ...); repeatable, "
                "no newline unless FMT has \\n")
      ->expected(2)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace

void RegisterQueryCommands(CLI::App& app) {
  static QueryArgs q, h;
  auto* qc = app.add_subcommand("q", "show queued jobs (condor_q)");
  AddOutputOptions(qc, q);
  qc->add_flag("--nobatch", q.nobatch, "one line per job");
  qc->add_flag("--dag", q.dag,
               "one line per job, each DAG's node jobs under it with their node names "
               "(condor_q -dag -nobatch)");
  qc->add_flag("--batch", q.batch, "one line per batch (batch_name, or cluster; the default)");
  qc->add_flag("--grid", q.grid,
               "grid jobs with their remote state, resource and site job id; totals count grid "
               "jobs only (condor_q -grid)");
  qc->add_flag("--hold,--held", q.hold, "held jobs only, with why and since when");
  qc->add_flag("--run", q.run, "running jobs only, with where and since when");
  qc->add_flag("--idle", q.idle, "idle jobs only, one line per job");
  qc->add_flag("--totals", q.totals, "only the totals line");
  qc->add_flag("--analyze,--better-analyze", q.analyze,
               "why each job is where it is: local slots, restart back-off, its site, its proxy, "
               "its gridmanager (condor_q -analyze)");
  qc->callback([] { Query(q, false); });

  auto* hc = app.add_subcommand(
      "history", "show jobs that have left the queue (condor_history; no agent needs to run)");
  AddOutputOptions(hc, h);
  hc->add_option("--limit,--match", h.limit, "show at most this many jobs, newest first");
  hc->callback([] { Query(h, true); });
}

}  // namespace kite::cli
