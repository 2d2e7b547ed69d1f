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

}  // namespace
}  // namespace kite
