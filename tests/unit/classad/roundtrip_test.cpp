// Property test: for random expressions, unparse then parse gives the same tree, the same text
// and the same value.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "classad/classad.h"
#include "classad/expr.h"
#include "test_util.h"

namespace kite::classad {
namespace {

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  std::string Expr(int depth) {
    if (depth <= 0 || Pick(4) == 0) return Leaf();
    switch (Pick(8)) {
      case 0:
        return Unary() + Expr(depth - 1);
      case 1:
      case 2:
      case 3:
        return Expr(depth - 1) + " " + Binary() + " " + Expr(depth - 1);
      case 4:
        return "(" + Expr(depth - 1) + ")";
      case 5:
        return Expr(depth - 1) + " ? " + Expr(depth - 1) + " : " + Expr(depth - 1);
      case 6:
        return Call(depth - 1);
      default:
        return "{" + Expr(depth - 1) + ", " + Expr(depth - 1) + "}[" + Leaf() + "]";
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string Leaf() {
    static const char* kLeaves[] = {"0",
                                    "1",
                                    "-3",
                                    "42",
                                    "2.5",
                                    "-0.125",
                                    "1e10",
                                    "\"abc\"",
                                    "\"A\\\"q\\\\\"",
                                    "\"\"",
                                    "true",
                                    "false",
                                    "undefined",
                                    "error",
                                    "x",
                                    "MY.x",
                                    "TARGET.y",
                                    "Name",
                                    "s",
                                    "lst",
                                    "rec.a",
                                    "9223372036854775807",
                                    "-9223372036854775808",
                                    "[a = 1; b = x]",
                                    "{}"};
    return kLeaves[Pick(sizeof(kLeaves) / sizeof(kLeaves[0]))];
  }
  std::string Unary() {
    static const char* kOps[] = {"-", "+", "!", "~"};
    return kOps[Pick(4)];
  }
  std::string Binary() {
    static const char* kOps[] = {"||",  "&&", "|",  "^", "&",  "==", "!=", "=?=",
                                 "=!=", "<",  "<=", ">", ">=", "<<", ">>", ">>>",
                                 "+",   "-",  "*",  "/", "%",  "?:"};
    return kOps[Pick(sizeof(kOps) / sizeof(kOps[0]))];
  }
  std::string Call(int depth) {
    static const char* kFns[] = {"strcat",  "size",   "ifThenElse",  "int",   "real",   "string",
                                 "toUpper", "member", "isUndefined", "floor", "substr", "min",
                                 "sum",     "regexp", "unknownFn",   "join",  "split",  "pow"};
    std::string out = kFns[Pick(sizeof(kFns) / sizeof(kFns[0]))];
    out += "(";
    int n = Pick(4);
    for (int i = 0; i < n; ++i) out += (i ? ", " : "") + Expr(depth);
    return out + ")";
  }

  std::mt19937 rng_;
};

TEST(ClassAdRoundTrip, UnparseParsesBackToTheSameTreeAndValue) {
  ClassAd my = testing::Ad(
      "x = 5\nName = \"job\"\ns = \"hello\"\nlst = { 1, 2, 3 }\n"
      "rec = [ a = 7 ]\n");
  ClassAd target = testing::Ad("y = 2.5\nName = \"slot\"\n");
  Generator gen(12345);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = gen.Expr(5);
    auto first = ParseExpr(text);
    if (!first) continue;  // e.g. a generated "- -9223372036854775808"
    ++parsed;
    std::string canon = Unparse(**first);
    auto second = ParseExpr(canon);
    ASSERT_TRUE(second.has_value()) << text << " -> " << canon << ": " << second.error().message();
    EXPECT_TRUE(SameExpr(**first, **second)) << text << " -> " << canon;
    EXPECT_EQ(Unparse(**second), canon) << text;
    Value a = EvaluateExpr(**first, &my, &target);
    Value b = EvaluateExpr(**second, &my, &target);
    bool both_nan =
        a.IsReal() && b.IsReal() && a.AsReal() != a.AsReal() && b.AsReal() != b.AsReal();
    EXPECT_TRUE(both_nan || a.IdenticalTo(b) || (a.IsClassAd() && b.IsClassAd()))
        << canon << ": " << a.ToString() << " vs " << b.ToString();
  }
  EXPECT_GT(parsed, 2500);
}

// A minus before a defaulted number: "- -0 ?: 3" is -(-(0 ?: 3)) (?: binds tighter than minus),
// so it must not be written "--0 ?: 3", which reads back as -((-0) ?: 3). Found by the stored-ad
// fuzz target.
TEST(ClassAdRoundTrip, AMinusBeforeADefaultedNumberKeepsItsMeaning) {
  for (const char* text : {"- -0 ?: 300300", "-0 ?: 3", "- 2.5 ?: 1", "-(0 ?: 3)", "-(1 ?: 2 ?: 3)",
                           "- -(7) ?: 1", "-0.V ?: 2", "-x ?: 1", "-{1}[0] ?: 2"}) {
    auto first = ParseExpr(text);
    ASSERT_TRUE(first.has_value()) << text;
    std::string canon = Unparse(**first);
    auto second = ParseExpr(canon);
    ASSERT_TRUE(second.has_value()) << text << " -> " << canon;
    EXPECT_TRUE(SameExpr(**first, **second)) << text << " -> " << canon;
    EXPECT_EQ(EvaluateExpr(**first, nullptr).ToString(), EvaluateExpr(**second, nullptr).ToString())
        << canon;
  }
  EXPECT_EQ(Unparse(**ParseExpr("- (0 ?: 3)")), "-(0 ?: 3)");
}

}  // namespace
}  // namespace kite::classad
