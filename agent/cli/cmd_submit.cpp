// `kite submit`, with condor_submit's habits:
//
//   kite submit [-dry-run DEST] [-append "cmd = value"]... [-terse] [-batch-name NAME]
//               [FILE | -] [NAME=value]...
//
// No FILE or "-" reads the submit file from standard input. NAME=value arguments are taken
// before the file (it may override them); -append lines just before each queue statement.
// -dry-run prints the job ads that would be submitted, without an agent: `-dry-run - FILE` or
// `-dry-run OUT FILE` as condor_submit (to stdout, or to the file OUT), and `-dry-run FILE`
// alone to stdout.
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>

#include "agent/cli/commands.h"
#include "agent/cli/submit_client.h"
#include "agent/cli/util.h"
#include "common/files.h"
#include "submit/submit_file.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

struct SubmitArgs {
  std::vector<std::string> words;  // FILE and NAME=value, in any order
  std::string dry_run;             // DEST, or FILE when no other file is named
  bool dry_run_set = false;
  std::vector<std::string> append;
  bool terse = false;
  std::string batch_name;
};

json::array AttrsJson(const std::vector<submit::Attr>& attrs) {
  json::array a;
  a.reserve(attrs.size());
  for (auto& at : attrs) a.push_back(json::array{json::string(at.name), json::string(at.expr)});
  return a;
}

struct Request {
  std::string file;  // "" or "-" for standard input
  std::string dest;  // dry run: "-" for standard output
  submit::SubmitOptions options;
};

// Sorts the words into the submit file and NAME=value definitions, and settles -dry-run's value.
Request Interpret(const SubmitArgs& a) {
  Request r;
  for (const auto& w : a.words) {
    if (w != "-" && w.find('=') != std::string::npos) {
      r.options.before_lines.push_back(w);
    } else if (r.file.empty()) {
      r.file = w;
    } else {
      Die("one submit file at a time: both '" + r.file + "' and '" + w + "' given");
    }
  }
  if (a.dry_run_set) {
    if (r.file.empty() && a.dry_run != "-") {
      r.file = a.dry_run;  // `kite submit -dry-run job.sub`
      r.dest = "-";
    } else {
      r.dest = a.dry_run;  // condor_submit's `-dry-run DEST FILE`
    }
  }
  r.options.append_lines = a.append;
  if (!a.batch_name.empty()) r.options.append_lines.push_back("batch_name = " + a.batch_name);
  return r;
}

Result<submit::ParsedCluster> Parse(const Request& r, const submit::SubmitOptions& options) {
  if (r.file.empty() || r.file == "-") {
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    return submit::ParseSubmitText(text, "<stdin>", options);
  }
  return submit::ParseSubmitFile(r.file, options);
}

submit::ParsedCluster ParseOrDie(const Request& r, const submit::SubmitOptions& options) {
  auto parsed = Parse(r, options);
  if (!parsed) Die(parsed.error());
  for (auto& w : parsed->warnings) std::fprintf(stderr, "%s\n", w.c_str());
  return std::move(*parsed);
}

void PrintTerse(long cluster, size_t jobs) {
  if (jobs == 0) return;
  std::printf("%ld.0 - %ld.%zu\n", cluster, cluster, jobs - 1);
}

// What condor_submit -dry-run shows: each job's whole ad, one `Name = value` per line.
void DryRun(const Request& r, bool terse) {
  submit::SubmitOptions options = r.options;
  options.cluster_id = 1;
  submit::ParsedCluster c = ParseOrDie(r, options);
  std::string out;
  for (size_t i = 0; i < c.procs.size(); ++i) {
    if (i > 0) out += "\n";
    for (const auto& a : submit::ProcAttrs(c, i)) out += a.name + " = " + a.expr + "\n";
  }
  if (r.dest == "-") {
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else if (auto st = WriteFileAtomic(r.dest, out, 0644); !st) {
    Die(st.error().Wrap("cannot write " + r.dest));
  }
  if (terse) {
    PrintTerse(1, c.procs.size());
  } else {
    std::fprintf(stderr, "%zu job(s) dry-run to cluster 1.\n", c.procs.size());
  }
}

void Submit(const Request& r, bool terse) {
  auto client = ConnectOrDie();
  SubmittedCluster done = SubmitClusterOrDie(*client, [&](int cluster) {
    submit::SubmitOptions options = r.options;
    options.cluster_id = cluster;
    return Parse(r, options);
  });
  if (terse) {
    PrintTerse(done.cluster, done.jobs);
  } else {
    std::printf("%zu job(s) submitted to cluster %d.\n", done.jobs, done.cluster);
  }
}

}  // namespace

SubmittedCluster SubmitClusterOrDie(
    AgentClient& client, const std::function<Result<submit::ParsedCluster>(int cluster)>& parse) {
  auto c = client.PostJson("/v1/cluster", {});
  if (!c) Die(c.error());
  int cluster = static_cast<int>(c->at("cluster").as_int64());
  // A description that does not parse gives its cluster id back, so the next submit gets it.
  auto give_back = [&] { (void)client.PostJson("/v1/cluster/return", {{"cluster", cluster}}); };
  auto parsed = parse(cluster);
  if (!parsed) {
    give_back();
    Die(parsed.error());
  }
  for (auto& w : parsed->warnings) std::fprintf(stderr, "%s\n", w.c_str());
  json::object body;
  body["cluster"] = cluster;
  body["common"] = AttrsJson(parsed->common);
  json::array procs;
  procs.reserve(parsed->procs.size());
  for (auto& p : parsed->procs) procs.push_back(AttrsJson(p));
  body["procs"] = std::move(procs);
  auto reply = client.PostJson("/v1/submit", body);
  if (!reply) {
    give_back();
    Die(reply.error());
  }
  return {cluster, static_cast<size_t>(reply->at("jobs").as_int64())};
}

void RegisterSubmitCommand(CLI::App& app) {
  static SubmitArgs a;
  auto* sub = app.add_subcommand("submit",
                                 "queue the jobs a submit description file describes "
                                 "(condor_submit)");
  sub->add_option("file", a.words,
                  "the submit file (none or - reads standard input), and NAME=value "
                  "definitions taken before it");
  sub->add_option("--dry-run", a.dry_run,
                  "print the job ads instead of submitting: -dry-run FILE, or as condor_submit "
                  "-dry-run DEST FILE (DEST - is standard output)")
      ->each([](const std::string&) { a.dry_run_set = true; });
  sub->add_option("-a,--append", a.append, "a submit line taken before each queue statement");
  sub->add_flag("--terse", a.terse, "print only the job ids, C.0 - C.N");
  sub->add_option("--batch-name", a.batch_name, "the batch name (JobBatchName) of the jobs");
  sub->callback([] {
    Request r = Interpret(a);
    if (a.dry_run_set) {
      DryRun(r, a.terse);
    } else {
      Submit(r, a.terse);
    }
  });
}

}  // namespace kite::cli
