// $$(Name) references in a brokered GridResource, and reading "kite HOST:PORT[/BATCH]".
#include "grid/brokered.h"

#include <gtest/gtest.h>

#include <map>

#include "grid/resource.h"

namespace kite::grid {
namespace {

TEST(Brokered, NamesAndExpansion) {
  EXPECT_FALSE(IsBrokered("kite ce:1/slurm"));
  EXPECT_TRUE(IsBrokered("$$(GridResource)"));
  EXPECT_EQ(BrokeredNames("kite $$(Host):$$(Port:9618)/$$(Batch)"),
            (std::vector<std::string>{"Host", "Port", "Batch"}));
  std::map<std::string, std::string> match = {{"Host", "ce1"}, {"Batch", "sge"}};
  auto lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = match.find(n);
    return it == match.end() ? std::nullopt : std::optional(it->second);
  };
  EXPECT_EQ(ExpandBrokered("kite $$(Host):$$(Port:9618)/$$(Batch)", lookup), "kite ce1:9618/sge");
  auto missing = ExpandBrokered("$$(GridResource)", lookup);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("GridResource"), std::string::npos);
  auto open = ExpandBrokered("kite $$(Host", lookup);
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().code(), ErrorCode::kInvalidInput);
}

TEST(GridResource, Parses) {
  auto r = ParseGridResource("kite [::1]:9618/slurm");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->host, "::1");
  EXPECT_EQ(r->HostPort(), "[::1]:9618");
  EXPECT_EQ(r->batch, "slurm");
  EXPECT_FALSE(ParseGridResource("$$(GridResource)"));
}

}  // namespace
}  // namespace kite::grid
