// grid-mapfile parsing and lookup.
#include "credentials/gridmap.h"

#include <gtest/gtest.h>

namespace kite::credentials {
namespace {

TEST(GridMapTest, ParsesQuotedDnsAccountsAndComments) {
  auto gm = GridMap::Parse(R"(# site grid-mapfile
"/O=Grid/OU=Kite/CN=Jane Doe" jane,grid01
  "/O=Grid/OU=Kite/CN=Quote \"Q\" Person"   qp

/O=Grid/OU=Kite/CN=NoSpaces nospace
"/O=Grid/OU=Kite/CN=Jane Doe" grid02,jane
)");
  ASSERT_TRUE(gm) << gm.error().ToString();
  EXPECT_EQ(gm->size(), 3u);
  EXPECT_EQ(gm->Accounts("/O=Grid/OU=Kite/CN=Jane Doe"),
            (std::vector<std::string>{"jane", "grid01", "grid02"}));
  EXPECT_EQ(gm->DefaultAccount("/O=Grid/OU=Kite/CN=Jane Doe"), "jane");
  EXPECT_EQ(gm->DefaultAccount("/O=Grid/OU=Kite/CN=Quote \"Q\" Person"), "qp");
  EXPECT_EQ(gm->DefaultAccount("/O=Grid/OU=Kite/CN=NoSpaces"), "nospace");
  EXPECT_TRUE(gm->Allows("/O=Grid/OU=Kite/CN=Jane Doe", "grid02"));
  EXPECT_FALSE(gm->Allows("/O=Grid/OU=Kite/CN=Jane Doe", "root"));
  EXPECT_FALSE(gm->DefaultAccount("/O=Grid/OU=Kite/CN=Stranger"));
  EXPECT_TRUE(gm->Accounts("/O=Grid/OU=Kite/CN=jane doe").empty());  // exact match only
}

TEST(GridMapTest, BadLinesAreReportedWithTheirLineNumber) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"\"/O=Grid/CN=x\" a\n\"/O=Grid/CN=unterminated a\n", "map:2: unterminated quoted DN"},
      {"# c\n\n\"/O=Grid/CN=x\"\n", "map:3: no account after the DN"},
      {"\"/O=Grid/CN=x\" a,,b\n", "map:1: empty account name"},
      {"\"O=Grid/CN=x\" a\n", "map:1: DN 'O=Grid/CN=x' does not start with '/'"},
      {"\"/O=Grid/CN=x\"a\n", "map:1: no blank after the quoted DN"},
      {"/O=Grid/CN=x\n", "map:1: no account after the DN"},
  };
  for (const auto& c : cases) {
    auto gm = GridMap::Parse(c.text, "map");
    ASSERT_FALSE(gm) << c.text;
    EXPECT_EQ(gm.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(gm.error().message().find(c.message), std::string::npos) << gm.error().message();
  }
}

TEST(GridMapTest, MissingFileIsAnError) {
  auto gm = GridMap::Load("/nonexistent/grid-mapfile");
  ASSERT_FALSE(gm);
  EXPECT_EQ(gm.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kite::credentials
