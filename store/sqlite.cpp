// SQLite wrapper.
#include "store/sqlite.h"

#include <string>

namespace kite::store {

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (s_) sqlite3_finalize(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, std::string_view v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

Result<bool> Stmt::Step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(s_);
  std::string msg = "sqlite step: ";
  msg += sqlite3_errmsg(db);
  sqlite3_reset(s_);
  return Fail(rc == SQLITE_BUSY ? ErrorCode::kUnavailable : ErrorCode::kIo, msg);
}

Status Stmt::Run() {
  auto r = Step();
  Reset();
  if (!r) return Fail(r.error());
  return {};
}

void Stmt::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

std::string_view Stmt::Text(int col) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  if (!p) return {};
  return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, const DbOptions& options) {
  sqlite3* raw = nullptr;
  int flags =
      (options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
  if (options.create && !options.read_only) flags |= SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = "open " + path + ": " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
    sqlite3_close(raw);
    return Fail(ErrorCode::kIo, msg);
  }
  std::unique_ptr<Db> db(new Db(raw, path));
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  if (options.read_only) return db;
  std::string pragmas;
  if (options.wal) pragmas += "PRAGMA journal_mode=WAL;";
  pragmas += options.synchronous_full ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=NORMAL;";
  pragmas += "PRAGMA foreign_keys=ON;";
  if (auto st = db->Exec(pragmas); !st) return Fail(st.error());
  return db;
}

Db::~Db() {
  sqlite3_close_v2(db_);
}

Error Db::LastError(std::string_view what) const {
  std::string msg(what);
  msg += ": ";
  msg += sqlite3_errmsg(db_);
  return Error(ErrorCode::kIo, msg);
}

Status Db::Exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = std::string("sqlite exec: ") + (err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return Fail(rc == SQLITE_BUSY ? ErrorCode::kUnavailable : ErrorCode::kIo, msg);
  }
  return {};
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) return Fail(LastError("prepare '" + std::string(sql) + "'"));
  return Stmt(s);
}

Result<int> Db::UserVersion() {
  auto st = Prepare("PRAGMA user_version");
  if (!st) return Fail(st.error());
  auto row = st->Step();
  if (!row) return Fail(row.error());
  return static_cast<int>(st->Int(0));
}

Status Db::SetUserVersion(int v) {
  return Exec("PRAGMA user_version=" + std::to_string(v));
}

Transaction::Transaction(Db& db) : db_(db) {
  begun_ = db_.Exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (begun_ && !done_) (void)db_.Exec("ROLLBACK");
}

Status Transaction::Commit() {
  if (!begun_) return begun_;
  auto st = db_.Exec("COMMIT");
  if (st) done_ = true;
  return st;
}

Status Migrate(Db& db, const Migration* migrations, size_t count) {
  auto current = db.UserVersion();
  if (!current) return Fail(current.error());
  int latest = count ? migrations[count - 1].version : 0;
  if (*current > latest) {
    return Fail(ErrorCode::kConflict, db.path() + " has schema version " +
                                          std::to_string(*current) + ", newer than this Kite (" +
                                          std::to_string(latest) + ")");
  }
  for (size_t i = 0; i < count; ++i) {
    if (migrations[i].version <= *current) continue;
    Transaction txn(db);
    if (!txn.begun()) return txn.begun();
    if (auto st = db.Exec(migrations[i].sql); !st) return st;
    if (auto st = db.SetUserVersion(migrations[i].version); !st) return st;
    if (auto st = txn.Commit(); !st) return st;
  }
  return {};
}

}  // namespace kite::store
