// The agent's DAG runner (agent/dags.h): each node's life is the table in dag/node_machine.h; this
// file feeds it what happens (its jobs' statuses, its scripts' ends, the throttles, what a restart
// finds stored) and carries out the task each transition names.
#include "agent/dags.h"

#include <pwd.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <regex>
#include <set>
#include <utility>

#include "classad/expr.h"
#include "classad/parser.h"
#include "common/files.h"
#include "common/spawn.h"
#include "common/strings.h"
#include "dag/config.h"
#include "dag/dag.h"
#include "dag/node_machine.h"
#include "submit/submit_file.h"

namespace kite::agent {
namespace {

using dag::NodeEvent;
using dag::NodeState;
using dag::NodeTask;

// The node status file's NodeStatus for a node not ready when the DAG is over (DAGMan's "futile").
constexpr int kFutile = 7;

std::string StateName(NodeState s) {
  return std::string(dag::NodeStateName(s));
}

// $RETURN when the job never ran, as DAGMan gives it.
constexpr int kReturnSubmitFailed = -1001;
constexpr int kReturnPreFailed = -1004;
// DAG_Status / $DAG_STATUS (DAGMan's values).
constexpr int kDagOk = 0, kDagNodeFailed = 2, kDagAborted = 3;
// Nodes started per turn of the event loop, so that clients are answered between slices.
constexpr int kStartsPerSlice = 64;

// A ClassAd string literal of `s`, as a submit attribute's expression text.
std::string Quoted(const std::string& s) {
  return classad::Unparse(*classad::MakeString(s));
}

std::string LoginName() {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) != 0 || !found) return "";
  return pw.pw_name;
}

std::string Stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%m/%d/%y %H:%M:%S ", &tm);
  return buf;
}

std::vector<std::string> SplitWords(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

void ReplaceAll(std::string& s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// The jobs of a cluster, gathered first so that acting on them cannot disturb the walk.
std::vector<Job*> ClusterJobs(JobQueue& queue, int cluster) {
  std::vector<Job*> out;
  if (cluster == 0) return out;
  for (auto it = queue.jobs().lower_bound({cluster, 0});
       it != queue.jobs().end() && it->first.cluster == cluster; ++it)
    out.push_back(&it->second);
  return out;
}

bool Ended(const Job& j) {
  return j.status == kCompleted || j.status == kRemoved;
}

// The highest-numbered rescue DAG of `file` ("file.rescue003"), or "".
std::string LatestRescue(const std::string& file, int* number) {
  *number = 0;
  std::string found;
  for (int n = 1; n <= 999; ++n) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".rescue%03d", n);
    if (!FileExists(file + suffix)) break;
    found = file + suffix;
    *number = n;
  }
  return found;
}

}  // namespace

struct Dags::Run {
  struct Node {
    dag::NodeMark mark;  // its state and attempts so far; changed only by Dags::Step
    int waiting_on = 0;  // parents not done
    int cluster = 0;     // its latest job
    int reserved = 0;    // a cluster id reserved for its next job, or 0
    int code = 0;        // the job's $RETURN
    int pre_return = -1;
    bool job_ok = false;
    pid_t pid = 0;
    std::string note;
    int seq = 0;                // JOBSTATE_LOG's sequence number of its attempt
    std::string tag = "local";  // ... and its job tag (the job's pegasus_site)
  };
  int id = 0;
  std::string file, dir;
  dag::Dag dag;
  DagSubmitArgs limits;
  std::vector<Node> nodes;
  // (-priority, order, node): the order ready nodes start in. `order` is the node's place in the
  // file, or with DAGMAN_SUBMIT_DEPTH_FIRST minus when it became ready (the latest first).
  std::set<std::tuple<int, int64_t, size_t>> ready;
  bool depth_first = false;
  int depth = 0;  // 0 for a DAG submitted by the user, its parent's + 1 for a sub-DAG
  int64_t readied = 0;
  void MakeReady(size_t i) {
    int64_t order = depth_first ? -++readied : static_cast<int64_t>(i);
    ready.insert({-dag.nodes[i].priority, order, i});
  }
  std::set<size_t> check;  // queued nodes whose jobs changed status: perhaps they all ended
  int queued = 0, pre_running = 0, post_running = 0, done = 0, failed = 0;
  int deferred = 0;  // scripts waiting out a DEFER delay
  std::map<std::string, int, std::less<>> category_queued;
  bool final_started = false, aborted = false, drive_posted = false;
  bool loading = false;  // restoring its nodes: POST scripts wait in posts_due
  std::vector<size_t> posts_due;
  int exit_code = 0;
  bool always_run_post = false;   // a failed PRE script's POST script runs (DAGMAN_ALWAYS_RUN_POST)
  std::FILE* out = nullptr;       // file.dag.dagman.out
  std::FILE* jobstate = nullptr;  // JOBSTATE_LOG
  int next_seq = 1;
  // DOT ... UPDATE: rewritten at most once a second; DONT-OVERWRITE: file.0, file.1, ...
  std::chrono::steady_clock::time_point dot_written;
  int dot_number = 0;
  // NODE_STATUS_FILE: rewritten at most every node_status_interval seconds when something
  // changed (or, with ALWAYS-UPDATE, whether or not), and once more at the end.
  std::unique_ptr<boost::asio::steady_timer> status_timer;
  bool status_changed = true;
  ~Run() {
    if (out) std::fclose(out);
    if (jobstate) std::fclose(jobstate);
  }
};

namespace {

int DagStatus(const Dags::Run& run) {
  return run.aborted ? kDagAborted : run.failed ? kDagNodeFailed : kDagOk;
}

}  // namespace

// The DAG job's batch name, which its nodes' jobs share.
std::string Dags::BatchName(const Run& run) const {
  const Job* j = queue_.Find({run.id, 0});
  auto name = j ? j->ad.EvaluateString("JobBatchName") : std::nullopt;
  return name ? *name : BaseName(run.file) + "+" + std::to_string(run.id);
}

Dags::Dags(boost::asio::io_context& io, JobQueue& queue, Hooks hooks)
    : io_(io), queue_(queue), hooks_(std::move(hooks)) {}

Dags::~Dags() = default;

void Dags::Log(Run& run, const std::string& line) {
  if (!run.out) return;
  std::fputs((Stamp() + line + "\n").c_str(), run.out);
}

// DAGMan's jobstate log (the format Pegasus reads): "time NODE EVENT ID TAG - SEQ".
void Dags::Jobstate(Run& run, size_t node, const std::string& event, const std::string& id) {
  if (!run.jobstate) return;
  const auto& n = run.nodes[node];
  std::fprintf(run.jobstate, "%lld %s %s %s %s - %d\n", static_cast<long long>(std::time(nullptr)),
               run.dag.nodes[node].name.c_str(), event.c_str(), id.empty() ? "-" : id.c_str(),
               n.tag.c_str(), n.seq);
  std::fflush(run.jobstate);
}

void Dags::JobstateInternal(Run& run, const std::string& what) {
  if (!run.jobstate) return;
  std::fprintf(run.jobstate, "%lld INTERNAL *** %s ***\n",
               static_cast<long long>(std::time(nullptr)), what.c_str());
  std::fflush(run.jobstate);
}

namespace {

dag::ParseOptions FileReader(const std::string& dir, bool use_dag_dir) {
  dag::ParseOptions o;
  o.use_dag_dir = use_dag_dir;
  o.read = [dir](const std::string& path) { return ReadFile(kite::JoinPath(dir, path)); };
  o.exists = [dir](const std::string& path) { return FileExists(kite::JoinPath(dir, path)); };
  return o;
}

Status RefuseUnsupported(const dag::Dag& d) {
  for (const auto& n : d.nodes) {
    const char* what = n.kind == dag::NodeKind::kService       ? "SERVICE"
                       : n.kind == dag::NodeKind::kProvisioner ? "PROVISIONER"
                                                               : nullptr;
    if (what)
      return Fail(ErrorCode::kInvalidInput, n.where.ToString() + ": " + what +
                                                " nodes are not run by Kite yet; refused before "
                                                "anything was queued");
  }
  return {};
}

}  // namespace

namespace {

// A submit command for the DAG's own job (-append, -insert_sub_file) as its attribute.
Result<std::optional<SubmitAttr>> DagJobCommand(std::string_view line, const std::string& where) {
  line = Trim(line);
  if (line.empty() || line[0] == '#') return std::optional<SubmitAttr>();
  size_t eq = line.find('=');
  std::string name(Trim(line.substr(0, eq == std::string_view::npos ? 0 : eq)));
  std::string value(eq == std::string_view::npos ? "" : Trim(line.substr(eq + 1)));
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  SubmitAttr a;
  if (lower == "notify_user") {
    a = {"NotifyUser", Quoted(value)};
  } else if (lower == "notification") {
    static const std::map<std::string, int, std::less<>> kValues = {
        {"never", 0}, {"always", 1}, {"complete", 2}, {"error", 3}};
    std::string v = value;
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = kValues.find(v);
    if (it == kValues.end())
      return Fail(ErrorCode::kInvalidInput,
                  where + ": notification must be Never, Always, Complete or Error, not " + value);
    a = {"JobNotification", std::to_string(it->second)};
  } else if (name.size() > 1 && (name[0] == '+' || lower.starts_with("my."))) {
    a.name = name.substr(name[0] == '+' ? 1 : 3);
    a.expr = value;
    if (auto st = classad::CheckAttributeName(a.name); !st)
      return Fail(ErrorCode::kInvalidInput, where + ": " + st.error().message());
    if (auto e = classad::ParseExpr(value); !e)
      return Fail(ErrorCode::kInvalidInput,
                  where + ": " + a.name + " = " + value + ": " + e.error().message());
  } else {
    return Fail(ErrorCode::kInvalidInput,
                where + ": " + std::string(line.substr(0, 80)) +
                    ": a DAG's job takes +Attr = value, My.Attr = value, notification and "
                    "notify_user");
  }
  return std::optional<SubmitAttr>(std::move(a));
}

}  // namespace

Result<DagSubmitted> Dags::Submit(const DagSubmitArgs& args) {
  std::vector<std::string> files;
  for (const auto& f : args.files) {
    if (f.empty()) return Fail(ErrorCode::kInvalidInput, "an empty DAG file name");
    files.push_back(f[0] == '/' ? f : kite::JoinPath(args.cwd.empty() ? "." : args.cwd, f));
  }
  if (files.empty()) return Fail(ErrorCode::kInvalidInput, "no DAG file named");
  const std::string& file = files[0];
  std::string dir = DirName(file);
  // Names in every file are relative to the first one's directory (DAGMan's, without
  // -usedagdir); the parser sees them as the user wrote them.
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(DirName(f) == dir ? BaseName(f) : f);
  auto parsed = dag::ParseDag(names, FileReader(dir, args.use_dag_dir));
  if (!parsed) return Fail(parsed.error());
  if (auto st = RefuseUnsupported(*parsed); !st) return Fail(st.error());
  if (int other = FindByFile(file))
    return Fail(ErrorCode::kConflict, file + " is already running as DAG " + std::to_string(other) +
                                          " (kite rm " + std::to_string(other) + " stops it)");
  if (args.depth > kMaxDagDepth)
    return Fail(ErrorCode::kInvalidInput,
                "sub-DAGs nest more than " + std::to_string(kMaxDagDepth) + " deep");
  DagSubmitted out;
  out.nodes = parsed->nodes.size();
  out.warnings = parsed->warnings;
  // CONFIG: DAGMan allows one file per DAG; what the command line says wins over it.
  DagSubmitArgs limits = args;
  bool depth_first = false;
  std::set<std::string> configs(parsed->config_files.begin(), parsed->config_files.end());
  if (configs.size() > 1)
    return Fail(ErrorCode::kInvalidInput, "the DAG names " + std::to_string(configs.size()) +
                                              " CONFIG files; DAGMan allows one per DAG");
  if (!configs.empty()) {
    std::string path = kite::JoinPath(dir, *configs.begin());
    auto text = ReadFile(path);
    if (!text) return Fail(text.error().Wrap("the DAG's CONFIG file"));
    auto config = dag::ParseDagConfig(*configs.begin(), *text);
    if (!config) return Fail(config.error());
    for (auto [mine, theirs] : {std::pair{&limits.max_jobs, config->max_jobs},
                                {&limits.max_idle, config->max_idle},
                                {&limits.max_pre, config->max_pre},
                                {&limits.max_post, config->max_post}}) {
      if (*mine == 0 && theirs) *mine = *theirs;
    }
    if (!limits.always_run_post) limits.always_run_post = config->always_run_post;
    depth_first = config->depth_first.value_or(false);
    out.warnings.insert(out.warnings.end(), config->warnings.begin(), config->warnings.end());
  }
  // The DAG's own job: SET_JOB_ATTR (the last of a name wins), then -insert_sub_file's and
  // -append's submit commands, which win over it (DAGMan's order).
  std::vector<SubmitAttr> job_attrs;
  for (const auto& [name, value] : parsed->job_attrs) {
    if (auto st = classad::CheckAttributeName(name); !st)
      return Fail(ErrorCode::kInvalidInput, "SET_JOB_ATTR " + name + ": " + st.error().message());
    if (auto e = classad::ParseExpr(value); !e)
      return Fail(ErrorCode::kInvalidInput,
                  "SET_JOB_ATTR " + name + " = " + value + ": " + e.error().message());
    job_attrs.push_back({name, value});
  }
  if (!args.insert_sub_file.empty()) {
    std::string path = kite::JoinPath(args.cwd.empty() ? "." : args.cwd, args.insert_sub_file);
    auto text = ReadFile(path);
    if (!text) return Fail(text.error().Wrap("-insert_sub_file"));
    auto lines = Split(*text, '\n', /*skip_empty=*/false);
    for (size_t i = 0; i < lines.size(); ++i) {
      auto a = DagJobCommand(lines[i], args.insert_sub_file + ":" + std::to_string(i + 1));
      if (!a) return Fail(a.error());
      if (*a) job_attrs.push_back(**a);
    }
  }
  for (const auto& line : args.append) {
    auto a = DagJobCommand(line, "-append");
    if (!a) return Fail(a.error());
    if (*a) job_attrs.push_back(**a);
  }
  if (!args.notification.empty()) {
    auto a = DagJobCommand("notification = " + args.notification, "-notification");
    if (!a) return Fail(a.error());
    if (*a) job_attrs.push_back(**a);
  }
  // DAGMan's -autorescue: the latest rescue DAG says which nodes are done; -force starts over
  // and moves the old rescue DAGs aside.
  int number = 0;
  std::string rescue = LatestRescue(file, &number);
  std::vector<std::string> rescued;
  if (!rescue.empty() && args.force) {
    for (int n = 1; n <= number; ++n) {
      char suffix[24];
      std::snprintf(suffix, sizeof suffix, ".rescue%03d", n);
      std::string from = file + suffix;
      if (::rename(from.c_str(), (from + ".old").c_str()) != 0) return FailErrno("rename " + from);
    }
  } else if (!rescue.empty()) {
    auto with_names = names;
    with_names.push_back(BaseName(rescue));
    auto with = dag::ParseDag(with_names, FileReader(dir, args.use_dag_dir));
    if (!with) return Fail(with.error().Wrap("the rescue DAG " + rescue));
    for (size_t i = 0; i < with->nodes.size(); ++i) {
      // A rescue DAG only marks nodes DONE; a node it defines anew is not taken from it.
      if (with->nodes[i].done && i < parsed->nodes.size() && !parsed->nodes[i].done)
        rescued.push_back(with->nodes[i].name);
    }
    out.rescue = rescue;
    out.done_from_rescue = rescued.size();
  }
  auto cluster = queue_.NewCluster();
  if (!cluster) return Fail(cluster.error());
  // The rescue DAG's results are recorded before the DAG's job exists (the same or an earlier
  // transaction): a DAG never runs without them. The id is never handed out again.
  for (const auto& name : rescued) queue_.SetDagNode(*cluster, name, "done 0 0 0");
  SubmitRequest req;
  req.cluster = *cluster;
  req.dag = true;
  req.common = {{"JobUniverse", std::to_string(kUniverseScheduler)},
                {"Cmd", Quoted("kite-dag")},
                {"Args", Quoted(file)},
                {"Iwd", Quoted(dir)},
                {"DAGFile", Quoted(file)},
                {"UserLog", Quoted(file + ".dagman.log")},
                {"DAGManOut", Quoted(file + ".dagman.out")},
                {"DAG_NodesTotal", std::to_string(parsed->nodes.size())},
                {"DAGMaxJobs", std::to_string(limits.max_jobs)},
                {"DAGMaxIdle", std::to_string(limits.max_idle)},
                {"DAGMaxPre", std::to_string(limits.max_pre)},
                {"DAGMaxPost", std::to_string(limits.max_post)},
                {"DAGAlwaysRunPost", limits.always_run_post.value_or(false) ? "true" : "false"},
                {"DAGSubmitDepthFirst", depth_first ? "true" : "false"},
                {"DAGDepth", std::to_string(args.depth)}};
  if (args.use_dag_dir) req.common.push_back({"DAGUseDagDir", "true"});
  if (files.size() > 1) {
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ", ") + Quoted(f);
    req.common.push_back({"DAGFiles", "{ " + list + " }"});
  }
  // condor_q's batch name for the DAG and all its nodes (sub-DAGs' included): "file.dag+C",
  // unless given.
  auto named = [](const std::vector<SubmitAttr>& v) {
    return std::any_of(v.begin(), v.end(),
                       [](const SubmitAttr& a) { return a.name == "JobBatchName"; });
  };
  if (!named(job_attrs) && !named(args.attrs))
    req.common.push_back({"JobBatchName", Quoted(BaseName(file) + "+" + std::to_string(*cluster))});
  for (auto& a : job_attrs) req.common.push_back(std::move(a));
  if (auto user = LoginName(); !user.empty()) req.common.push_back({"Owner", Quoted(user)});
  for (const auto& a : args.attrs) req.common.push_back(a);
  req.procs = {{{"ProcId", "0"}}};
  auto n = queue_.Submit(req);
  if (!n) return Fail(n.error());
  out.cluster = *cluster;
  if (Job* j = queue_.Find({*cluster, 0})) {
    Load(*j, /*recovering=*/false);
    DriveSoon(*cluster);
  }
  return out;
}

std::vector<int> Dags::Running() const {
  std::vector<int> out;
  for (const auto& [id, run] : runs_) out.push_back(id);
  return out;
}

int Dags::FindByFile(const std::string& file) const {
  // The same file under another spelling (./../dag/x.dag, a link) is the same DAG: told by
  // device and inode, not by name.
  struct stat want {};
  bool known = ::stat(file.c_str(), &want) == 0;
  for (const auto& [id, run] : runs_) {
    if (run->file == file) return id;
    struct stat st {};
    if (known && ::stat(run->file.c_str(), &st) == 0 && st.st_dev == want.st_dev &&
        st.st_ino == want.st_ino)
      return id;
  }
  return 0;
}

void Dags::Recover() {
  std::vector<Job*> dags;
  for (auto& [key, j] : queue_.jobs()) {
    if (j.universe == kUniverseScheduler && j.status != kCompleted && j.status != kRemoved)
      dags.push_back(&j);
  }
  for (Job* j : dags) Load(*j, /*recovering=*/true);
  for (auto& [id, run] : runs_) DriveSoon(id);
}

// Builds a DAG's state from its file, its nodes' jobs in the queue and its node records.
// A run's nodes as what is stored makes them, through the node's table as a live run's events
// would (dag::RestoreInputs): its DONE line, its record (a result, or a POST script to run again),
// and a job of its in the queue that the record does not speak of (it is queued). `leftovers`:
// jobs whose results are recorded already.
void Dags::Restore(Run& run, std::vector<int>* leftovers) {
  auto& nodes = run.nodes;
  nodes.resize(run.dag.nodes.size());
  std::map<size_t, dag::NodeRecord> records;
  (void)queue_.DagNodes(run.id, [&](std::string_view node, std::string_view text) {
    auto it = run.dag.by_name.find(node);
    if (it == run.dag.by_name.end()) return;
    auto record = dag::ParseNodeRecord(text);
    if (!record) {
      Log(run, "The record of node " + std::string(node) + " cannot be read (" +
                   record.error().message() + "); it is taken as not run");
      return;
    }
    records[it->second] = *record;
  });
  std::map<size_t, int> queued;
  for (auto& [key, j] : queue_.jobs()) {
    if (j.ad.EvaluateInt("DAGManJobId").value_or(0) != run.id) continue;
    auto name = j.ad.EvaluateString("DAGNodeName");
    auto it = name ? run.dag.by_name.find(*name) : run.dag.by_name.end();
    if (it == run.dag.by_name.end()) continue;
    queued[it->second] = key.cluster;
  }
  run.loading = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto& n = nodes[i];
    std::optional<dag::NodeRecord> record;
    if (auto r = records.find(i); r != records.end()) {
      record = r->second;
      n.cluster = record->cluster;
      n.code = record->code;
    }
    std::optional<int> queued_retry;
    if (auto q = queued.find(i); q != queued.end()) {
      if (q->second == n.cluster) {
        leftovers->push_back(q->second);
      } else {
        n.cluster = q->second;
        const Job* j = queue_.Find({q->second, 0});
        int before = record ? record->attempts : 0;
        queued_retry =
            j ? static_cast<int>(j->ad.EvaluateInt("DAGNodeRetry").value_or(before)) : before;
        run.check.insert(i);
      }
    }
    for (const auto& in : dag::RestoreInputs(run.dag.nodes[i].done, record, queued_retry))
      Step(run, i, in);
  }
  // JOBSTATE_LOG's sequence numbers go on after those the attempts so far had (near enough:
  // DAGMan's recovery does not keep them either).
  for (const auto& n : nodes)
    run.next_seq += n.mark.attempts + (n.mark.state != NodeState::kWaiting);
  for (auto& n : nodes) {
    if (n.mark.state == NodeState::kSubmitted) n.seq = run.next_seq++;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t p : run.dag.nodes[i].parents) {
      if (nodes[p].mark.state != NodeState::kDone) ++nodes[i].waiting_on;
    }
    if (nodes[i].waiting_on == 0 && !(run.dag.final_node && *run.dag.final_node == i))
      Step(run, i, {.event = NodeEvent::kUnblocked});
  }
  run.loading = false;
}

void Dags::Load(Job& dag_job, bool recovering) {
  int id = dag_job.key.cluster;
  auto file = dag_job.ad.EvaluateString("DAGFile");
  if (!file) return;
  auto run = std::make_unique<Run>();
  run->id = id;
  run->file = *file;
  run->dir = DirName(*file);
  std::vector<std::string> names = {BaseName(*file)};
  if (auto list = dag_job.ad.Evaluate("DAGFiles"); list.IsList()) {
    names.clear();
    for (const auto& v : list.AsList()) {
      if (!v.IsString()) continue;
      std::string f(v.AsString());
      names.push_back(DirName(f) == run->dir ? BaseName(f) : f);
    }
  }
  auto parsed = dag::ParseDag(
      names, FileReader(run->dir, dag_job.ad.EvaluateBool("DAGUseDagDir").value_or(false)));
  if (!parsed) {
    (void)queue_.Hold(dag_job, "The DAG file cannot be read again: " + parsed.error().message(),
                      kHoldQueueDamage);
    hooks_.commit_soon();
    return;
  }
  run->dag = std::move(*parsed);
  run->limits.max_jobs = static_cast<int>(dag_job.ad.EvaluateInt("DAGMaxJobs").value_or(0));
  run->limits.max_idle = static_cast<int>(dag_job.ad.EvaluateInt("DAGMaxIdle").value_or(0));
  run->limits.max_pre = static_cast<int>(dag_job.ad.EvaluateInt("DAGMaxPre").value_or(0));
  run->limits.max_post = static_cast<int>(dag_job.ad.EvaluateInt("DAGMaxPost").value_or(0));
  run->always_run_post = dag_job.ad.EvaluateBool("DAGAlwaysRunPost").value_or(false);
  run->depth_first = dag_job.ad.EvaluateBool("DAGSubmitDepthFirst").value_or(false);
  run->depth = static_cast<int>(dag_job.ad.EvaluateInt("DAGDepth").value_or(0));
  run->out = std::fopen((*file + ".dagman.out").c_str(), "a");
  if (!run->dag.jobstate_log.empty()) {
    std::string path = kite::JoinPath(run->dir, run->dag.jobstate_log);
    run->jobstate = std::fopen(path.c_str(), "a");
    if (!run->jobstate)
      Log(*run, "Cannot open the jobstate log " + path + ": " + std::strerror(errno));
  }
  JobstateInternal(*run, "DAGMAN_STARTED " + std::to_string(id) + ".0");
  if (recovering) JobstateInternal(*run, "RECOVERY_STARTED");
  std::vector<int> leftovers;  // jobs whose results are recorded already
  Restore(*run, &leftovers);
  const auto& nodes = run->nodes;
  Log(*run, "Kite DAG runner: " + *file + " (DAG " + std::to_string(id) + "), " +
                std::to_string(nodes.size()) + " nodes, " + std::to_string(run->done) + " done, " +
                std::to_string(run->queued) + " queued");
  Run& r = *run;
  runs_[id] = std::move(run);
  if (recovering) JobstateInternal(r, "RECOVERY_FINISHED");
  WriteDot(r);
  if (!r.dag.node_status_file.empty()) {
    r.status_timer = std::make_unique<boost::asio::steady_timer>(io_);
    StatusTick(id);
  }
  for (int cluster : leftovers) {
    for (Job* j : ClusterJobs(queue_, cluster)) {
      if (Ended(*j)) hooks_.retire(*j);
    }
  }
  for (size_t p : std::exchange(r.posts_due, {})) RunScript(r, p, false);
  if (dag_job.status == kIdle) (void)queue_.MarkRunning(dag_job);
  hooks_.commit_soon();
}

void Dags::DriveSoon(int cluster) {
  auto it = runs_.find(cluster);
  if (it == runs_.end() || it->second->drive_posted) return;
  it->second->drive_posted = true;
  boost::asio::post(io_, [this, cluster] {
    auto found = runs_.find(cluster);
    if (found == runs_.end()) return;
    found->second->drive_posted = false;
    Drive(*found->second);
  });
}

// Starts what the throttles allow, in priority order; finishes the DAG when nothing can move.
void Dags::Drive(Run& run) {
  Job* dag_job = queue_.Find({run.id, 0});
  if (!dag_job) return;
  // Nodes whose jobs all ended (while the agent was down, or just now) are taken first.
  auto check = std::move(run.check);
  run.check.clear();
  for (size_t i : check) {
    if (run.nodes[i].mark.state != NodeState::kSubmitted) continue;
    auto jobs = ClusterJobs(queue_, run.nodes[i].cluster);
    if (std::all_of(jobs.begin(), jobs.end(), [](const Job* j) { return Ended(*j); }))
      JobEnded(run, i);
  }
  bool held = dag_job->status != kRunning;
  bool paused = held || run.aborted;
  int started = 0, pres = 0;
  int idle = 0;
  std::vector<size_t> starting;
  std::map<std::string, int, std::less<>> category_started;
  if (run.limits.max_idle > 0) {
    for (const auto& n : run.nodes) {
      if (n.mark.state != NodeState::kSubmitted) continue;
      for (const Job* j : ClusterJobs(queue_, n.cluster)) idle += j->status == kIdle;
    }
  }
  for (auto it = run.ready.begin(); !paused && it != run.ready.end();) {
    size_t i = std::get<2>(*it);
    const auto& node = run.dag.nodes[i];
    bool has_pre = node.pre.has_value();
    if (has_pre && run.limits.max_pre > 0 && run.pre_running + pres >= run.limits.max_pre) {
      ++it;
      continue;
    }
    // A node whose PRE script runs counts against -maxjobs already: its job comes next.
    if (run.limits.max_jobs > 0 && run.queued + run.pre_running + started >= run.limits.max_jobs)
      break;
    if (run.limits.max_idle > 0 && idle >= run.limits.max_idle) break;
    auto cat = run.dag.max_jobs.find(node.category);
    if (!node.category.empty() && cat != run.dag.max_jobs.end() &&
        run.category_queued[node.category] + category_started[node.category] >= cat->second) {
      ++it;
      continue;
    }
    if (started == kStartsPerSlice) {
      DriveSoon(run.id);
      break;
    }
    it = run.ready.erase(it);
    ++started;
    ++idle;
    starting.push_back(i);
    ++category_started[node.category];
    pres += has_pre;
  }
  // The node jobs of this slice get their cluster ids in one commit, and are written together
  // by the next flush.
  auto plain_job = [&](size_t i) {
    const auto& node = run.dag.nodes[i];
    return !node.pre && !node.noop && node.kind != dag::NodeKind::kSubdag;
  };
  size_t jobs = std::count_if(starting.begin(), starting.end(), plain_job);
  std::vector<int> ids;
  if (jobs > 1) {
    auto reserved = queue_.NewClusters(static_cast<int>(jobs));
    if (reserved) ids = std::move(*reserved);
  }
  size_t next = 0;  // ids in the order the nodes start
  for (size_t i : starting) {
    int id = 0;
    if (next < ids.size() && plain_job(i)) id = ids[next++];
    Start(run, i, id);
  }
  Publish(run);
  bool moving = run.queued > 0 || run.pre_running > 0 || run.post_running > 0 || run.deferred > 0 ||
                (!paused && !run.ready.empty()) || !run.check.empty() || run.drive_posted;
  if (!moving && !held) Finish(run);
}

void Dags::Start(Run& run, size_t i, int cluster) {
  run.nodes[i].seq = run.next_seq++;
  run.nodes[i].reserved = cluster;
  Step(run, i, {.event = NodeEvent::kStart});
}

// Counts a node in the run's tallies by its state (sign 1), or out of them (-1).
void Dags::Tally(Run& run, size_t i, int sign) {
  switch (run.nodes[i].mark.state) {
    case NodeState::kSubmitted:
      run.queued += sign;
      run.category_queued[run.dag.nodes[i].category] += sign;
      break;
    case NodeState::kDone:
      run.done += sign;
      break;
    case NodeState::kFailed:
      run.failed += sign;
      break;
    default:
      break;
  }
}

// The one place a node's state changes: its table's transition for `in` (dag/node_machine.h),
// the tallies that follow from it, then the transition's task.
void Dags::Step(Run& run, size_t i, const dag::NodeInput& in) {
  auto& n = run.nodes[i];
  const auto& node = run.dag.nodes[i];
  auto step = dag::Apply(n.mark, dag::FactsOf(node, run.always_run_post, run.aborted), in);
  if (!step) {
    spdlog::debug("DAG {} node {}: {} ignored in {}", run.id, node.name,
                  dag::NodeEventName(in.event), dag::NodeStateName(n.mark.state));
    return;
  }
  Tally(run, i, -1);
  n.mark = step->mark;
  Tally(run, i, 1);
  switch (step->task) {
    case NodeTask::kNone:
      return;
    case NodeTask::kQueueReady:
      return run.MakeReady(i);
    case NodeTask::kStart:
      return Start(run, i);
    case NodeTask::kRunPre:
      return RunScript(run, i, true);
    case NodeTask::kSubmit:
      return SubmitNode(run, i, std::exchange(n.reserved, 0));
    case NodeTask::kRunLater:
      return RunLater(run, i);
    case NodeTask::kRunPost:
      if (run.loading) return run.posts_due.push_back(i);
      return RunScript(run, i, false);
    case NodeTask::kRecordPost:
      Record(run, i);  // its POST runs again after a restart; the jobs can go
      RetireNodeJobs(run, i);
      return RunScript(run, i, false);
    case NodeTask::kDone:
      Record(run, i);
      RetireNodeJobs(run, i);
      for (size_t c : node.children) {
        if (--run.nodes[c].waiting_on == 0) Step(run, c, {.event = NodeEvent::kUnblocked});
      }
      return DriveSoon(run.id);
    case NodeTask::kRetry:
      Record(run, i);
      RetireNodeJobs(run, i);
      Log(run, "Node " + node.name + " failed; retry " + std::to_string(n.mark.attempts) + " of " +
                   std::to_string(node.retries));
      run.MakeReady(i);
      return DriveSoon(run.id);
    case NodeTask::kFail:
      Record(run, i);
      RetireNodeJobs(run, i);
      Log(run, "Node " + node.name + " failed" + (n.note.empty() ? "" : ": " + n.note));
      return DriveSoon(run.id);
    case NodeTask::kAbort:
      Record(run, i);
      RetireNodeJobs(run, i);
      return Abort(
          run, node.abort_return.value_or(in.code),
          "node " + node.name + " returned " + std::to_string(in.code) + " (ABORT-DAG-ON)");
  }
}

void Dags::SubmitNode(Run& run, size_t i, int reserved) {
  auto& n = run.nodes[i];
  const auto& node = run.dag.nodes[i];
  if (node.noop) {
    Log(run, "Node " + node.name + " is NOOP: not submitted");
    n.job_ok = true;
    n.code = 0;
    n.cluster = 0;
    Step(run, i, {.event = NodeEvent::kSubmitted});
    JobEnded(run, i);
    return;
  }
  auto fail = [&](const std::string& why) {
    Log(run, "Node " + node.name + ": submit failed: " + why);
    n.note = why;
    n.cluster = 0;
    n.job_ok = false;
    n.code = kReturnSubmitFailed;
    Step(run, i, {.event = NodeEvent::kSubmitted});
    Jobstate(run, i, "SUBMIT_FAILURE", "");
    JobEnded(run, i);
  };
  std::string parents;
  for (size_t p : node.parents) parents += (parents.empty() ? "" : ",") + run.dag.nodes[p].name;
  if (node.kind == dag::NodeKind::kSubdag) {
    // A sub-DAG is a DAG of its own (its rescue DAG used on a retry), and its job is the node's.
    DagSubmitArgs sub;
    sub.files = {kite::JoinPath(kite::JoinPath(run.dir, node.dir), node.submit)};
    sub.depth = run.depth + 1;
    sub.attrs = {{"JobBatchName", Quoted(BatchName(run))},
                 {"DAGManJobId", std::to_string(run.id)},
                 {"DAGNodeName", Quoted(node.name)},
                 {"DAGNodeRetry", std::to_string(n.mark.attempts)},
                 {"DAGParentNodeNames", Quoted(parents)}};
    auto submitted = Submit(sub);
    if (!submitted) return fail(submitted.error().message());
    n.cluster = submitted->cluster;
    Step(run, i, {.event = NodeEvent::kSubmitted});
    Log(run, "Submitted node " + node.name + " as the sub-DAG " + sub.files[0] + " (DAG " +
                 std::to_string(n.cluster) + ")");
    Jobstate(run, i, "SUBMIT", std::to_string(n.cluster) + ".0");
    return;
  }
  auto cluster = reserved ? Result<int>(reserved) : queue_.NewCluster();
  if (!cluster) return fail(cluster.error().message());
  submit::SubmitOptions so;
  so.cluster_id = *cluster;
  so.cwd = kite::JoinPath(run.dir, node.dir);
  so.file_checks = submit::FileChecks::kCondor;
  // The macros DAGMan defines for every node's submit file (the file may override them).
  so.before_lines = {"JOB = " + node.name, "RETRY = " + std::to_string(n.mark.attempts),
                     "DAGManJobId = " + std::to_string(run.id),
                     "DAG_STATUS = " + std::to_string(DagStatus(run)),
                     "FAILED_COUNT = " + std::to_string(run.failed)};
  for (const auto& v : node.vars) {
    // In a VARS value, $(JOB) is the node's name and $(RETRY) its attempt (DAGMan's).
    std::string value = v.value;
    ReplaceAll(value, "$(JOB)", node.name);
    ReplaceAll(value, "$(RETRY)", std::to_string(n.mark.attempts));
    std::string line = v.name + " = " + value;
    (v.prepend ? so.before_lines : so.append_lines).push_back(line);
  }
  Result<submit::ParsedCluster> parsed = Fail(ErrorCode::kInternal, "");
  auto d = run.dag.descriptions.find(node.submit);
  if (!node.inline_submit.empty() || d != run.dag.descriptions.end()) {
    // A description in the DAG file queues one job without saying so (DAGMan's).
    std::string text = node.inline_submit.empty() ? d->second : node.inline_submit;
    static const std::regex kQueue(R"((^|\n)[ \t]*queue\b)", std::regex::icase);
    if (!std::regex_search(text, kQueue)) text += "\nqueue\n";
    parsed = submit::ParseSubmitText(text, run.file, so);
  } else {
    parsed = submit::ParseSubmitFile(kite::JoinPath(so.cwd, node.submit), so);
  }
  if (!parsed) {
    (void)queue_.ReturnCluster(*cluster);
    return fail(parsed.error().message());
  }
  SubmitRequest req;
  req.cluster = *cluster;
  for (auto& a : parsed->common) req.common.push_back({a.name, a.expr});
  req.common.push_back({"DAGManJobId", std::to_string(run.id)});
  req.common.push_back({"DAGNodeName", Quoted(node.name)});
  req.common.push_back({"DAGNodeRetry", std::to_string(n.mark.attempts)});
  req.common.push_back({"DAGParentNodeNames", Quoted(parents)});
  req.common.push_back({"DAGManNodesLog", Quoted(run.file + ".nodes.log")});
  if (std::none_of(req.common.begin(), req.common.end(),
                   [](const SubmitAttr& a) { return a.name == "JobBatchName"; }))
    req.common.push_back({"JobBatchName", Quoted(BatchName(run))});
  for (auto& p : parsed->procs) {
    std::vector<SubmitAttr> attrs;
    for (auto& a : p) attrs.push_back({a.name, a.expr});
    req.procs.push_back(std::move(attrs));
  }
  auto submitted = queue_.Submit(req, /*durable=*/false);
  if (!submitted) {
    (void)queue_.ReturnCluster(*cluster);
    return fail(submitted.error().message());
  }
  hooks_.commit_soon();
  n.cluster = *cluster;
  Step(run, i, {.event = NodeEvent::kSubmitted});
  Log(run, "Submitted node " + node.name + " as job " + std::to_string(*cluster) + " (" +
               std::to_string(*submitted) + " proc" + (*submitted == 1 ? "" : "s") + ")");
  if (run.jobstate) {
    for (const Job* j : ClusterJobs(queue_, *cluster)) {
      n.tag = j->ad.EvaluateString("pegasus_site").value_or("local");
      Jobstate(run, i, "SUBMIT", JobIdString(j->key));
    }
  }
}

void Dags::RunScript(Run& run, size_t i, bool pre) {
  auto& n = run.nodes[i];
  const auto& node = run.dag.nodes[i];
  const dag::Script& script = pre ? *node.pre : *node.post;
  auto words = SplitWords(script.command);
  std::string jobid = n.cluster ? std::to_string(n.cluster) + ".0" : "";
  int status = DagStatus(run);
  for (auto& w : words) {
    ReplaceAll(w, "$PRE_SCRIPT_RETURN", std::to_string(n.pre_return));
    ReplaceAll(w, "$MAX_RETRIES", std::to_string(node.retries));
    ReplaceAll(w, "$FAILED_COUNT", std::to_string(run.failed));
    ReplaceAll(w, "$DAG_STATUS", std::to_string(status));
    ReplaceAll(w, "$RETURN", std::to_string(n.code));
    ReplaceAll(w, "$RETRY", std::to_string(n.mark.attempts));
    ReplaceAll(w, "$JOBID", jobid);
    ReplaceAll(w, "$JOB", node.name);
  }
  if (words.empty()) return ScriptEnded(run, i, pre, 1);
  std::string cwd = kite::JoinPath(run.dir, node.dir);
  std::string exe = kite::JoinPath(cwd, words[0]);
  if (words[0].find('/') == std::string::npos && !FileExists(exe)) exe = words[0];
  // Stdout and stderr both go to the script's DEBUG file, appended; the script is in the
  // agent's session (it is killed by pid when the DAG is removed).
  SpawnOptions so{.program = exe,
                  .argv = words,
                  .env = CurrentEnvironment(),
                  .new_session = false,
                  .stdout_path = script.debug_file.empty() ? "/dev/null"
                                                           : kite::JoinPath(cwd, script.debug_file),
                  .stderr_to_stdout = true,
                  .cwd = cwd,
                  .search_path = exe == words[0]};
  auto spawned = Spawn(so);
  if (!spawned) {
    Log(run, std::string(pre ? "PRE" : "POST") + " script of node " + node.name +
                 " could not start: " + spawned.error().message());
    return ScriptEnded(run, i, pre, 1);
  }
  (pre ? run.pre_running : run.post_running)++;
  pid_t pid = *spawned;
  n.pid = pid;
  Jobstate(run, i, pre ? "PRE_SCRIPT_STARTED" : "POST_SCRIPT_STARTED", pre ? "" : jobid);
  scripts_[pid] = {run.id, i};
  Log(run, std::string("Running ") + (pre ? "PRE" : "POST") + " script of node " + node.name +
               " (pid " + std::to_string(pid) + ")");
}

bool Dags::Reaped(pid_t pid, int status) {
  auto it = scripts_.find(pid);
  if (it == scripts_.end()) return false;
  auto [id, i] = it->second;
  scripts_.erase(it);
  auto run = runs_.find(id);
  if (run == runs_.end()) return true;
  auto& n = run->second->nodes[i];
  n.pid = 0;
  bool pre = n.mark.state == NodeState::kPre;
  (pre ? run->second->pre_running : run->second->post_running)--;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  ScriptEnded(*run->second, i, pre, code);
  DriveSoon(id);
  return true;
}

void Dags::ScriptEnded(Run& run, size_t i, bool pre, int code) {
  auto& n = run.nodes[i];
  const auto& node = run.dag.nodes[i];
  Log(run, std::string(pre ? "PRE" : "POST") + " script of node " + node.name + " ended with " +
               std::to_string(code));
  // Judged here as Step will judge it, because the jobstate log's lines and the node's note must
  // come before whatever the step starts (the job's SUBMIT, the POST script).
  dag::NodeInput in{.event = NodeEvent::kScriptEnded, .code = code};
  NodeEvent judged = dag::Judge(n.mark, dag::FactsOf(node, run.always_run_post, run.aborted), in);
  if (judged != NodeEvent::kDeferred) {
    std::string jobid = n.cluster && !pre ? std::to_string(n.cluster) + ".0" : "";
    if (!pre) Jobstate(run, i, "POST_SCRIPT_TERMINATED", jobid);
    Jobstate(
        run, i,
        std::string(pre ? "PRE" : "POST") + (code == 0 ? "_SCRIPT_SUCCESS" : "_SCRIPT_FAILURE"),
        jobid);
    if (pre) n.pre_return = code;
    if (judged == NodeEvent::kPreSkipped) {
      Log(run, "Node " + node.name + " skipped by its PRE script (PRE_SKIP " +
                   std::to_string(code) + ")");
    } else if (pre && code != 0) {
      n.code = kReturnPreFailed;
      n.note = "PRE script failed with " + std::to_string(code);
    } else if (code != 0) {
      n.note = "POST script failed with " + std::to_string(code);
    }
  }
  Step(run, i, in);
}

// DEFER: the script that asked for it runs again after its delay; the node keeps its place.
void Dags::RunLater(Run& run, size_t i) {
  bool pre = run.nodes[i].mark.state == NodeState::kPre;
  const auto& node = run.dag.nodes[i];
  const dag::Script& script = pre ? *node.pre : *node.post;
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  timer->expires_after(std::chrono::seconds(script.defer_seconds));
  ++run.deferred;
  Log(run, "Deferring it for " + std::to_string(script.defer_seconds) + " s (DEFER " +
               std::to_string(*script.defer_status) + ")");
  timer->async_wait([this, timer, id = run.id, i, pre](auto ec) {
    auto it = runs_.find(id);
    if (it == runs_.end()) return;
    --it->second->deferred;
    if (ec) return;
    RunScript(*it->second, i, pre);
  });
}

// All of a node's job's procs have ended (or it never got one).
void Dags::JobEnded(Run& run, size_t i) {
  auto& n = run.nodes[i];
  const auto& node = run.dag.nodes[i];
  if (n.cluster != 0) {
    n.job_ok = true;
    n.code = 0;
    if (!queue_.FindCluster(n.cluster)) {
      n.job_ok = false;
      n.code = 1;
      n.note = "its job " + std::to_string(n.cluster) + " left the queue without a result";
    }
    for (const Job* job : ClusterJobs(queue_, n.cluster)) {
      const Job& j = *job;
      bool by_signal = j.ad.EvaluateBool("ExitBySignal").value_or(false);
      int code = by_signal ? -static_cast<int>(j.ad.EvaluateInt("ExitSignal").value_or(0))
                           : static_cast<int>(j.ad.EvaluateInt("ExitCode").value_or(0));
      if (j.status == kRemoved) {
        n.job_ok = false;
        n.note = "job " + JobIdString(j.key) + " was removed";
        if (code == 0) code = 1;
      } else if (by_signal || code != 0) {
        n.job_ok = false;
        n.note = "job " + JobIdString(j.key) + (by_signal ? " ended by signal " : " exited with ") +
                 std::to_string(by_signal ? -code : code);
      }
      if (!n.job_ok && n.code == 0) n.code = code;
    }
  }
  Log(run, "Node " + node.name + " job " + (n.cluster ? std::to_string(n.cluster) : "-") +
               (n.job_ok ? " completed" : " failed: " + n.note));
  if (n.code != kReturnSubmitFailed)
    Jobstate(run, i, n.job_ok ? "JOB_SUCCESS" : "JOB_FAILURE", std::to_string(n.code));
  Step(run, i, {.event = NodeEvent::kJobEnded, .ok = n.job_ok, .code = n.code});
}

// The node's record (dag/node_machine.h), in the transaction that retires its jobs.
void Dags::Record(Run& run, size_t i) {
  const auto& n = run.nodes[i];
  queue_.SetDagNode(run.id, run.dag.nodes[i].name,
                    dag::EncodeNodeRecord({n.mark.state, n.mark.attempts, n.cluster, n.code}));
  hooks_.commit_soon();
}

void Dags::RetireNodeJobs(Run& run, size_t i) {
  int cluster = run.nodes[i].cluster;
  for (Job* j : ClusterJobs(queue_, cluster)) {
    if (Ended(*j)) hooks_.retire(*j);
  }
}

bool Dags::KeepsForNode(const Job& job) const {
  auto id = job.ad.EvaluateInt("DAGManJobId");
  if (!id) return false;
  auto it = runs_.find(static_cast<int>(*id));
  if (it == runs_.end()) return false;
  auto name = job.ad.EvaluateString("DAGNodeName");
  auto n = name ? it->second->dag.by_name.find(*name) : it->second->dag.by_name.end();
  if (n == it->second->dag.by_name.end()) return false;
  const auto& node = it->second->nodes[n->second];
  return node.mark.state == NodeState::kSubmitted && node.cluster == job.key.cluster;
}

namespace {

// The jobstate log's name for a node job's change of status, or nullptr.
const char* JobstateEvent(int status, int last) {
  switch (status) {
    case kRunning:
      return last == kSuspended ? "JOB_UNSUSPENDED" : "EXECUTE";
    case kIdle:
      return last == kHeld ? "JOB_RELEASED" : last == kRunning ? "JOB_EVICTED" : nullptr;
    case kHeld:
      return "JOB_HELD";
    case kSuspended:
      return "JOB_SUSPENDED";
    case kCompleted:
      return "JOB_TERMINATED";
    case kRemoved:
      return "JOB_ABORTED";
    default:
      return nullptr;
  }
}

}  // namespace

void Dags::OnStatus(Job& job, bool leaving) {
  if (auto parent = job.ad.EvaluateInt("DAGManJobId"); parent && !leaving) {
    auto it = runs_.find(static_cast<int>(*parent));
    if (it != runs_.end() && it->second->jobstate) {
      Run& run = *it->second;
      auto name = job.ad.EvaluateString("DAGNodeName");
      auto n = name ? run.dag.by_name.find(*name) : run.dag.by_name.end();
      int last = static_cast<int>(job.ad.EvaluateInt("LastJobStatus").value_or(kIdle));
      const char* event = JobstateEvent(job.status, last);
      if (n != run.dag.by_name.end() && event && run.nodes[n->second].cluster == job.key.cluster)
        Jobstate(run, n->second, event, JobIdString(job.key));
    }
  }
  if (auto it = runs_.find(job.key.cluster);
      job.universe == kUniverseScheduler && it != runs_.end()) {
    if (job.status != kRemoved && !leaving) {
      if (job.status == kIdle) {
        // Released: it goes on where it was.
        boost::asio::post(io_, [this, key = job.key] {
          if (Job* j = queue_.Find(key); j && j->status == kIdle) (void)queue_.MarkRunning(*j);
          DriveSoon(key.cluster);
        });
      }
      return;
    }
    // After the action that removed it is done with its list of jobs. A sub-DAG's parent hears
    // of it below, as of any node's job.
    boost::asio::post(io_, [this, id = job.key.cluster] {
      auto found = runs_.find(id);
      if (found != runs_.end()) Removed(*found->second);
    });
  }
  if (job.status != kCompleted && job.status != kRemoved) return;
  auto id = job.ad.EvaluateInt("DAGManJobId");
  auto it = id ? runs_.find(static_cast<int>(*id)) : runs_.end();
  if (it == runs_.end()) return;
  auto name = job.ad.EvaluateString("DAGNodeName");
  auto n = name ? it->second->dag.by_name.find(*name) : it->second->dag.by_name.end();
  if (n == it->second->dag.by_name.end()) return;
  it->second->check.insert(n->second);
  DriveSoon(it->first);
}

void Dags::Abort(Run& run, int code, const std::string& why) {
  Log(run, "Aborting the DAG: " + why);
  run.aborted = true;
  run.exit_code = code;
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    auto& n = run.nodes[i];
    if (n.pid > 0) ::kill(n.pid, SIGKILL);
    if (n.mark.state != NodeState::kSubmitted || n.cluster == 0) continue;
    for (Job* j : ClusterJobs(queue_, n.cluster)) {
      if (!Ended(*j)) hooks_.remove(*j, "the DAG was aborted: " + why);
    }
  }
  run.ready.clear();
  DriveSoon(run.id);
}

// Nothing runs and nothing can start: the FINAL node, then the DAG's end.
void Dags::Finish(Run& run) {
  if (run.dag.final_node && !run.final_started) {
    run.final_started = true;
    size_t f = *run.dag.final_node;
    if (run.nodes[f].mark.state == NodeState::kWaiting) {
      Log(run, "Starting the FINAL node " + run.dag.nodes[f].name);
      return Step(run, f, {.event = NodeEvent::kFinalDue});
    }
  }
  bool all_done = run.done == static_cast<int>(run.nodes.size());
  int exit_code = run.aborted ? run.exit_code : all_done ? 0 : 1;
  if (run.dag.final_node) {
    // With a FINAL node, the DAG succeeds when it does (DAGMan's rule, also after an abort).
    if (run.nodes[*run.dag.final_node].mark.state == NodeState::kDone)
      exit_code = 0;
    else if (!run.aborted)
      exit_code = 1;
  }
  std::string rescue;
  if (!all_done) {
    auto written = WriteRescue(run);
    if (written)
      rescue = *written;
    else
      Log(run, "Cannot write the rescue DAG: " + written.error().message());
  }
  Log(run, "DAG ended with exit code " + std::to_string(exit_code) + ": " +
               std::to_string(run.done) + " done, " + std::to_string(run.failed) + " failed" +
               (rescue.empty() ? "" : "; rescue DAG " + rescue));
  Publish(run);
  WriteNodeStatus(run, true);
  if (run.dag.dot && run.dag.dot->update) WriteDot(run);
  JobstateInternal(run, "DAGMAN_FINISHED " + std::to_string(exit_code));
  Job* j = queue_.Find({run.id, 0});
  int id = run.id;
  queue_.ForgetDag(id);
  runs_.erase(id);
  if (!j) return;
  ExecStatus st;
  st.kind = ExecStatus::Kind::kExited;
  st.code = exit_code;
  st.end = queue_.Now();
  st.start = static_cast<double>(j->ad.EvaluateInt("JobCurrentStartDate").value_or(0));
  if (st.start <= 0) st.start = st.end;
  queue_.MarkExited(*j, st);
  if (queue_.MarkCompleted(*j)) hooks_.retire(*j);
  hooks_.commit_soon();
}

// The DAG's job was removed: its nodes' jobs go too, and a rescue DAG says what was done.
void Dags::Removed(Run& run) {
  Log(run, "The DAG was removed");
  for (auto& n : run.nodes) {
    if (n.pid > 0) ::kill(n.pid, SIGKILL);
  }
  std::vector<Job*> jobs;
  for (auto& n : run.nodes) {
    if (n.mark.state != NodeState::kSubmitted || n.cluster == 0) continue;
    for (Job* j : ClusterJobs(queue_, n.cluster)) jobs.push_back(j);
  }
  if (run.done < static_cast<int>(run.nodes.size())) {
    if (auto w = WriteRescue(run); w) Log(run, "Rescue DAG " + *w);
  }
  WriteNodeStatus(run, true);
  if (run.dag.dot && run.dag.dot->update) WriteDot(run);
  int id = run.id;
  queue_.ForgetDag(id);
  auto keep = std::move(runs_[id]);
  runs_.erase(id);
  for (Job* j : jobs) {
    if (j->status == kCompleted || j->status == kRemoved) {
      hooks_.retire(*j);
    } else {
      hooks_.remove(*j, "its DAG " + std::to_string(id) + " was removed");
    }
  }
  for (auto it = scripts_.begin(); it != scripts_.end();) {
    it = it->second.first == id ? scripts_.erase(it) : std::next(it);
  }
  hooks_.commit_soon();
}

// DAGMan's rescue DAG: the next file.rescueNNN, with a DONE line per node done.
Result<std::string> Dags::WriteRescue(Run& run) {
  int number = 0;
  LatestRescue(run.file, &number);
  if (number >= 999) return Fail(ErrorCode::kConflict, "999 rescue DAGs exist already");
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".rescue%03d", number + 1);
  std::string path = run.file + suffix;
  // DAGMan's header: what it rescues, when, how many nodes, which failed (then why, Kite's).
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%m/%d/%Y %H:%M:%S UTC", &tm);
  size_t premarked = 0;
  std::string failed, why;
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    premarked += run.dag.nodes[i].done;
    if (run.nodes[i].mark.state != NodeState::kFailed) continue;
    failed += run.dag.nodes[i].name + ",";
    if (!run.nodes[i].note.empty())
      why += "#   " + run.dag.nodes[i].name + ": " + run.nodes[i].note + "\n";
  }
  std::string text =
      "# Rescue DAG file, created after running\n#   the " + run.file + " DAG file\n# Created " +
      when + "\n# Rescue DAG version: 2.0.1 (partial)\n#\n# Total number of Nodes: " +
      std::to_string(run.nodes.size()) + "\n# Nodes premarked DONE: " + std::to_string(premarked) +
      "\n# Nodes that failed: " + std::to_string(run.failed) + "\n#   " + failed + "<ENDLIST>\n" +
      (why.empty() ? "" : "# Why they failed:\n" + why) + "\n";
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    if (run.nodes[i].mark.state == NodeState::kDone && !run.dag.nodes[i].done)
      text += "DONE " + run.dag.nodes[i].name + "\n";
  }
  if (auto st = WriteFileAtomic(path, text); !st) return Fail(st.error());
  return path;
}

// The DAG's job ad carries DAGMan's counters (condor_q shows them).
void Dags::Publish(Run& run) {
  Job* j = queue_.Find({run.id, 0});
  if (!j) return;
  int ready = static_cast<int>(run.ready.size());
  int unready = static_cast<int>(run.nodes.size()) - run.done - run.failed - run.queued - ready -
                run.pre_running - run.post_running;
  auto set = [&](const char* name, int64_t v) {
    if (j->ad.EvaluateInt(name).value_or(-1) != v)
      queue_.SetAttr(*j, name, classad::MakeInteger(v));
  };
  set("DAG_NodesTotal", static_cast<int64_t>(run.nodes.size()));
  set("DAG_NodesDone", run.done);
  set("DAG_NodesFailed", run.failed);
  set("DAG_NodesQueued", run.queued);
  set("DAG_NodesPre", run.pre_running);
  set("DAG_NodesPost", run.post_running);
  set("DAG_NodesReady", ready);
  set("DAG_NodesUnready", std::max(0, unready));
  set("DAG_Status", DagStatus(run));
  if (run.out) std::fflush(run.out);
  run.status_changed = true;
  if (run.dag.dot && run.dag.dot->update &&
      std::chrono::steady_clock::now() - run.dot_written >= std::chrono::seconds(1))
    WriteDot(run);
  hooks_.commit_soon();
}

// DOT file [UPDATE] [DONT-OVERWRITE] [INCLUDE header]: the DAG as a Graphviz graph, each node
// labelled with its state; written when the DAG starts, and with UPDATE as it changes (at most
// once a second) and when it ends. DONT-OVERWRITE writes file.0, file.1, ... instead.
void Dags::WriteDot(Run& run) {
  if (!run.dag.dot) return;
  const auto& dot = *run.dag.dot;
  run.dot_written = std::chrono::steady_clock::now();
  std::string path = kite::JoinPath(run.dir, dot.file);
  if (!dot.overwrite) {
    while (FileExists(path + "." + std::to_string(run.dot_number))) ++run.dot_number;
    path += "." + std::to_string(run.dot_number++);
  }
  std::string header;
  if (!dot.include.empty()) {
    auto text = ReadFile(kite::JoinPath(run.dir, dot.include));
    if (text)
      header = *text;
    else
      Log(run, "Cannot read the DOT header file: " + text.error().message());
  }
  std::vector<std::string> states;
  for (const auto& n : run.nodes) states.push_back(StateName(n.mark.state));
  if (auto st = WriteFileAtomic(path, dag::DotText(run.dag, "DAG", header, &states)); !st)
    Log(run, "Cannot write the DOT file: " + st.error().message());
}

// DAGMan's node status file (its ClassAd form): one DagStatus ad, a NodeStatus ad per node, a
// StatusEnd ad; node and DAG states as DAGMan numbers them (0 not ready ... 5 done, 6 error, 7
// futile: not ready for good, the DAG being over).
void Dags::WriteNodeStatus(Run& run, bool last) {
  if (run.dag.node_status_file.empty()) return;
  auto code = [&](size_t i) {
    auto s = run.nodes[i].mark.state;
    return last && s == NodeState::kWaiting ? kFutile : static_cast<int>(s);
  };
  int counts[8] = {};
  for (size_t i = 0; i < run.nodes.size(); ++i) ++counts[code(i)];
  int idle = 0, held = 0;
  for (const auto& n : run.nodes) {
    if (n.mark.state != NodeState::kSubmitted) continue;
    for (const Job* j : ClusterJobs(queue_, n.cluster)) {
      idle += j->status == kIdle;
      held += j->status == kHeld;
    }
  }
  int dag_status = !last ? 3 : counts[5] == static_cast<int>(run.nodes.size()) ? 5 : 6;
  auto now = static_cast<long long>(queue_.Now());
  std::string text = "[\n  Type = \"DagStatus\";\n  DagFiles = { " + Quoted(BaseName(run.file)) +
                     " };\n  Timestamp = " + std::to_string(now) +
                     ";\n  DagStatus = " + std::to_string(dag_status) + ";\n";
  const std::pair<const char*, int> totals[] = {{"NodesTotal", static_cast<int>(run.nodes.size())},
                                                {"NodesDone", counts[5]},
                                                {"NodesPre", counts[2]},
                                                {"NodesQueued", counts[3]},
                                                {"NodesPost", counts[4]},
                                                {"NodesReady", counts[1]},
                                                {"NodesUnready", counts[0]},
                                                {"NodesFutile", counts[7]},
                                                {"NodesFailed", counts[6]},
                                                {"JobProcsHeld", held},
                                                {"JobProcsIdle", idle}};
  for (auto [name, n] : totals)
    text += "  " + std::string(name) + " = " + std::to_string(n) + ";\n";
  text += "]\n";
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    text += "[\n  Type = \"NodeStatus\";\n  Node = " + Quoted(run.dag.nodes[i].name) +
            ";\n  NodeStatus = " + std::to_string(code(i)) +
            ";\n  StatusDetails = " + Quoted(run.nodes[i].note) +
            ";\n  RetryCount = " + std::to_string(run.nodes[i].mark.attempts) + ";\n]\n";
  }
  text += "[\n  Type = \"StatusEnd\";\n  EndTime = " + std::to_string(now) +
          ";\n  NextUpdate = " + std::to_string(last ? 0 : now + run.dag.node_status_interval) +
          ";\n]\n";
  std::string path = kite::JoinPath(run.dir, run.dag.node_status_file);
  if (auto st = WriteFileAtomic(path, text); !st)
    Log(run, "Cannot write the node status file: " + st.error().message());
  run.status_changed = false;
}

void Dags::StatusTick(int id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  Run& run = *it->second;
  if (run.status_changed || run.dag.node_status_always) WriteNodeStatus(run, false);
  run.status_timer->expires_after(std::chrono::seconds(std::max(1, run.dag.node_status_interval)));
  run.status_timer->async_wait([this, id](auto ec) {
    if (!ec) StatusTick(id);
  });
}

std::vector<DagNodeView> Dags::Nodes(int cluster) const {
  std::vector<DagNodeView> out;
  auto it = runs_.find(cluster);
  if (it == runs_.end()) return out;
  const Run& run = *it->second;
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    const auto& n = run.nodes[i];
    out.push_back({run.dag.nodes[i].name, StateName(n.mark.state),
                   n.cluster ? std::to_string(n.cluster) : "", n.mark.attempts, n.note});
  }
  return out;
}

}  // namespace kite::agent
