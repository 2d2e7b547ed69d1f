// Old syntax, new syntax and JSON, in and out, and round trips between them.
#include <gtest/gtest.h>

#include <string>

#include "classad/expr.h"
#include "classad/io.h"
#include "test_util.h"

namespace kite::classad {
namespace {

constexpr std::string_view kJobOld =
    "ClusterId = 12\n"
    "Owner = \"alice\"\n"
    "Rate = 0.5\n"
    "Done = false\n"
    "Nothing = undefined\n"
    "Requirements = TARGET.Memory >= 2048 && regexp(\"^x\", TARGET.Name)\n"
    "Tags = { \"a\", 2 }\n"
    "Nested = [ a = 1; b = \"x\" ]\n";

bool SameAd(const ClassAd& a, const ClassAd& b) {
  if (a.size() != b.size()) return false;
  for (const auto& attr : a) {
    const Expr* other = b.LookupOwn(attr.name());
    if (other == nullptr || !SameExpr(attr.expr(), *other)) return false;
  }
  return true;
}

TEST(ClassAdIo, OldSyntaxRoundTrip) {
  auto ad = ParseOldAd(kJobOld);
  ASSERT_TRUE(ad.has_value()) << ad.error().message();
  EXPECT_EQ(ToOldText(*ad), kJobOld);
  auto again = ParseOldAd(ToOldText(*ad));
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(SameAd(*ad, *again));
}

TEST(ClassAdIo, OldSyntaxSkipsBlankAndCommentLinesAndCarriageReturns) {
  auto ad = ParseOldAd("# a comment\r\n\r\nA = 1\r\n   \nB = \"x\"\r\n");
  ASSERT_TRUE(ad.has_value()) << ad.error().message();
  EXPECT_EQ(ToOldText(*ad), "A = 1\nB = \"x\"\n");
}

TEST(ClassAdIo, OldSyntaxKeepsUnknownEscapesAsText) {
  auto ad = ParseOldAd("Pattern = \"\\d+\\.txt\"\nPath = \"C:\\Temp\"\n");
  ASSERT_TRUE(ad.has_value()) << ad.error().message();
  EXPECT_EQ(ad->EvaluateString("Pattern"), "\\d+\\.txt");
  EXPECT_EQ(ad->EvaluateString("Path"), "C:\\Temp");
}

TEST(ClassAdIo, OldSyntaxErrorsNameTheLine) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"A = 1\nB 2\n", "line 2: expected '=' after attribute name at column 3"},
      {"A = 1\nB = (1\n", "line 2: expected ')' at column 7"},
      {"A = \"open\n", "line 1: unterminated string at column 5"},
      {"= 3\n", "line 1: expected an attribute name at column 1"},
      {"A = 1 2\n", "line 1: unexpected text after expression at column 7"},
  };
  for (const auto& [text, message] : cases) {
    auto ad = ParseOldAd(text);
    ASSERT_FALSE(ad.has_value()) << text;
    EXPECT_EQ(ad.error().message(), message);
  }
}

TEST(ClassAdIo, SeveralOldAds) {
  auto ads = ParseOldAds("A = 1\nB = 2\n\nA = 3\n\n\n");
  ASSERT_TRUE(ads.has_value()) << ads.error().message();
  ASSERT_EQ(ads->size(), 2u);
  EXPECT_EQ((*ads)[1].EvaluateInt("A"), 3);
}

TEST(ClassAdIo, NewSyntaxRoundTrip) {
  auto ad = ParseOldAd(kJobOld);
  ASSERT_TRUE(ad.has_value());
  std::string text = ToNewText(*ad);
  EXPECT_EQ(text.substr(0, 30), "[ ClusterId = 12; Owner = \"ali");
  auto back = ParseNewAd(text);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_TRUE(SameAd(*ad, *back));
  EXPECT_EQ(ToNewText(*back), text);
  auto multi = ParseNewAd("[\n  a = 1;\n  b = a + 1;\n]\n");
  ASSERT_TRUE(multi.has_value()) << multi.error().message();
  EXPECT_EQ(multi->EvaluateInt("b"), 2);
  EXPECT_FALSE(ParseNewAd("[ a = 1 ] junk").has_value());
  EXPECT_FALSE(ParseNewAd("a = 1").has_value());
}

TEST(ClassAdIo, JsonOutInCondorQForm) {
  auto ad = ParseOldAd(kJobOld);
  ASSERT_TRUE(ad.has_value());
  std::string json;
  AppendJson(json, *ad);
  EXPECT_EQ(json,
            "{\"ClusterId\":12,\"Owner\":\"alice\",\"Rate\":0.5,\"Done\":false,"
            "\"Nothing\":null,"
            "\"Requirements\":\"\\/Expr(TARGET.Memory >= 2048 && regexp(\\\"^x\\\", "
            "TARGET.Name))\\/\","
            "\"Tags\":[\"a\",2],\"Nested\":{\"a\":1,\"b\":\"x\"}}");
  std::string pretty;
  ClassAd small;
  small.Assign("A", 1);
  small.Assign("B", "x\ny");
  AppendJson(pretty, small, JsonStyle::kPretty);
  EXPECT_EQ(pretty, "{\n  \"A\": 1,\n  \"B\": \"x\\ny\"\n}");
}

TEST(ClassAdIo, JsonRoundTrip) {
  auto ad = ParseOldAd(kJobOld);
  ASSERT_TRUE(ad.has_value());
  std::string json;
  AppendJson(json, *ad);
  auto back = ParseJsonAd(json);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_TRUE(SameAd(*ad, *back)) << ToOldText(*back);
  auto many = ParseJsonAds("[" + json + "," + json + "]");
  ASSERT_TRUE(many.has_value());
  EXPECT_EQ(many->size(), 2u);
}

TEST(ClassAdIo, JsonMembersComposeProcAndClusterFragments) {
  ClassAd cluster;
  cluster.Assign("ClusterId", 3);
  cluster.Assign("Cmd", "/bin/true");
  ClassAd proc;
  proc.Assign("ProcId", 0);
  proc.SetParent(&cluster);
  std::string cached;
  AppendJsonMembers(cached, cluster);
  std::string out = "{";
  AppendJsonMember(out, "ProcId", *proc.LookupOwn("ProcId"));
  out += "," + cached + "}";
  EXPECT_EQ(out, "{\"ProcId\":0,\"ClusterId\":3,\"Cmd\":\"/bin/true\"}");
  std::string full;
  AppendJson(full, proc);  // a chained ad shows its parent's attributes too
  EXPECT_EQ(full, out);
  EXPECT_EQ(ToOldText(proc), "ProcId = 0\nClusterId = 3\nCmd = \"/bin/true\"\n");
}

TEST(ClassAdIo, JsonReadsCondorQOutput) {
  auto ads = ParseJsonAds(R"([
    {
      "Args": "a b",
      "ClusterId": 1,
      "Requirements": "\/Expr(TARGET.OpSys == \"LINUX\")\/",
      "ErrorValue": "\/Expr(error)\/",
      "Big": 18446744073709551615,
      "Real": 1.5e3
    }
  ])");
  ASSERT_TRUE(ads.has_value()) << ads.error().message();
  const ClassAd& ad = (*ads)[0];
  EXPECT_EQ(Unparse(*ad.Lookup("requirements")), "TARGET.OpSys == \"LINUX\"");
  EXPECT_TRUE(ad.Evaluate("ErrorValue").IsError());
  EXPECT_TRUE(ad.Evaluate("Big").IsReal());
  EXPECT_EQ(ad.EvaluateReal("Real"), 1500.0);
}

TEST(ClassAdIo, JsonErrors) {
  EXPECT_FALSE(ParseJsonAd("{").has_value());
  EXPECT_FALSE(ParseJsonAd("[1]").has_value());
  auto bad = ParseJsonAd(R"({"R": "\/Expr(1 +)\/"})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "attribute R: unexpected end of expression at column 4");
  std::string deep(5000, '[');
  EXPECT_FALSE(ParseJsonAd("{\"a\":" + deep).has_value());
}

TEST(ClassAdIo, JsonEscapesControlAndNonUtf8Bytes) {
  std::string out;
  AppendJsonString(out, std::string("a\x01\"\\\xc3\xa9\xff", 7));
  EXPECT_EQ(out, "\"a\\u0001\\\"\\\\\xc3\xa9\\u00FF\"");
}

}  // namespace
}  // namespace kite::classad
