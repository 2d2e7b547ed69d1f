// Parsing: literals, precedence, canonical unparse, and malformed input.
#include <gtest/gtest.h>

#include <string>

#include "classad/expr.h"
#include "test_util.h"

namespace kite::classad {
namespace {

using testing::Canonical;
using testing::EvalText;

struct Case {
  std::string_view input;
  std::string_view expected;
};

TEST(ClassAdParse, Literals) {
  const Case cases[] = {
      {"42", "42"},
      {"-7", "-7"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"2.5", "2.5"},
      {"1e3", "1000.0"},
      {".5", "0.5"},
      {"-0.25", "-0.25"},
      {"\"plain\"", "\"plain\""},
      {R"("q\"uote\\back\nnl\ttab")", R"("q\"uote\\back\nnl\ttab")"},
      {"TRUE", "true"},
      {"False", "false"},
      {"UNDEFINED", "undefined"},
      {"Error", "error"},
      {"{1, \"a\", x}", "{ 1, \"a\", x }"},
      {"{}", "{}"},
      {"[ a = 1; b = \"x\" ]", "[ a = 1; b = \"x\" ]"},
      {"[]", "[]"},
      {"'odd name' + 1", "'odd name' + 1"},
      {"-0.V", "-0.V"},  // -(0.V): selection binds tighter than minus
      {"--2[0]", "--2[0]"},
  };
  for (const auto& c : cases) EXPECT_EQ(Canonical(c.input), c.expected) << c.input;
}

TEST(ClassAdParse, LiteralValues) {
  EXPECT_EQ(EvalText("\"a\\\"b\""), "\"a\\\"b\"");
  EXPECT_EQ(EvalText("size(\"a\\nb\")"), "3");
  EXPECT_EQ(EvalText("\"\\101\""), "\"A\"");     // octal escape
  EXPECT_EQ(EvalText("\"a\\.b\""), "\"a.b\"");   // an unknown escape is the character itself
  EXPECT_EQ(EvalText("\"a\" \"b\""), "\"ab\"");  // adjacent literals join, as in HTCondor
  EXPECT_EQ(EvalText("[ ;; a = 3;; b = 4;; ].b"), "4");  // empty statements are allowed
  EXPECT_EQ(EvalText("{1, 2}[1]"), "2");
  EXPECT_EQ(EvalText("[ a = 1; b = a + 1 ].b"), "2");
}

TEST(ClassAdParse, PrecedenceMatchesHTCondor) {
  const Case cases[] = {
      {"1 + 2 * 3", "7"},
      {"(1 + 2) * 3", "9"},
      {"10 - 4 - 3", "3"},
      {"100 / 10 / 5", "2"},
      {"7 % 4 * 2", "6"},
      {"1 + 2 == 3", "true"},
      {"1 < 2 == true", "true"},
      {"true || false && false", "true"},
      {"(true || false) && false", "false"},
      {"!false && false", "false"},
      {"-2 * 3", "-6"},
      {"- (2 + 3)", "-5"},
      {"1 | 2 ^ 3 & 4", "3"},
      {"1 << 2 + 1", "8"},
      {"1 < 2 ? 10 : 20", "10"},
      {"false ? 1 : true ? 2 : 3", "2"},
      {"undefined ?: 5", "5"},
      {"3 ?: 5", "3"},
      {"1 ?: 2 + 3", "4"},  // ?: binds like a postfix operator: (1 ?: 2) + 3
      {"undefined ?: 2 * 3", "6"},
      {"x ?: y ?: 7", "7"},
      {"-x ?: 4", "-4"},
      {"x ? : 8", "8"},  // "? :" with a blank is the conditional with its middle left out
      {"2 + 3 > 4 && 1 =?= 1", "true"},
      {"~0 & 7", "7"},
  };
  for (const auto& c : cases) EXPECT_EQ(EvalText(c.input), c.expected) << c.input;
}

TEST(ClassAdParse, CanonicalForms) {
  const Case cases[] = {
      {"a&&b||c", "a && b || c"},
      {"a && (b || c)", "a && (b || c)"},
      {"MY.x == target.Y", "MY.x == TARGET.Y"},
      {"a =?= b", "a =?= b"},
      {"a is b", "a =?= b"},
      {"a isnt b", "a =!= b"},
      {"strcat( \"a\" , b )", "strcat(\"a\", b)"},
      {"a[0].b", "a[0].b"},
      {"- -5", "--5"},
      {"c ? a : b ? d : e", "c ? a : b ? d : e"},
      {"a ?: b + c", "a ?: b + c"},
      {"(a + b) ?: c", "(a + b) ?: c"},
      {"a ?: b ?: c", "a ?: b ?: c"},
      {"(a ?: b) ?: c", "(a ?: b) ?: c"},
      {"(a ?: b).x", "(a ?: b).x"},
      {"a ? : b || c", "a ?: (b || c)"},
      {"/* note */ x // trailing", "x"},
  };
  for (const auto& c : cases) EXPECT_EQ(Canonical(c.input), c.expected) << c.input;
}

TEST(ClassAdParse, MalformedInputGivesClearErrors) {
  const Case cases[] = {
      {"\"abc", "unterminated string at column 1"},
      {"(1 + 2", "expected ')' at column 7"},
      {"f(1, 2", "expected ')' after function arguments at column 7"},
      {"1 + 2)", "unexpected text after expression at column 6"},
      {"\"nul \\0 inside\"", "NUL character in string at column 6"},
      {"007", "integer literal with a leading zero at column 1"},
      {"", "empty expression at column 1"},
      {"   ", "empty expression at column 4"},
      {"1 +", "unexpected end of expression at column 4"},
      {"a b", "unexpected text after expression at column 3"},
      {"{1, 2", "expected '}' or ',' in list at column 6"},
      {"[a = 1", "expected ';' or ']' in record at column 7"},
      {"x @ y", "unexpected character '@' at column 3"},
      {"99999999999999999999", "integer literal out of range at column 1"},
      {"1 ? 2", "expected ':' in conditional expression at column 6"},
      {"/* open", "unterminated comment at column 1"},
      {"'x y'(1)", "a quoted name cannot be called as a function at column 6"},
      {"12abc", "malformed number at column 1"},
  };
  for (const auto& c : cases) {
    auto e = ParseExpr(c.input);
    ASSERT_FALSE(e.has_value()) << c.input;
    EXPECT_EQ(e.error().message(), c.expected) << c.input;
    EXPECT_EQ(e.error().code(), ErrorCode::kInvalidInput);
  }
}

TEST(ClassAdParse, ErrorsOnLaterLinesNameTheLine) {
  auto e = ParseExpr("1 +\n  (2");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().message(), "expected ')' at line 2 column 5");
}

TEST(ClassAdParse, HugeNestingIsRefusedNotACrash) {
  for (std::string open : {"(", "-", "!", "{", "[a=", "f("}) {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += open;
    text += "1";
    auto e = ParseExpr(text);
    ASSERT_FALSE(e.has_value()) << open;
    EXPECT_NE(e.error().message().find("nested more than 1000 levels"), std::string::npos)
        << e.error().message();
  }
  // A long flat chain builds a deep tree without recursion in the parser: also refused.
  std::string chain = "1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  auto e = ParseExpr(chain);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("nested more than 1000 levels"), std::string::npos);
}

TEST(ClassAdParse, ModerateNestingIsFine) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "(";
  text += "1";
  for (int i = 0; i < 500; ++i) text += ")";
  EXPECT_EQ(EvalText(text), "1");
}

TEST(ClassAdParse, LiteralMakers) {
  Value v;
  EXPECT_TRUE(IsLiteral(*MakeInteger(5), &v));
  EXPECT_EQ(v.AsInteger(), 5);
  EXPECT_EQ(Unparse(*MakeReal(3.0)), "3.0");
  EXPECT_EQ(Unparse(*MakeString("x\"y")), "\"x\\\"y\"");
  EXPECT_EQ(Unparse(*MakeBool(false)), "false");
  EXPECT_TRUE(IsLiteral(*MakeUndefined(), &v));
  EXPECT_TRUE(v.IsUndefined());
  auto e = ParseExpr("a + 1");
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(IsLiteral(**e));
  EXPECT_EQ(MakeInteger(7).get(), MakeInteger(7).get());  // small integers are shared
}

}  // namespace
}  // namespace kite::classad
