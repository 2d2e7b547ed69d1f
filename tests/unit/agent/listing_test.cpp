// Where kite q -run and kite q -grid say a job is: the slot of a pool job (a glide-in's too), the
// site of a grid job, the site the broker chose for a brokered one, and a brokered job that has
// none yet said as such (never its unexpanded $$() text).
#include "agent/listing.h"

#include <gtest/gtest.h>

#include "classad/io.h"

namespace kite::agent {
namespace {

constexpr double kNow = 1'800'000'000;

classad::ClassAd Running(const std::string& extra) {
  auto ad = classad::ParseOldAd(
      "ClusterId = 7\nProcId = 0\nOwner = \"ann\"\nJobStatus = 2\n"
      "QDate = 1799999000\nJobCurrentStartDate = 1799999500\n" +
      extra);
  EXPECT_TRUE(ad) << extra;
  return std::move(*ad);
}

std::string LastColumn(const std::string& table) {
  auto lines = table.substr(table.find('\n') + 1);
  while (!lines.empty() && lines.back() == '\n') lines.pop_back();
  return lines.substr(lines.rfind(' ') + 1);
}

std::string Host(const classad::ClassAd& ad) {
  return LastColumn(FormatRunTable({ListedJob{{7, 0}, &ad, nullptr}}, kNow));
}

TEST(Listing, HostsArePoolSlotsGridSitesAndTheBrokersChoice) {
  EXPECT_EQ(Host(Running("JobUniverse = 5\nRemoteHost = \"slot2@glidein-21.0\"\n")),
            "slot2@glidein-21.0");
  EXPECT_EQ(Host(Running("JobUniverse = 12\n")), "local");
  EXPECT_EQ(Host(Running("JobUniverse = 9\nGridResource = \"kite gk.example.org:9443/slurm\"\n")),
            "gk.example.org:9443/slurm");
  auto brokered = "JobUniverse = 9\nGridResource = \"$$(GridResource)\"\n";
  EXPECT_EQ(Host(Running(std::string(brokered) +
                         "MATCH_GridResource = \"kite b.example.org:9443/fork\"\n")),
            "b.example.org:9443/fork");
  auto unmatched = Running(brokered);
  auto waiting = FormatRunTable({ListedJob{{7, 0}, &unmatched, nullptr}}, kNow);
  EXPECT_NE(waiting.find("(no site yet)"), std::string::npos) << waiting;
  EXPECT_EQ(waiting.find("$$"), std::string::npos) << waiting;
}

TEST(Listing, TheGridTableShowsTheChosenSiteOfABrokeredJob) {
  auto chosen = Running(
      "JobUniverse = 9\nGridResource = \"$$(GridResource)\"\n"
      "MATCH_GridResource = \"kite b.example.org:9443/slurm\"\nGridJobId = "
      "\"https://b/jobs/abc\"\n");
  auto table = FormatGridTable({ListedJob{{7, 0}, &chosen, nullptr}});
  EXPECT_NE(table.find("kite->slurm"), std::string::npos) << table;
  EXPECT_NE(table.find("b.example.org:9443"), std::string::npos) << table;
  EXPECT_EQ(table.find("idResource"), std::string::npos) << table;

  auto waiting = Running("JobUniverse = 9\nJobStatus = 1\nGridResource = \"$$(GridResource)\"\n");
  table = FormatGridTable({ListedJob{{7, 0}, &waiting, nullptr}});
  EXPECT_NE(table.find("broker"), std::string::npos) << table;
  EXPECT_NE(table.find("(no site yet)"), std::string::npos) << table;
  EXPECT_EQ(table.find("kite->"), std::string::npos) << table;
}

}  // namespace
}  // namespace kite::agent
