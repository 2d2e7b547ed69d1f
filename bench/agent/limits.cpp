// The machine's own limits, measured in the same run as Kite's figures so they can be compared:
// raw SQLite inserts (one transaction, WAL, synchronous=FULL) and posix_spawn + wait of /bin/true.
// Prints one JSON object.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/sqlite.h"

extern char** environ;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 100,000 rows of ~500 bytes in one transaction, the shape of a queue write.
double SqliteRowsPerSecond(const std::string& dir) {
  std::string path = dir + "/limits.db";
  std::remove(path.c_str());
  auto db = kite::store::Db::Open(path);
  if (!db) return 0;
  (void)(*db)->Exec("CREATE TABLE t (a INTEGER, b INTEGER, ad TEXT)");
  auto ins = (*db)->Prepare("INSERT INTO t VALUES (?1, ?2, ?3)");
  std::string ad(500, 'x');
  const int n = 100000;
  auto t0 = std::chrono::steady_clock::now();
  {
    kite::store::Transaction txn(**db);
    for (int i = 0; i < n; ++i) (void)ins->Bind(1, i).Bind(2, i).Bind(3, ad).Run();
    (void)txn.Commit();
  }
  double s = Seconds(t0);
  std::remove(path.c_str());
  return n / s;
}

double SpawnsPerSecond() {
  const int n = 2000;
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    pid_t pid;
    if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) return 0;
    int st;
    waitpid(pid, &st, 0);
  }
  return n / Seconds(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp";
  std::printf("{\"sqlite_rows_per_s\": %.0f, \"posix_spawn_per_s\": %.0f}\n",
              SqliteRowsPerSecond(dir), SpawnsPerSecond());
  return 0;
}
