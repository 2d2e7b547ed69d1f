#include "agent/usage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/files.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

TEST(Usage, ParsesAStatLineWhoseNameHoldsSpacesAndParentheses) {
  std::string line =
      "4242 (my (odd) prog) S 4200 4242 4242 0 -1 4194560 300 0 0 0 250 75 10 5 20 0 1 0 "
      "12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto st = ParseProcStat(line);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->pgrp, 4242);
  EXPECT_EQ(st->utime, 250u);
  EXPECT_EQ(st->stime, 75u);
  EXPECT_EQ(st->cutime, 10u);
  EXPECT_EQ(st->cstime, 5u);
  EXPECT_EQ(st->vsize, 104857600u);
  EXPECT_EQ(st->rss, 2560);
}

TEST(Usage, RefusesWhatIsNotAStatLine) {
  for (const char* bad : {"", "4242", "4242 (x)", "x (y) S 1 2 3", "4242 (x) S 1 two 3 4 5 6 7 8",
                          "4242 x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23",
                          "-1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"}) {
    EXPECT_FALSE(ParseProcStat(bad)) << bad;
  }
}

std::string Stat(int pid, int pgrp, int utime, int rss_pages) {
  return std::to_string(pid) + " (p) S 1 " + std::to_string(pgrp) + " " + std::to_string(pgrp) +
         " 0 -1 0 0 0 0 0 " + std::to_string(utime) + " 0 0 0 20 0 1 0 1 1048576 " +
         std::to_string(rss_pages) + " 0\n";
}

TEST(Usage, SumsAGroupsProcessesButNotItsLeaderAndSkipsOtherGroups) {
  testing::TempDir proc("usage");
  auto put = [&](int pid, const std::string& text) {
    ASSERT_TRUE(MakeDirs(proc.path() + "/" + std::to_string(pid)));
    ASSERT_TRUE(WriteFileAtomic(proc.path() + "/" + std::to_string(pid) + "/stat", text));
  };
  long tick = ::sysconf(_SC_CLK_TCK);
  long page_kib = ::sysconf(_SC_PAGESIZE) / 1024;
  put(100, Stat(100, 100, 1000 * tick, 1000));  // the wrapper: not counted
  put(101, Stat(101, 100, 2 * tick, 10));
  put(102, Stat(102, 100, 3 * tick, 20));
  put(200, Stat(200, 200, 7 * tick, 30));  // another group, not asked for
  put(300, "garbage");
  auto got = UsageOfGroups({100}, proc.path());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_DOUBLE_EQ(got[100].user_cpu, 5.0);
  EXPECT_EQ(got[100].rss_kib, 30 * page_kib);
  EXPECT_EQ(got[100].image_kib, 2048);
}

}  // namespace
}  // namespace kite::agent
