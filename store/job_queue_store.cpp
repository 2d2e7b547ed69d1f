// The agent's job queue schema and its reads and writes.
#include "store/job_queue_store.h"

#include <unistd.h>

#include <string>

namespace kite::store {
namespace {

// Never renumber or edit a migration that has shipped: add a new one.
constexpr Migration kMigrations[] = {
    {1,
     "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
     "INSERT INTO meta VALUES ('next_cluster', 1);"
     "CREATE TABLE clusters (cluster INTEGER PRIMARY KEY, ad TEXT NOT NULL);"
     "CREATE TABLE jobs (cluster INTEGER NOT NULL, proc INTEGER NOT NULL, ad TEXT NOT NULL,"
     "  PRIMARY KEY (cluster, proc)) WITHOUT ROWID;"
     "CREATE TABLE events (id INTEGER PRIMARY KEY, cluster INTEGER NOT NULL,"
     "  proc INTEGER NOT NULL, time REAL NOT NULL, code INTEGER NOT NULL, text TEXT NOT NULL);"
     "CREATE INDEX events_job ON events (cluster, proc);"
     "CREATE TABLE history (cluster INTEGER NOT NULL, proc INTEGER NOT NULL,"
     "  completion REAL NOT NULL, ad TEXT NOT NULL, PRIMARY KEY (cluster, proc)) WITHOUT ROWID;"},
    // What the agent's DAG runner must remember of each node beyond the node's job
    // (agent/dags.h): a result, a POST script still to run, the attempts made.
    {2,
     "CREATE TABLE dag_nodes (dag INTEGER NOT NULL, node TEXT NOT NULL, record TEXT NOT NULL,"
     "  PRIMARY KEY (dag, node)) WITHOUT ROWID;"},
};

constexpr char kPutCluster[] = "INSERT OR REPLACE INTO clusters (cluster, ad) VALUES (?1, ?2)";
constexpr char kDelCluster[] = "DELETE FROM clusters WHERE cluster = ?1";
constexpr char kPutJob[] = "INSERT OR REPLACE INTO jobs (cluster, proc, ad) VALUES (?1, ?2, ?3)";
constexpr char kDelJob[] = "DELETE FROM jobs WHERE cluster = ?1 AND proc = ?2";
constexpr char kPutEvent[] =
    "INSERT INTO events (cluster, proc, time, code, text) VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr char kPutHistory[] =
    "INSERT OR REPLACE INTO history (cluster, proc, completion, ad) VALUES (?1, ?2, ?3, ?4)";
constexpr char kGetEvents[] =
    "SELECT time, code, text FROM events WHERE cluster = ?1 AND proc = ?2 ORDER BY id";
constexpr char kPutDagNode[] =
    "INSERT OR REPLACE INTO dag_nodes (dag, node, record) VALUES (?1, ?2, ?3)";
constexpr char kDelDag[] = "DELETE FROM dag_nodes WHERE dag = ?1";
constexpr char kGetDag[] = "SELECT node, record FROM dag_nodes WHERE dag = ?1";
constexpr char kNextCluster[] = "SELECT value FROM meta WHERE key = 'next_cluster'";
constexpr char kSetNextCluster[] = "UPDATE meta SET value = ?1 WHERE key = 'next_cluster'";

}  // namespace

Result<std::unique_ptr<JobQueueStore>> JobQueueStore::Open(const std::string& path,
                                                           const DbOptions& options) {
  auto db = Db::Open(path, options);
  if (!db) return Fail(db.error());
  if (auto st = Migrate(**db, kMigrations, std::size(kMigrations)); !st) return Fail(st.error());
  std::unique_ptr<JobQueueStore> q(new JobQueueStore(std::move(*db)));
  if (auto st = q->PrepareAll(); !st) return Fail(st.error());
  return q;
}

Result<std::unique_ptr<JobQueueStore>> JobQueueStore::OpenReadOnly(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0)
    return Fail(ErrorCode::kNotFound, "no job queue at " + path + " (no agent has run there)");
  DbOptions options;
  options.read_only = true;
  auto db = Db::Open(path, options);
  if (!db) return Fail(db.error());
  auto version = (*db)->UserVersion();
  if (!version) return Fail(version.error());
  int latest = std::size(kMigrations) ? kMigrations[std::size(kMigrations) - 1].version : 0;
  if (*version != latest)
    return Fail(ErrorCode::kConflict, path + " has schema version " + std::to_string(*version) +
                                          "; this Kite reads version " + std::to_string(latest) +
                                          " (start the agent once to bring it up to date)");
  std::unique_ptr<JobQueueStore> q(new JobQueueStore(std::move(*db)));
  // The write statements are prepared too (preparing writes nothing); using them fails.
  if (auto st = q->PrepareAll(); !st) return Fail(st.error());
  return q;
}

Status JobQueueStore::PrepareAll() {
  struct {
    Stmt* stmt;
    const char* sql;
  } all[] = {{&put_cluster_, kPutCluster},
             {&del_cluster_, kDelCluster},
             {&put_job_, kPutJob},
             {&del_job_, kDelJob},
             {&put_event_, kPutEvent},
             {&put_history_, kPutHistory},
             {&get_events_, kGetEvents},
             {&next_cluster_, kNextCluster},
             {&set_next_cluster_, kSetNextCluster},
             {&put_dag_node_, kPutDagNode},
             {&del_dag_, kDelDag},
             {&get_dag_, kGetDag}};
  for (auto& s : all) {
    auto st = db_->Prepare(s.sql);
    if (!st) return Fail(st.error());
    *s.stmt = std::move(*st);
  }
  return {};
}

Status JobQueueStore::ReturnClusterId(int id) {
  bool own = !txn_;
  if (own) {
    if (auto st = Begin(); !st) return Fail(st.error());
  }
  auto row = next_cluster_.Step();
  int next = row && *row ? static_cast<int>(next_cluster_.Int(0)) : 0;
  next_cluster_.Reset();
  if (!row) {
    if (own) Rollback();
    return Fail(row.error());
  }
  if (next == id + 1) {
    if (auto st = set_next_cluster_.Bind(1, id).Run(); !st) {
      if (own) Rollback();
      return Fail(st.error());
    }
  }
  if (own) {
    if (auto st = Commit(); !st) return Fail(st.error());
  }
  return {};
}

Result<int> JobQueueStore::ReserveClusterId() {
  bool own = !txn_;
  if (own) {
    if (auto st = Begin(); !st) return Fail(st.error());
  }
  auto row = next_cluster_.Step();
  if (!row || !*row) {
    next_cluster_.Reset();
    if (own) Rollback();
    return Fail(row ? Error(ErrorCode::kInternal, "meta.next_cluster missing") : row.error());
  }
  int id = static_cast<int>(next_cluster_.Int(0));
  next_cluster_.Reset();
  if (auto st = set_next_cluster_.Bind(1, id + 1).Run(); !st) {
    if (own) Rollback();
    return Fail(st.error());
  }
  if (own) {
    if (auto st = Commit(); !st) return Fail(st.error());
  }
  return id;
}

Status JobQueueStore::Load(const std::function<void(int, std::string_view)>& on_cluster,
                           const std::function<void(JobKey, std::string_view)>& on_job) {
  auto cs = db_->Prepare("SELECT cluster, ad FROM clusters ORDER BY cluster");
  if (!cs) return Fail(cs.error());
  for (;;) {
    auto row = cs->Step();
    if (!row) return Fail(row.error());
    if (!*row) break;
    on_cluster(static_cast<int>(cs->Int(0)), cs->Text(1));
  }
  auto js = db_->Prepare("SELECT cluster, proc, ad FROM jobs ORDER BY cluster, proc");
  if (!js) return Fail(js.error());
  for (;;) {
    auto row = js->Step();
    if (!row) return Fail(row.error());
    if (!*row) break;
    on_job(JobKey{static_cast<int>(js->Int(0)), static_cast<int>(js->Int(1))}, js->Text(2));
  }
  return {};
}

Status JobQueueStore::Begin() {
  if (txn_) return Fail(ErrorCode::kInternal, "transaction already open");
  auto t = std::make_unique<Transaction>(*db_);
  if (!t->begun()) return t->begun();
  txn_ = std::move(t);
  return {};
}

Status JobQueueStore::Commit() {
  if (!txn_) return Fail(ErrorCode::kInternal, "no transaction open");
  auto st = txn_->Commit();
  txn_.reset();  // on failure, the destructor rolls back
  return st;
}

void JobQueueStore::Rollback() {
  txn_.reset();
}

Status JobQueueStore::PutCluster(int cluster, std::string_view ad) {
  return put_cluster_.Bind(1, cluster).Bind(2, ad).Run();
}
Status JobQueueStore::DeleteCluster(int cluster) {
  return del_cluster_.Bind(1, cluster).Run();
}
Status JobQueueStore::PutJob(JobKey job, std::string_view ad) {
  return put_job_.Bind(1, job.cluster).Bind(2, job.proc).Bind(3, ad).Run();
}
Status JobQueueStore::DeleteJob(JobKey job) {
  return del_job_.Bind(1, job.cluster).Bind(2, job.proc).Run();
}
Status JobQueueStore::AppendEvent(const EventRecord& e) {
  return put_event_.Bind(1, e.job.cluster)
      .Bind(2, e.job.proc)
      .Bind(3, e.time)
      .Bind(4, e.code)
      .Bind(5, e.text)
      .Run();
}
Status JobQueueStore::AppendHistory(const HistoryRecord& h) {
  return put_history_.Bind(1, h.job.cluster)
      .Bind(2, h.job.proc)
      .Bind(3, h.completion)
      .Bind(4, h.ad)
      .Run();
}

Status JobQueueStore::PutDagNode(int dag, std::string_view node, std::string_view record) {
  return put_dag_node_.Bind(1, dag).Bind(2, node).Bind(3, record).Run();
}
Status JobQueueStore::DeleteDag(int dag) {
  return del_dag_.Bind(1, dag).Run();
}
Status JobQueueStore::DagNodes(
    int dag, const std::function<void(std::string_view node, std::string_view record)>& each) {
  get_dag_.Bind(1, dag);
  for (;;) {
    auto row = get_dag_.Step();
    if (!row) {
      get_dag_.Reset();
      return Fail(row.error());
    }
    if (!*row) break;
    each(get_dag_.Text(0), get_dag_.Text(1));
  }
  get_dag_.Reset();
  return {};
}

Status JobQueueStore::TrimHistory(size_t keep) {
  // The events of a trimmed job go with it; a job still queued keeps its events.
  std::string k = std::to_string(keep);
  return db_->Exec(
      "CREATE TEMP TABLE IF NOT EXISTS trimmed (cluster INTEGER, proc INTEGER);"
      "DELETE FROM trimmed;"
      "INSERT INTO trimmed SELECT cluster, proc FROM history ORDER BY completion DESC, cluster "
      "DESC, proc DESC LIMIT -1 OFFSET " +
      k +
      ";"
      "DELETE FROM history WHERE (cluster, proc) IN (SELECT cluster, proc FROM trimmed);"
      "DELETE FROM events WHERE (cluster, proc) IN (SELECT cluster, proc FROM trimmed);");
}

Result<std::vector<EventRecord>> JobQueueStore::Events(JobKey job) {
  std::vector<EventRecord> out;
  get_events_.Bind(1, job.cluster).Bind(2, job.proc);
  for (;;) {
    auto row = get_events_.Step();
    if (!row) {
      get_events_.Reset();
      return Fail(row.error());
    }
    if (!*row) break;
    out.push_back(EventRecord{job, get_events_.Real(0), static_cast<int>(get_events_.Int(1)),
                              std::string(get_events_.Text(2))});
  }
  get_events_.Reset();
  return out;
}

Status JobQueueStore::History(int cluster, int proc, size_t limit,
                              const std::function<bool(const HistoryRecord&)>& each,
                              const HistoryRecord* after) {
  std::string sql = "SELECT cluster, proc, completion, ad FROM history WHERE 1";
  if (cluster >= 0) sql += proc >= 0 ? " AND cluster = ?1 AND proc = ?2" : " AND cluster = ?1";
  if (after) sql += " AND (completion, cluster, proc) < (?3, ?4, ?5)";
  sql += " ORDER BY completion DESC, cluster DESC, proc DESC";
  if (limit) sql += " LIMIT " + std::to_string(limit);
  auto st = db_->Prepare(sql);
  if (!st) return Fail(st.error());
  if (cluster >= 0) st->Bind(1, cluster);
  if (cluster >= 0 && proc >= 0) st->Bind(2, proc);
  if (after) st->Bind(3, after->completion).Bind(4, after->job.cluster).Bind(5, after->job.proc);
  for (;;) {
    auto row = st->Step();
    if (!row) return Fail(row.error());
    if (!*row) break;
    HistoryRecord h{JobKey{static_cast<int>(st->Int(0)), static_cast<int>(st->Int(1))}, st->Real(2),
                    std::string(st->Text(3))};
    if (!each(h)) break;
  }
  return {};
}

}  // namespace kite::store
