// The GASS protocol's pure parsers and the job table's access rules.
#include "gass/protocol.h"

#include <gtest/gtest.h>

#include "gass/job_table.h"

namespace kite::gass {
namespace {

TEST(Target, SplitsJobAndName) {
  auto t = ParseTarget("/jobs/job-1.0/stdout");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->job_id, "job-1.0");
  EXPECT_EQ(t->name, "stdout");
  auto nested = ParseTarget("/jobs/7/in/data_1.txt");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->name, "in/data_1.txt");
  EXPECT_EQ(MakeTarget("7", "in/data_1.txt"), "/jobs/7/in/data_1.txt");
}

TEST(Target, RefusesEverythingButTheLiteralForm) {
  for (const char* bad : {
           "",
           "/",
           "/jobs",
           "/jobs/",
           "/jobs/7",
           "/jobs/7/",
           "/jobs//stdout",
           "/jobs/7//x",
           "/jobs/7/../8/stdout",
           "/jobs/../jobs/7/stdout",
           "/jobs/7/./stdout",
           "/jobs/7/x/..",
           "/jobs/7/%2e%2e/secret",
           "/jobs/7/%2E%2E%2Fsecret",
           "/jobs/7/std%6Fut",
           "/jobs/7/stdout?x=1",
           "/jobs/7/stdout#f",
           "/jobs/7//etc/passwd",
           "/etc/passwd",
           "http://127.0.0.1/jobs/7/stdout",
           "jobs/7/stdout",
           "/JOBS/7/stdout",
           "/jobs/7/a b",
           "/jobs/7/a\\b",
           "/jobs/./stdout",
           "/jobs/../stdout",
           "/jobs/7/stdout/",
       }) {
    EXPECT_FALSE(ParseTarget(bad)) << "accepted '" << bad << "'";
  }
  EXPECT_FALSE(ParseTarget("/jobs/" + std::string(129, 'a') + "/x"));
  EXPECT_FALSE(ParseTarget("/jobs/7/" + std::string(256, 'a')));
  EXPECT_TRUE(ParseTarget("/jobs/" + std::string(128, 'a') + "/" + std::string(255, 'b')));
  EXPECT_FALSE(ParseTarget(std::string("/jobs/7/a\0b", 11)));
}

TEST(Range, ParsesTheThreeForms) {
  EXPECT_EQ(*ParseRange("bytes=0-99"), (RangeRequest{0, 99}));
  EXPECT_EQ(*ParseRange("bytes=100-"), (RangeRequest{100, std::nullopt}));
  EXPECT_EQ(*ParseRange("bytes=-5"), (RangeRequest{std::nullopt, 5}));
  EXPECT_EQ(*ParseRange(" Bytes = 1 - 2 "), (RangeRequest{1, 2}));
  for (const char* bad :
       {"", "bytes", "bytes=", "bytes=-", "bytes=5-4", "bytes=0-1,5-6", "items=0-1", "bytes=a-b",
        "bytes=-0x5", "bytes=+1-2", "bytes 0-1", "bytes=99999999999999999999-"}) {
    EXPECT_FALSE(ParseRange(bad)) << "accepted '" << bad << "'";
  }
}

TEST(Range, ResolvesAgainstTheFileSize) {
  EXPECT_EQ(ResolveRange({0, 99}, 1000), (ByteRange{0, 100}));
  EXPECT_EQ(ResolveRange({990, 2000}, 1000), (ByteRange{990, 10}));  // clipped to the file
  EXPECT_EQ(ResolveRange({10, std::nullopt}, 1000), (ByteRange{10, 990}));
  EXPECT_EQ(ResolveRange({std::nullopt, 5}, 1000), (ByteRange{995, 5}));
  EXPECT_EQ(ResolveRange({std::nullopt, 5000}, 1000), (ByteRange{0, 1000}));
  EXPECT_EQ(ResolveRange({1000, std::nullopt}, 1000), std::nullopt);  // 416
  EXPECT_EQ(ResolveRange({0, std::nullopt}, 0), std::nullopt);
  EXPECT_EQ(ResolveRange({std::nullopt, 0}, 1000), std::nullopt);
}

TEST(ContentRange, ParsesAndFormats) {
  EXPECT_EQ(*ParseContentRange("bytes 0-9/*"), (ContentRange{ByteRange{0, 10}, std::nullopt}));
  EXPECT_EQ(*ParseContentRange("bytes 5-9/10"), (ContentRange{ByteRange{5, 5}, 10}));
  EXPECT_EQ(*ParseContentRange("bytes */42"), (ContentRange{std::nullopt, 42}));
  for (const char* bad : {"", "bytes", "bytes */*", "bytes 9-5/*", "bytes 0-9/5", "bytes 0-9",
                          "bytes=0-9/*", "bits 0-9/*", "bytes -9/*", "bytes 0-/*"}) {
    EXPECT_FALSE(ParseContentRange(bad)) << "accepted '" << bad << "'";
  }
  EXPECT_EQ(FormatContentRange(ByteRange{5, 5}, 10), "bytes 5-9/10");
  EXPECT_EQ(FormatContentRange(ByteRange{0, 1}, std::nullopt), "bytes 0-0/*");
  EXPECT_EQ(FormatContentRange(std::nullopt, 7), "bytes */7");
}

TEST(Decimal, IsStrictAndBounded) {
  EXPECT_EQ(ParseDecimal("0"), 0u);
  EXPECT_EQ(ParseDecimal("9223372036854775806"), 9223372036854775806u);
  EXPECT_EQ(ParseDecimal("9223372036854775807"), std::nullopt);  // kMaxOffset itself
  EXPECT_EQ(ParseDecimal("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseDecimal("-1"), std::nullopt);
  EXPECT_EQ(ParseDecimal(" 1"), std::nullopt);
  EXPECT_EQ(ParseDecimal(""), std::nullopt);
}

TEST(JobTableTest, ResolvesOnlyTheOwnersRegisteredNames) {
  JobTable t;
  ASSERT_TRUE(
      t.Add("7", "/O=Grid/CN=Jane", {{"exe", "/home/jane/a.out"}}, {{"stdout", "/home/jane/out"}}));
  auto ok = t.Resolve("/O=Grid/CN=Jane", {"7", "exe"}, Access::kRead);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->path, "/home/jane/a.out");
  EXPECT_TRUE(ok->root.empty());
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Bob", {"7", "exe"}, Access::kRead).error().code(),
            ErrorCode::kAuthFailed);
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"8", "exe"}, Access::kRead).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"7", "exe"}, Access::kWrite).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"7", "stdout"}, Access::kRead).error().code(),
            ErrorCode::kNotFound);
  EXPECT_TRUE(t.Resolve("/O=Grid/CN=Jane", {"7", "stdout"}, Access::kWrite));
  EXPECT_TRUE(t.Remove("7"));
  EXPECT_FALSE(t.Remove("7"));
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"7", "exe"}, Access::kRead).error().code(),
            ErrorCode::kNotFound);
}

TEST(JobTableTest, ATreeTakesNamesBeneathItForWritingOnly) {
  JobTable t;
  ASSERT_TRUE(t.Add("7", "/O=Grid/CN=Jane", {},
                    {{"output/d", "/home/jane/d", true},
                     {"output/d/sub", "/home/jane/other", true},
                     {"output/f", "/home/jane/f"}}));
  auto self = t.Resolve("/O=Grid/CN=Jane", {"7", "output/d"}, Access::kWrite);
  ASSERT_TRUE(self);
  EXPECT_EQ(self->path, "/home/jane/d");
  EXPECT_TRUE(self->root.empty());
  auto deep = t.Resolve("/O=Grid/CN=Jane", {"7", "output/d/a/b.txt"}, Access::kWrite);
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->path, "/home/jane/d/a/b.txt");
  EXPECT_EQ(deep->root, "/home/jane/d");
  EXPECT_EQ(deep->rel, "a/b.txt");
  // The longest tree wins.
  auto nested = t.Resolve("/O=Grid/CN=Jane", {"7", "output/d/sub/x"}, Access::kWrite);
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->root, "/home/jane/other");
  EXPECT_EQ(nested->rel, "x");
  // Not beneath a file that is no tree, not for reading, not beside a tree's name.
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"7", "output/f/x"}, Access::kWrite).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"7", "output/d/a"}, Access::kRead).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Jane", {"7", "output/dx"}, Access::kWrite).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(t.Resolve("/O=Grid/CN=Bob", {"7", "output/d/a"}, Access::kWrite).error().code(),
            ErrorCode::kAuthFailed);
}

TEST(JobTableTest, RefusesBadRegistrationsAndKeepsTheOldOne) {
  JobTable t;
  ASSERT_TRUE(t.Add("7", "/CN=J", {{"exe", "/a"}}, {}));
  for (const auto& path : {"relative/x", "/a/../etc/passwd", "/a/./b", "/a//b", "/a/", "/"}) {
    EXPECT_FALSE(t.Add("7", "/CN=J", {{"exe", path}}, {})) << path;
  }
  EXPECT_FALSE(t.Add("7", "/CN=J", {{"../exe", "/a"}}, {}));
  EXPECT_FALSE(t.Add("7", "/CN=J", {{"exe", "/a"}, {"exe", "/b"}}, {}));
  EXPECT_FALSE(t.Add("a/b", "/CN=J", {}, {}));
  EXPECT_FALSE(t.Add("7", "", {}, {}));
  auto still = t.Resolve("/CN=J", {"7", "exe"}, Access::kRead);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->path, "/a");
}

}  // namespace
}  // namespace kite::gass
