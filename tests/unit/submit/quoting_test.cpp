// HTCondor argument/environment quoting and ClassAd string literals.
#include "submit/quoting.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "classad/expr.h"

namespace kite::submit {
namespace {

using Args = std::vector<std::string>;

struct ArgsCase {
  const char* value;  // as written after `arguments =`
  Args argv;
  const char* v2;  // condor_submit's V2 raw form (what it stores in Arguments)
};

// The first four come from condor_submit's manual; the V2 forms are what condor_submit writes
// (blanks and quotes in their own quoted sections, as its -dry-run shows).
const ArgsCase kArgsCases[] = {
    {R"("3 simple arguments")", {"3", "simple", "arguments"}, "3 simple arguments"},
    {R"("one 'two with spaces' 3")", {"one", "two with spaces", "3"}, "one two' 'with' 'spaces 3"},
    {R"("one ""two"" 'spacey ''quoted'' argument'")",
     {"one", "\"two\"", "spacey 'quoted' argument"},
     R"(one "two" spacey' '''quoted''' 'argument)"},
    {R"(one \"two\" 'three')", {"one", "\"two\"", "'three'"}, R"(one "two" ''''three'''')"},
    {"plain old  style", {"plain", "old", "style"}, "plain old style"},
    {R"("")", {}, ""},
    {R"("a '' b")", {"a", "", "b"}, "a '' b"},
    {R"("x'y z'w")", {"xy zw"}, "xy' 'zw"},
    {"\"\ttabbed\targs \"", {"tabbed", "args"}, "tabbed args"},
    {R"("C:\path\to ''")", {"C:\\path\\to", ""}, "C:\\path\\to ''"},
    // HTCondor's regression test args_spaces.sub.
    {R"("-one 'The Quicker, Redder Fox' '-two other stuff'")",
     {"-one", "The Quicker, Redder Fox", "-two other stuff"},
     "-one The' 'Quicker,' 'Redder' 'Fox -two' 'other' 'stuff"},
    {R"("'two  blanks'")", {"two  blanks"}, "two'  'blanks"},
};

TEST(Quoting, ArgumentsTable) {
  for (const auto& c : kArgsCases) {
    SCOPED_TRACE(c.value);
    auto got = SplitArguments(c.value);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(*got, c.argv);
    EXPECT_EQ(JoinArgumentsV2(*got), c.v2);
    auto back = SplitArgumentsV2(c.v2);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, c.argv);
  }
}

// Old syntax goes to Args as condor_submit's V1 raw form: one blank between arguments, nothing
// escaped; reading it back splits at blanks only.
TEST(Quoting, OldSyntaxArgsAttribute) {
  auto got = SplitArguments(R"(-n 5 \"x\"  y)");
  ASSERT_TRUE(got);
  EXPECT_EQ(JoinArgumentsV1(*got), R"(-n 5 "x" y)");
  EXPECT_EQ(SplitArgumentsV1Raw(R"(-n 5 "x" y)"), (Args{"-n", "5", "\"x\"", "y"}));
  EXPECT_EQ(SplitArgumentsV1Raw(" a\tb  "), (Args{"a", "b"}));
  EXPECT_TRUE(IsV2Quoted(R"( "x")"));
  EXPECT_FALSE(IsV2Quoted(R"(x "y")"));
}

TEST(Quoting, ArgumentErrors) {
  struct Case {
    const char* value;
    const char* message;
  } cases[] = {
      {R"("a 'b")", "unbalanced single quote"},
      {R"("a "b")", "must be doubled"},
      {R"("abc)", "must end with"},
  };
  for (const auto& c : cases) {
    auto got = SplitArguments(c.value);
    ASSERT_FALSE(got) << c.value;
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(got.error().message().find(c.message), std::string::npos) << got.error().message();
  }
}

TEST(Quoting, JoinRoundTripsAwkwardArguments) {
  Args nasty = {"",   "'",           "''",  " ",    "a b", "tab\there",
                "\"", "back\\slash", "x'y", "$(x)", "' '", "a  'b' c"};
  auto back = SplitArgumentsV2(JoinArgumentsV2(nasty));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, nasty);
}

struct EnvCase {
  const char* value;
  std::vector<EnvEntry> env;
  const char* v2;
};

const EnvCase kEnvCases[] = {
    // The manual's new-syntax example.
    {R"("one=1 two=""2"" three='spacey ''quoted'' value'")",
     {{"one", "1"}, {"two", "\"2\""}, {"three", "spacey 'quoted' value"}},
     R"(one=1 two="2" three=spacey' '''quoted''' 'value)"},
    // The manual's old-syntax example: quotes have no meaning, ';' separates.
    {R"(one=1;two=2;three="quotes have no 'special' meaning")",
     {{"one", "1"}, {"two", "2"}, {"three", "\"quotes have no 'special' meaning\""}},
     R"(one=1 two=2 three="quotes' 'have' 'no' '''special''' 'meaning")"},
    {"A=1;;B=", {{"A", "1"}, {"B", ""}}, "A=1 B="},
    {R"("A=1 A=2 B=x=y")", {{"A", "2"}, {"B", "x=y"}}, "A=2 B=x=y"},
    {R"("")", {}, ""},
};

TEST(Quoting, EnvironmentTable) {
  for (const auto& c : kEnvCases) {
    SCOPED_TRACE(c.value);
    auto got = SplitEnvironment(c.value);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(*got, c.env);
    EXPECT_EQ(JoinEnvironmentV2(*got), c.v2);
    auto back = SplitEnvironmentV2(c.v2);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, c.env);
  }
  EXPECT_EQ(JoinEnvironmentV1({{"A", "1"}, {"B", "x y"}}), "A=1;B=x y");
}

TEST(Quoting, EnvironmentErrors) {
  for (const char* value : {R"("A=1 novalue")", "A=1;=2", R"("A='1")"}) {
    auto got = SplitEnvironment(value);
    ASSERT_FALSE(got) << value;
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidInput);
  }
  auto got = SplitEnvironment(R"("A=1 novalue")");
  EXPECT_NE(got.error().message().find("'novalue' is not NAME=VALUE"), std::string::npos);
}

TEST(Quoting, ClassAdStringsParseBackToTheSameText) {
  const std::string samples[] = {
      "plain",
      "with \"quotes\"",
      "back\\slash",
      "new\nline\ttab\rcr",
      std::string("\x01\x1f\x7f", 3),
      "",
      "ünïcode",
  };
  for (const auto& s : samples) {
    std::string quoted = QuoteClassAdString(s);
    auto expr = classad::ParseExpr(quoted);
    ASSERT_TRUE(expr) << quoted << ": " << expr.error().message();
    classad::Value v;
    ASSERT_TRUE(classad::IsLiteral(**expr, &v)) << quoted;
    ASSERT_TRUE(v.IsString());
    EXPECT_EQ(v.AsString(), s) << quoted;
  }
  EXPECT_EQ(QuoteClassAdString("a\"b\\c"), R"("a\"b\\c")");
}

}  // namespace
}  // namespace kite::submit
