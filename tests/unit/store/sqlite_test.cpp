#include "store/sqlite.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fixtures/temp_dir.h"

namespace kite::store {
namespace {

using kite::testing::TempDir;

TEST(Sqlite, ExecPrepareStep) {
  TempDir tmp("sqlite");
  auto db = Db::Open(tmp / "t.db");
  ASSERT_TRUE(db) << db.error().ToString();
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (a INTEGER, b TEXT)"));
  auto ins = (*db)->Prepare("INSERT INTO t VALUES (?1, ?2)");
  ASSERT_TRUE(ins);
  ASSERT_TRUE(ins->Bind(1, 7).Bind(2, std::string("seven")).Run());
  auto sel = (*db)->Prepare("SELECT a, b FROM t");
  ASSERT_TRUE(sel);
  auto row = sel->Step();
  ASSERT_TRUE(row && *row);
  EXPECT_EQ(sel->Int(0), 7);
  EXPECT_EQ(sel->Text(1), "seven");
}

TEST(Sqlite, BadSqlIsAnError) {
  TempDir tmp("sqlite");
  auto db = Db::Open(tmp / "t.db");
  ASSERT_TRUE(db);
  auto st = (*db)->Prepare("SELEKT nonsense");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("syntax error"), std::string::npos);
}

TEST(Sqlite, TransactionRollsBackUnlessCommitted) {
  TempDir tmp("sqlite");
  auto db = Db::Open(tmp / "t.db");
  ASSERT_TRUE(db);
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (a INTEGER)"));
  {
    Transaction txn(**db);
    ASSERT_TRUE(txn.begun());
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (1)"));
  }
  {
    Transaction txn(**db);
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (2)"));
    ASSERT_TRUE(txn.Commit());
  }
  auto sel = (*db)->Prepare("SELECT group_concat(a) FROM t");
  ASSERT_TRUE(sel && *sel->Step());
  EXPECT_EQ(sel->Text(0), "2");
}

TEST(Sqlite, MigrateRefusesNewerSchema) {
  TempDir tmp("sqlite");
  auto path = tmp / "t.db";
  Migration two[] = {{1, "CREATE TABLE a (x)"}, {2, "CREATE TABLE b (x)"}};
  {
    auto db = Db::Open(path);
    ASSERT_TRUE(Migrate(**db, two, 2));
    EXPECT_EQ(*(*db)->UserVersion(), 2);
    ASSERT_TRUE(Migrate(**db, two, 2));  // idempotent
  }
  auto db = Db::Open(path);
  auto st = Migrate(**db, two, 1);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kConflict);
}

}  // namespace
}  // namespace kite::store
