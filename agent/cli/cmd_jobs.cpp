// `kite rm`, `hold`, `release`, `wait`, `log` (`kite q`, `history`: cmd_query.cpp; `kite submit`:
// cmd_submit.cpp).
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>

#include "agent/agent.h"
#include "agent/cli/commands.h"
#include "agent/cli/local_store.h"
#include "agent/cli/util.h"
#include "agent/cli/wait_log.h"
#include "agent/userlog.h"
#include "common/paths.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

struct ActArgs {
  std::vector<std::string> targets;  // job ids (C, C.P) or owner names
  std::string constraint, reason;
  bool forcex = false, all = false;
};

// condor_rm's arguments: job ids, or owner names (all their jobs), or -all; -constraint narrows.
// Ids and owners together are refused: condor_rm reads each as its own request, and an rm that
// takes more than the user meant cannot be undone.
void Act(const std::string& action, const ActArgs& a) {
  std::vector<std::string> ids, owners;
  for (auto& t : a.targets) {
    bool id = !t.empty() && std::isdigit(static_cast<unsigned char>(t[0]));
    if (!id && !IsOwnerName(t)) Die("'" + t + "' is neither a job id (C or C.P) nor an owner name");
    (id ? ids : owners).push_back(t);
  }
  if (!ids.empty() && !owners.empty()) Die("give job ids or owner names, not both");
  if (a.all && !a.targets.empty()) Die("-all takes no job ids or owner names");
  std::string constraint = a.constraint;
  std::string who;
  for (auto& o : owners) who += (who.empty() ? "" : " || ") + std::string("Owner == \"") + o + "\"";
  if (!who.empty()) constraint = constraint.empty() ? who : "(" + constraint + ") && (" + who + ")";
  if (a.all && constraint.empty()) constraint = "true";
  if (ids.empty() && constraint.empty())
    Die("name the jobs: give job ids, owner names, -all or -constraint");
  auto client = ConnectOrDie();
  json::object body;
  body["action"] = a.forcex ? "forcex" : action;
  body["ids"] = IdsJson(ids);
  body["constraint"] = constraint;
  body["reason"] = a.reason;
  auto r = client->PostJson("/v1/act", body);
  if (!r) Die(r.error());
  auto changed = r->at("changed").as_int64();
  auto& errors = r->at("errors").as_array();
  for (auto& e : errors) std::fprintf(stderr, "kite: %s\n", e.as_string().c_str());
  std::printf("%lld job(s) %s.\n", static_cast<long long>(changed),
              r->at("verb").as_string().c_str());
  if (!errors.empty()) throw CLI::RuntimeError(1);
  if (!owners.empty() && r->at("matched").as_int64() == 0) {
    std::string names;
    for (auto& o : owners) names += (names.empty() ? "" : ", ") + o;
    Die("no jobs of user " + names + " matched");
  }
}

// condor_qedit ID|-constraint EXPR ATTR VALUE [ATTR VALUE...].
struct EditArgs {
  std::vector<std::string> words;  // [ID] ATTR VALUE ...
  std::string constraint;
};

void Edit(const EditArgs& a) {
  std::vector<std::string> ids;
  size_t first = 0;
  if (a.constraint.empty()) {
    if (a.words.empty() || !std::isdigit(static_cast<unsigned char>(a.words[0][0])))
      Die("qedit needs a job id (C or C.P) or -constraint, then ATTR VALUE pairs");
    ids.push_back(a.words[0]);
    first = 1;
  }
  if (a.words.size() <= first || (a.words.size() - first) % 2 != 0)
    Die("qedit needs ATTR VALUE pairs (a string value in quotes: '\"text\"')");
  json::array attrs;
  for (size_t i = first; i < a.words.size(); i += 2)
    attrs.push_back(json::array{json::string(a.words[i]), json::string(a.words[i + 1])});
  auto client = ConnectOrDie();
  json::object body;
  body["ids"] = IdsJson(ids);
  body["constraint"] = a.constraint;
  body["attributes"] = std::move(attrs);
  auto r = client->PostJson("/v1/edit", body);
  if (!r) Die(r.error());
  auto changed = r->at("changed").as_int64();
  if (changed == 0) Die("no matching jobs in the queue");
  for (size_t i = first; i < a.words.size(); i += 2)
    std::printf("Set attribute \"%s\" for %lld matching job(s).\n", a.words[i].c_str(),
                static_cast<long long>(changed));
}

void Wait(const std::vector<std::string>& ids, double timeout) {
  if (ids.empty()) Die("wait needs job ids");
  auto ids_json = IdsJson(ids);  // a bad id is refused before the agent is looked for
  auto client = ConnectOrDie();
  bool tty = ::isatty(1);
  auto start = std::chrono::steady_clock::now();
  std::string last;
  for (;;) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double left = timeout > 0 ? timeout - elapsed : 5;
    json::object body;
    body["ids"] = ids_json;
    body["timeout"] = std::max(0.0, std::min(left, 5.0));
    auto r = client->PostJson("/v1/wait", body);
    if (!r) Die(r.error());
    auto n = [&](const char* k) { return static_cast<long long>(r->at(k).as_int64()); };
    if (n("missing") > 0) {
      std::string m;
      for (auto& id : r->at("missing_ids").as_array()) m += " " + std::string(id.as_string());
      Die("no such job(s):" + m, kWaitNoSuchJob);
    }
    char line[200];
    std::snprintf(line, sizeof line, "%lld of %lld job(s) done; %lld running, %lld idle, %lld held",
                  n("done"), n("total"), n("running"), n("idle"), n("held"));
    if (line != last) {
      std::printf(tty ? "\r%s\033[K" : "%s\n", line);
      std::fflush(stdout);
      last = line;
    }
    auto& stuck = r->at("stuck").as_array();
    if (n("running") == 0 && n("idle") == 0 && n("held") == static_cast<long long>(stuck.size())) {
      if (tty) std::printf("\n");
      if (stuck.empty()) return;
      // Nothing will release these jobs but the user: waiting longer cannot help.
      for (auto& s : stuck) std::fprintf(stderr, "kite: held: %s\n", s.as_string().c_str());
      Die(std::to_string(stuck.size()) +
              " job(s) held with nothing to release them (no periodic_release): kite release or "
              "kite rm them",
          kWaitHeld);
    }
    if (timeout > 0 && left <= 0) {
      if (tty) std::printf("\n");
      Die("timed out: " + std::to_string(n("total") - n("done")) + " job(s) not done",
          kWaitTimedOut);
    }
  }
}

// A job's events: from the agent, or read from the queue store when no agent runs.
void Log(const std::string& id) {
  auto job = agent::ParseJobSelector(id);
  if (!job) Die(job.error());
  if (job->proc < 0) Die("kite log needs one job id, C.P");
  int cluster = job->cluster, proc = job->proc;
  std::vector<store::EventRecord> events;
  auto client = AgentClient::Connect(KiteHome());
  if (client) {
    json::object body;
    body["id"] = id;
    auto r = (*client)->Post("/v1/events", body);
    if (!r) Die(r.error());
    if (r->status != 200) Die(AgentError(*r));
    auto parsed = json::parse(r->body);
    for (auto& e : parsed.as_array()) {
      auto& o = e.as_object();
      events.push_back({{cluster, proc},
                        o.at("time").to_number<double>(),
                        static_cast<int>(o.at("code").as_int64()),
                        std::string(o.at("text").as_string())});
    }
  } else if (client.error().code() == ErrorCode::kUnavailable) {
    auto store = OpenQueueReadOnlyOrDie();
    auto ev = store->Events({cluster, proc});
    if (!ev) Die(ev.error());
    if (ev->empty()) Die("job " + id + " not found");
    events = std::move(*ev);
  } else {
    Die(client.error());
  }
  for (auto& e : events) {
    std::string text = agent::FormatEvent(e.code, cluster, proc, e.time, e.text);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
}

}  // namespace

void RegisterJobCommands(CLI::App& app) {
  static ActArgs rm, hold, rel, vac, ckpt;
  struct Verb {
    const char* name;
    const char* help;
    ActArgs* args;
  };
  for (auto v : {Verb{"rm", "remove jobs from the queue, stopping them if they run", &rm},
                 Verb{"hold", "hold jobs (stopping them if they run) until released", &hold},
                 Verb{"release", "release held jobs", &rel},
                 Verb{"vacate",
                      "stop running vanilla jobs where they run; they go back to Idle and match "
                      "again (condor_vacate_job)",
                      &vac},
                 Verb{"checkpoint",
                      "running jobs with transparent checkpoints take one now and go on (the "
                      "standard universe's condor_checkpoint)",
                      &ckpt}}) {
    auto* c = app.add_subcommand(v.name, v.help);
    c->add_option("targets", v.args->targets,
                  "clusters C or jobs C.P, or owner names (all their jobs)");
    c->add_option("--constraint", v.args->constraint, "all jobs for which this expression is true");
    c->add_flag("--all", v.args->all, "all jobs in the queue");
    c->add_option("--reason", v.args->reason, "the reason recorded in the job and its log");
    if (v.args == &rm) {
      c->add_flag("--forcex", v.args->forcex,
                  "grid jobs: leave the queue now, without waiting for the site to confirm the "
                  "cancel (condor_rm -forcex; the job may go on at the site)");
    }
    std::string action = v.name;
    ActArgs* args = v.args;
    c->callback([action, args] { Act(action, *args); });
  }

  static EditArgs edit;
  auto* e = app.add_subcommand(
      "qedit", "change attributes of queued jobs (condor_qedit): ID ATTR VALUE [ATTR VALUE...]");
  e->add_option("words", edit.words,
                "a job id C or C.P (unless -constraint), then attribute names and values; each "
                "value is a ClassAd expression, so a string needs quotes: '\"text\"'");
  e->add_option("--constraint", edit.constraint, "the jobs for which this expression is true");
  e->callback([] { Edit(edit); });

  static std::vector<std::string> wait_words;
  static double wait_timeout = 0;
  static WaitLogArgs wait_log;
  auto* w = app.add_subcommand(
      "wait",
      "wait until jobs have left the queue, showing progress; or, condor_wait's form, until the "
      "jobs in a user log have ended (reads only the log: no agent needed)");
  w->add_option("words", wait_words,
                "clusters C or jobs C.P; or a user log (the submit file's `log`) and perhaps one "
                "cluster or job in it")
      ->required();
  w->add_option("--timeout", wait_timeout, "give up after this many seconds (exit 3)");
  auto* wait_s =
      w->add_option("--wait", wait_log.wait, "user log: give up after this many seconds (exit 3)");
  auto* num = w->add_option("--num", wait_log.num,
                            "user log: done once this many of the jobs have ended (default: all)");
  auto* debug = w->add_flag("--debug", wait_log.debug, "user log: what each read found");
  auto* status =
      w->add_flag("--status", wait_log.status, "user log: print each event of the jobs waited for");
  auto* echo = w->add_flag("--echo", wait_log.echo, "user log: print every event read");
  w->footer(
      "Forms: kite wait [--timeout S] ID...\n"
      "       kite wait [-debug] [-status] [-echo] [-num N] [-wait S] LOGFILE [ID]\n"
      "With a user log (condor_wait's form) kite wait reads the log every 150 ms until every job "
      "submitted to it, or ID's jobs, or -num of them, have terminated or been removed; held jobs "
      "are waited for. Its first word is taken as a log unless it is a job id and no -wait, -num, "
      "-status, -echo or -debug is given (name a log called 12 as ./12).\n"
      "Exit status: 0 all done, 1 error, 2 no such job (in the queue, or in the log), 3 timed "
      "out, 4 only held jobs left that nothing will release (no periodic_release; not with a "
      "log).");
  w->callback([=] {
    bool log_form = wait_s->count() || num->count() || debug->count() || status->count() ||
                    echo->count() || !agent::ParseJobSelector(wait_words[0]);
    if (!log_form) return Wait(wait_words, wait_timeout);
    if (wait_words.size() > 2)
      Die("condor_wait's form takes one user log and at most one job id: kite wait [-wait S] "
          "[-num N] LOGFILE [C or C.P]");
    wait_log.log = wait_words[0];
    if (wait_words.size() == 2) wait_log.job = wait_words[1];
    if (!wait_log.wait && wait_timeout > 0) wait_log.wait = static_cast<int>(wait_timeout + 0.999);
    WaitOnLog(wait_log);
  });

  static std::string log_id;
  auto* l = app.add_subcommand(
      "log", "show a job's event history in user-log format (no agent needs to run)");
  l->add_option("id", log_id, "job C.P")->required();
  l->callback([] { Log(log_id); });
}

}  // namespace kite::cli
