// The ClassAd container: insertion, replacement, removal, order, typed helpers, size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "classad/classad.h"
#include "test_util.h"

namespace kite::classad {
namespace {

std::vector<std::string> Names(const ClassAd& ad) {
  std::vector<std::string> out;
  for (const auto& attr : ad) out.emplace_back(attr.name());
  return out;
}

TEST(ClassAd, InsertAssignLookupCaseInsensitively) {
  ClassAd ad;
  ad.Assign("ClusterId", 12);
  ad.Assign("Owner", "alice");
  ad.Assign("Rate", 2.5);
  ad.Assign("Done", false);
  ASSERT_TRUE(ad.InsertText("Next", "clusterid + 1").has_value());
  EXPECT_EQ(ad.EvaluateInt("CLUSTERID"), 12);
  EXPECT_EQ(ad.EvaluateInt("next"), 13);
  EXPECT_EQ(ad.EvaluateString("owner"), "alice");
  EXPECT_EQ(ad.EvaluateReal("Rate"), 2.5);
  EXPECT_EQ(ad.EvaluateBool("Done"), false);
  EXPECT_EQ(ad.EvaluateInt("Owner"), std::nullopt);  // wrong type
  EXPECT_EQ(ad.EvaluateInt("Missing"), std::nullopt);
  EXPECT_EQ(ad.Lookup("nosuch"), nullptr);
  EXPECT_EQ(Names(ad), (std::vector<std::string>{"ClusterId", "Owner", "Rate", "Done", "Next"}));
}

TEST(ClassAd, ReplaceKeepsPositionAndRemoveWorks) {
  ClassAd ad;
  ad.Assign("a", 1);
  ad.Assign("b", 2);
  ad.Assign("c", 3);
  ad.Assign("B", 20);
  EXPECT_EQ(Names(ad), (std::vector<std::string>{"a", "B", "c"}));
  EXPECT_EQ(ad.EvaluateInt("b"), 20);
  EXPECT_TRUE(ad.Remove("A"));
  EXPECT_FALSE(ad.Remove("a"));
  EXPECT_FALSE(ad.Remove("never-seen-name"));
  EXPECT_EQ(Names(ad), (std::vector<std::string>{"B", "c"}));
}

TEST(ClassAd, InsertTextRejectsBadExpressionAndKeepsAd) {
  ClassAd ad;
  ad.Assign("x", 1);
  auto st = ad.InsertText("x", "1 +");
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().message(), "x: unexpected end of expression at column 4");
  EXPECT_EQ(ad.EvaluateInt("x"), 1);
}

TEST(ClassAd, LargeAdsUseTheIndexCorrectly) {
  ClassAd ad;
  for (int i = 0; i < 300; ++i) ad.Assign("Attr" + std::to_string(i), i);
  for (int i = 0; i < 300; i += 7) {
    EXPECT_EQ(ad.EvaluateInt("ATTR" + std::to_string(i)), i);
  }
  for (int i = 0; i < 300; i += 2) ASSERT_TRUE(ad.Remove("attr" + std::to_string(i)));
  EXPECT_EQ(ad.size(), 150u);
  EXPECT_EQ(ad.EvaluateInt("Attr1"), 1);
  EXPECT_EQ(ad.EvaluateInt("Attr2"), std::nullopt);
  ClassAd copy = ad;
  copy.Assign("Attr1", 100);
  EXPECT_EQ(copy.EvaluateInt("attr1"), 100);
  EXPECT_EQ(ad.EvaluateInt("attr1"), 1);
  EXPECT_EQ(copy.EvaluateInt("attr299"), 299);
}

TEST(ClassAd, SmallProcAdIsCompact) {
  ClassAd ad;
  ad.Assign("ProcId", 4711);
  ad.Assign("JobStatus", 1);
  ad.Assign("EnteredCurrentStatus", int64_t{1700000000});
  ad.Assign("Args", "--n 4711");
  ad.Assign("GridJobId", "kite host:1/4711");
  // The ad itself (object + attribute vector); literal nodes are counted by the benchmark.
  EXPECT_LE(ad.MemoryFootprint(), 48u + 6 * 24u);
}

}  // namespace
}  // namespace kite::classad
