#include "common/strings.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

TEST(Strings, TrimSplitCase) {
  EXPECT_EQ(Trim("  a b \t\n"), "a b");
  EXPECT_EQ(Split(" a, b ,,c", ','), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Split("a,,b", ',', false), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_TRUE(EqualsIgnoreCase("Queue", "QUEUE"));
  EXPECT_EQ(ToLower("AbC"), "abc");
  EXPECT_TRUE(StartsWith("universe", "uni"));
}

TEST(Strings, HostAndPort) {
  using HP = std::pair<std::string_view, std::string_view>;
  EXPECT_EQ(SplitHostPort("127.0.0.1:9618"), (HP{"127.0.0.1", "9618"}));
  EXPECT_EQ(SplitHostPort("[::1]:80"), (HP{"::1", "80"}));
  EXPECT_EQ(SplitHostPort("host:"), (HP{"host", ""}));
  EXPECT_FALSE(SplitHostPort("host"));
  EXPECT_FALSE(SplitHostPort("[::1]80"));
  EXPECT_FALSE(SplitHostPort("[::1"));
  EXPECT_EQ(ParsePort("0"), 0u);
  EXPECT_EQ(ParsePort("65535"), 65535u);
  EXPECT_FALSE(ParsePort("65536"));
  EXPECT_FALSE(ParsePort(""));
  EXPECT_FALSE(ParsePort("80x"));
  EXPECT_FALSE(ParsePort("-1"));
}

// Text from another party goes into a log line as one line, of bounded length.
TEST(Strings, ForLogWritesOneSafeLine) {
  EXPECT_EQ(ForLog("plain /path/x.dat"), "plain /path/x.dat");
  EXPECT_EQ(ForLog("a\nb\rc\td"), "a\\x0ab\\x0dc\\x09d");
  EXPECT_EQ(ForLog("back\\slash"), "back\\x5cslash");
  EXPECT_EQ(ForLog(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(ForLog("\xc3\xa9"), "\\xc3\\xa9");
  EXPECT_EQ(ForLog(std::string(500, 'a'), 10), std::string(10, 'a') + "...");
}
}  // namespace
}  // namespace kite
