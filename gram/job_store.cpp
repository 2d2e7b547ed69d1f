// SQL for the job manager's tables. Never renumber or edit a shipped migration: add one.
#include "gram/job_store.h"

namespace kite::gram {
namespace {

constexpr store::Migration kMigrations[] = {
    {1,
     "CREATE TABLE jobs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, state INTEGER NOT NULL,"
     "  seq INTEGER NOT NULL, description TEXT NOT NULL, gass_url TEXT NOT NULL,"
     "  delegation_id TEXT NOT NULL, batch_id TEXT NOT NULL, failure INTEGER NOT NULL,"
     "  failure_message TEXT NOT NULL, exit_signaled INTEGER, exit_code INTEGER,"
     "  stdout_offset INTEGER NOT NULL, stderr_offset INTEGER NOT NULL, created REAL NOT NULL,"
     "  commit_deadline REAL NOT NULL, cancel_requested INTEGER NOT NULL) WITHOUT ROWID;"
     "CREATE TABLE requests (owner TEXT NOT NULL, request_id TEXT NOT NULL, op TEXT NOT NULL,"
     "  target TEXT NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL, created REAL NOT NULL,"
     "  PRIMARY KEY (owner, request_id)) WITHOUT ROWID;"
     "CREATE INDEX requests_target ON requests (target);"
     "CREATE TABLE delegations (id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
     "  not_after REAL NOT NULL) WITHOUT ROWID;"},
    {2, "ALTER TABLE jobs ADD COLUMN signal_run INTEGER NOT NULL DEFAULT 0;"},
};

constexpr char kPutJob[] =
    "INSERT OR REPLACE INTO jobs (id, owner, state, seq, description, gass_url, delegation_id,"
    " batch_id, failure, failure_message, exit_signaled, exit_code, stdout_offset, stderr_offset,"
    " created, commit_deadline, cancel_requested, signal_run)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";
constexpr char kDelJob[] = "DELETE FROM jobs WHERE id = ?1";
constexpr char kDelJobRequests[] = "DELETE FROM requests WHERE target = ?1";
constexpr char kGetJobs[] =
    "SELECT id, owner, state, seq, description, gass_url, delegation_id, batch_id, failure,"
    " failure_message, exit_signaled, exit_code, stdout_offset, stderr_offset, created,"
    " commit_deadline, cancel_requested, signal_run FROM jobs";
constexpr char kGetRequest[] =
    "SELECT op, target, status, body FROM requests WHERE owner = ?1 AND request_id = ?2";
constexpr char kPutRequest[] =
    "INSERT OR REPLACE INTO requests (owner, request_id, op, target, status, body, created)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
constexpr char kPruneRequests[] =
    "DELETE FROM requests WHERE created < ?1 AND target NOT IN (SELECT id FROM jobs)";
constexpr char kPutDelegation[] =
    "INSERT OR REPLACE INTO delegations (id, owner, not_after) VALUES (?1, ?2, ?3)";
constexpr char kGetDelegations[] = "SELECT id, owner, not_after FROM delegations";

}  // namespace

Result<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  auto db = store::Db::Open(path);
  if (!db) return Fail(db.error());
  if (auto st = store::Migrate(**db, kMigrations, std::size(kMigrations)); !st) {
    return Fail(st.error());
  }
  std::unique_ptr<JobStore> s(new JobStore(std::move(*db)));
  if (auto st = s->PrepareAll(); !st) return Fail(st.error());
  return s;
}

Status JobStore::PrepareAll() {
  struct {
    store::Stmt* stmt;
    const char* sql;
  } all[] = {{&put_job_, kPutJob},
             {&del_job_, kDelJob},
             {&del_job_requests_, kDelJobRequests},
             {&get_jobs_, kGetJobs},
             {&get_request_, kGetRequest},
             {&put_request_, kPutRequest},
             {&prune_requests_, kPruneRequests},
             {&put_delegation_, kPutDelegation},
             {&get_delegations_, kGetDelegations}};
  for (auto& s : all) {
    auto st = db_->Prepare(s.sql);
    if (!st) return Fail(st.error());
    *s.stmt = std::move(*st);
  }
  return {};
}

Status JobStore::PutJob(const JobRecord& j) {
  auto& s = put_job_;
  s.Bind(1, j.id).Bind(2, j.owner).Bind(3, static_cast<int>(j.state)).Bind(4, j.seq);
  s.Bind(5, ToJson(j.desc)).Bind(6, j.gass_url).Bind(7, j.delegation_id).Bind(8, j.batch_id);
  s.Bind(9, static_cast<int>(j.failure)).Bind(10, j.failure_message);
  if (j.exit) {
    s.Bind(11, j.exit->signaled ? 1 : 0).Bind(12, j.exit->code);
  } else {
    s.BindNull(11).BindNull(12);
  }
  s.Bind(13, j.stdout_offset).Bind(14, j.stderr_offset).Bind(15, j.created);
  s.Bind(16, j.commit_deadline).Bind(17, j.cancel_requested ? 1 : 0).Bind(18, j.signal_run);
  return s.Run();
}

Status JobStore::DeleteJob(const std::string& id) {
  if (auto st = del_job_.Bind(1, id).Run(); !st) return st;
  return del_job_requests_.Bind(1, id).Run();
}

Result<std::vector<JobRecord>> JobStore::LoadJobs() {
  std::vector<JobRecord> out;
  auto& s = get_jobs_;
  while (true) {
    auto row = s.Step();
    if (!row) {
      s.Reset();
      return Fail(row.error());
    }
    if (!*row) break;
    JobRecord j;
    j.id = s.Text(0);
    j.owner = s.Text(1);
    j.state = static_cast<JobState>(s.Int(2));
    j.seq = s.Int(3);
    auto desc = ParseJobDescription(s.Text(4));
    if (!desc) {
      s.Reset();
      return Fail(desc.error().Wrap("job " + j.id + " in the table"));
    }
    j.desc = std::move(*desc);
    j.gass_url = s.Text(5);
    j.delegation_id = s.Text(6);
    j.batch_id = s.Text(7);
    j.failure = static_cast<FailureCode>(s.Int(8));
    j.failure_message = s.Text(9);
    if (!s.IsNull(10)) j.exit = ExitInfo{s.Int(10) != 0, static_cast<int>(s.Int(11))};
    j.stdout_offset = s.Int(12);
    j.stderr_offset = s.Int(13);
    j.created = s.Real(14);
    j.commit_deadline = s.Real(15);
    j.cancel_requested = s.Int(16) != 0;
    j.signal_run = s.Int(17);
    out.push_back(std::move(j));
  }
  s.Reset();
  return out;
}

Result<std::optional<StoredReply>> JobStore::FindRequest(const std::string& owner,
                                                         const std::string& request_id) {
  auto& s = get_request_;
  s.Bind(1, owner).Bind(2, request_id);
  auto row = s.Step();
  std::optional<StoredReply> out;
  if (row && *row) {
    out = StoredReply{std::string(s.Text(0)), std::string(s.Text(1)),
                      static_cast<unsigned>(s.Int(2)), std::string(s.Text(3))};
  }
  s.Reset();
  if (!row) return Fail(row.error());
  return out;
}

Status JobStore::PutRequest(const std::string& owner, const std::string& request_id,
                            const StoredReply& r, double now) {
  auto& s = put_request_;
  s.Bind(1, owner).Bind(2, request_id).Bind(3, r.op).Bind(4, r.target);
  s.Bind(5, static_cast<int64_t>(r.status)).Bind(6, r.body).Bind(7, now);
  return s.Run();
}

Status JobStore::PruneRequests(double before) {
  return prune_requests_.Bind(1, before).Run();
}

Status JobStore::PutDelegation(const DelegationRecord& d) {
  return put_delegation_.Bind(1, d.id).Bind(2, d.owner).Bind(3, d.not_after).Run();
}

Result<std::vector<DelegationRecord>> JobStore::LoadDelegations() {
  std::vector<DelegationRecord> out;
  auto& s = get_delegations_;
  while (true) {
    auto row = s.Step();
    if (!row) {
      s.Reset();
      return Fail(row.error());
    }
    if (!*row) break;
    out.push_back({std::string(s.Text(0)), std::string(s.Text(1)), s.Real(2)});
  }
  s.Reset();
  return out;
}

}  // namespace kite::gram
