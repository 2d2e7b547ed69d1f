// condor_q's -af, -format and -long forms, case by case.
#include "agent/print_format.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "classad/io.h"

namespace kite::agent {
namespace {

classad::ClassAd Ad() {
  return *classad::ParseOldAd(
      "ClusterId = 12\nProcId = 3\nOwner = \"ann\"\nRate = 2.5\nFlag = true\nNeg = -7\n"
      "Twice = Rate * 2\nList = { 1, \"a\" }\n");
}

struct PrintfCase {
  const char* format;
  const char* expr;
  const char* out;
};

TEST(PrintFormat, PrintfConversions) {
  const PrintfCase cases[] = {
      {"%d", "ProcId", "3"},
      {"%5d|", "ProcId", "    3|"},
      {"%-5d|", "ProcId", "3    |"},
      {"%05d", "Neg", "-0007"},
      {"%d", "Rate", "2"},
      {"%d", "Flag", "1"},
      {"%x %%", "ClusterId", "c %"},
      {"%#o", "ClusterId", "014"},
      {"%c", "65", "A"},
      {"%.2f", "Twice", "5.00"},
      {"%g", "ProcId", "3"},
      {"%e", "Rate", "2.500000e+00"},
      {"%s", "Owner", "ann"},
      {"%.2s", "Owner", "an"},
      {"%s", "Rate", "2.5"},
      {"%v", "Owner", "ann"},
      {"%V", "Owner", "\"ann\""},
      {"%V", "List", "{ 1, \"a\" }"},
      {"%s", "Missing", "undefined"},
      {"%d", "Missing", "undefined"},
      {"%4d", "Owner", " ann"},
      {"<%ld>\\n", "ProcId", "<3>\n"},
      {"only text\\t", "ProcId", "only text\t"},
      {"a\\qb", "ProcId", "a\\qb"},
  };
  auto ad = Ad();
  for (auto& c : cases) {
    auto item = ParsePrintfItem(c.format, c.expr);
    ASSERT_TRUE(item) << c.format << ": " << item.error().message();
    EXPECT_EQ(FormatPrintf({*item}, ad), c.out) << c.format << " " << c.expr;
  }
}

TEST(PrintFormat, MalformedPrintfIsRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"%q", "unknown conversion %q"},    {"%", "a '%' with no conversion"},
      {"%5", "a '%' with no conversion"}, {"%d%d", "one conversion per -format"},
      {"%12345d", "too large"},           {"%.12345f", "too large"},
      {"%*d", "unknown conversion %*"},   {"%-+ #0-d", "too many flags"},
      {"%n", "unknown conversion %n"},
  };
  for (auto& [format, why] : cases) {
    auto item = ParsePrintfItem(format, "ProcId");
    ASSERT_FALSE(item) << format;
    EXPECT_NE(item.error().message().find(why), std::string::npos) << item.error().message();
    EXPECT_NE(item.error().message().find(std::string("'") + format + "'"), std::string::npos)
        << item.error().message();
  }
  auto bad = ParsePrintfItem("%d", "ProcId +");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("bad expression 'ProcId +'"), std::string::npos);
}

struct AfCase {
  const char* modifiers;
  std::vector<std::string> exprs;
  bool first;
  const char* out;
};

TEST(PrintFormat, Autoformat) {
  const AfCase cases[] = {
      {"", {"ProcId", "Owner", "Rate"}, true, "3 ann 2.5\n"},
      {"j", {"Owner"}, true, "12.3 ann\n"},
      {"h", {"Owner", "ProcId"}, true, "Owner ProcId\nann 3\n"},
      {"h", {"Owner", "ProcId"}, false, "ann 3\n"},
      {"jh,", {"Owner", "Missing"}, true, "ID,Owner,Missing\n12.3,ann,undefined\n"},
      {"lt", {"Owner", "ProcId"}, true, "Owner = ann\tProcId = 3\n"},
      {"V", {"Owner", "Flag"}, true, "\"ann\" true\n"},
      {"r", {"Twice", "ProcId + 1"}, true, "Rate * 2 ProcId + 1\n"},
      {"n", {"Owner", "ProcId"}, true, "ann\n3\n"},
      {"g", {"ProcId"}, true, "3\n\n"},
      {"", {"Twice", "strcat(Owner, \"!\")"}, true, "5.0 ann!\n"},
  };
  auto ad = Ad();
  for (auto& c : cases) {
    auto af = ParseAutoFormat(c.modifiers, c.exprs);
    ASSERT_TRUE(af) << c.modifiers << ": " << af.error().message();
    EXPECT_EQ(FormatAutoLine(*af, ad, 12, 3, c.first), c.out) << "-af:" << c.modifiers;
  }
  auto bad = ParseAutoFormat("jq", {"ProcId"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("unknown modifier 'q'"), std::string::npos);
  EXPECT_FALSE(ParseAutoFormat("", {}));
  EXPECT_FALSE(ParseAutoFormat("", {"(ProcId"}));
}

TEST(PrintFormat, LongIsOldSyntaxWithABlankLine) {
  auto ad = *classad::ParseOldAd("A = 1\nB = \"x\"\n");
  EXPECT_EQ(FormatLong(ad), "A = 1\nB = \"x\"\n\n");
}

}  // namespace
}  // namespace kite::agent
