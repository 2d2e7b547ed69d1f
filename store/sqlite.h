// A thin RAII wrapper over SQLite's C API: a connection, prepared statements, transactions.
//
// Not thread-safe: one Db belongs to one thread (the owner's strand or event loop).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite::store {

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Parameters are numbered from 1, as in SQLite.
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Stmt& Bind(int i, double v);
  // The text is copied (SQLITE_TRANSIENT): callers may pass temporaries.
  Stmt& Bind(int i, std::string_view v);
  Stmt& BindNull(int i);

  // Advances: true when a row is available, false when done.
  Result<bool> Step();
  // Runs to completion (for statements without rows) and resets.
  Status Run();
  void Reset();

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  double Real(int col) const { return sqlite3_column_double(s_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string_view Text(int col) const;

 private:
  sqlite3_stmt* s_ = nullptr;
};

struct DbOptions {
  bool wal = true;               // journal_mode=WAL
  bool synchronous_full = true;  // synchronous=FULL: a commit survives power loss
  int busy_timeout_ms = 5000;
  bool create = true;  // create the file when missing
  // Open for reading only (SQLITE_OPEN_READONLY; the other options are ignored): no pragma is
  // set and nothing written, so a reader beside the agent (kite history without an agent, or
  // while one runs) changes neither the file nor its journal mode. WAL lets it read while the
  // agent writes.
  bool read_only = false;
};

class Db {
 public:
  static Result<std::unique_ptr<Db>> Open(const std::string& path, const DbOptions& options = {});
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements that return no rows.
  Status Exec(std::string_view sql);
  Result<Stmt> Prepare(std::string_view sql);

  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  sqlite3* raw() { return db_; }
  const std::string& path() const { return path_; }

  // The schema version kept in PRAGMA user_version.
  Result<int> UserVersion();
  Status SetUserVersion(int v);

  // An error from the connection's last failure, prefixed by `what`.
  Error LastError(std::string_view what) const;

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// BEGIN IMMEDIATE on construction; rolls back on destruction unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // The status of BEGIN: check before using the transaction.
  const Status& begun() const { return begun_; }
  Status Commit();

 private:
  Db& db_;
  Status begun_;
  bool done_ = false;
};

// A schema step: version N is reached by running `sql` on version N-1.
struct Migration {
  int version;
  const char* sql;
};

// Brings the database to the last migration's version, each step in its own transaction.
// Fails (changing nothing) when the file is newer than this program knows.
Status Migrate(Db& db, const Migration* migrations, size_t count);

}  // namespace kite::store
