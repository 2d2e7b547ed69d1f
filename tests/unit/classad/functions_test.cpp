// Every built-in function, with good and bad arguments.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "classad/classad.h"
#include "test_util.h"

namespace kite::classad {
namespace {

using testing::EvalText;

struct Case {
  std::string_view input;
  std::string_view expected;
};

class ClassAdFunctions : public ::testing::TestWithParam<Case> {};

TEST_P(ClassAdFunctions, Evaluates) {
  EXPECT_EQ(EvalText(GetParam().input), GetParam().expected) << GetParam().input;
}

INSTANTIATE_TEST_SUITE_P(
    TypePredicates, ClassAdFunctions,
    ::testing::Values(Case{"isUndefined(x)", "true"}, Case{"isUndefined(1)", "false"},
                      Case{"isError(1/0)", "true"}, Case{"iserror(1)", "false"},
                      Case{"isString(\"a\")", "true"}, Case{"isString(1)", "false"},
                      Case{"isInteger(1)", "true"}, Case{"isInteger(1.0)", "false"},
                      Case{"isReal(1.0)", "true"}, Case{"isBoolean(false)", "true"},
                      Case{"isList({})", "true"}, Case{"isList(\"{}\")", "false"},
                      Case{"isClassAd([a=1])", "true"}, Case{"isUndefined()", "error"},
                      Case{"isUndefined(1, 2)", "error"}, Case{"NoSuchFunction(1)", "error"}));

INSTANTIATE_TEST_SUITE_P(
    Control, ClassAdFunctions,
    ::testing::Values(Case{"ifThenElse(true, 1, 2)", "1"}, Case{"IFTHENELSE(0, 1, 2)", "2"},
                      Case{"ifThenElse(undefined, 1, 2)", "undefined"},
                      Case{"ifThenElse(error, 1, 2)", "error"},
                      Case{"ifThenElse(\"s\", 1, 2)", "error"},
                      Case{"ifThenElse(true, 1, 1/0)", "1"},  // the other branch is not evaluated
                      Case{"ifThenElse(true, 1)", "error"}, Case{"debug(3 + 4)", "7"},
                      Case{"debug()", "error"}, Case{"time(1)", "error"}));

INSTANTIATE_TEST_SUITE_P(
    Strings, ClassAdFunctions,
    ::testing::Values(
        Case{"strcat(\"a\", \"b\", 1, 2.5, true)", "\"ab12.500000000000000E+00true\""},
        Case{"strcat()", "\"\""}, Case{"strcat(\"a\", x)", "undefined"},
        Case{"strcat(\"a\", 1/0)", "error"}, Case{"strcat(\"a\", {1})", "\"a{ 1 }\""},
        Case{"substr(\"abcdef\", 2)", "\"cdef\""}, Case{"substr(\"abcdef\", 1, 3)", "\"bcd\""},
        Case{"substr(\"abcdef\", -2)", "\"ef\""}, Case{"substr(\"abcdef\", 1, -2)", "\"bcd\""},
        Case{"substr(\"abc\", 10)", "\"\""}, Case{"substr(\"abc\", 1, 100)", "\"bc\""},
        Case{"substr(1, 0)", "error"}, Case{"substr(\"abc\", \"1\")", "error"},
        Case{"substr(x, 1)", "undefined"}, Case{"substr(\"abc\")", "error"},
        Case{"size(\"abcd\")", "4"}, Case{"size({1, 2})", "2"}, Case{"size([a = 1; b = 2])", "2"},
        Case{"size(x)", "undefined"}, Case{"size(5)", "error"}, Case{"length(\"abc\")", "3"},
        Case{"toUpper(\"aBc\")", "\"ABC\""}, Case{"toLower(\"aBc\")", "\"abc\""},
        Case{"toUpper(x)", "undefined"}, Case{"toUpper(12)", "\"12\""},
        Case{"toLower({})", "\"{  }\""}, Case{"strcmp(\"a\", \"b\")", "-1"},
        Case{"strcmp(\"b\", \"a\")", "1"}, Case{"strcmp(\"A\", \"a\")", "-1"},
        Case{"stricmp(\"A\", \"a\")", "0"}, Case{"strcmp(\"a\", x)", "undefined"},
        Case{"strcmp(\"a\")", "error"}, Case{"join(\", \", \"a\", \"b\", 3)", "\"a, b, 3\""},
        Case{"join(\"-\", {\"x\", \"y\"})", "\"x-y\""}, Case{"join({\"x\", \"y\"})", "\"xy\""},
        Case{"join(\"-\", {\"x\", undefined, \"y\"})", "\"x-y\""}, Case{"join()", "\"\""},
        Case{"join(1)", "\"\""}, Case{"join(\",\", \"\", \"a\")", "\"a\""},
        Case{"join(\",\", undefined, x)", "undefined"},
        Case{"split(\"a, b  c\")", "{ \"a\", \"b\", \"c\" }"},
        Case{"split(\"a:b::c\", \":\")", "{ \"a\", \"b\", \"\", \"c\" }"},
        Case{"split(\"\")", "{}"}, Case{"split(1)", "error"}, Case{"split(x)", "error"},
        Case{"splitUserName(\"u@d@x\")", "{ \"u\", \"d@x\" }"},
        Case{"splitUserName(\"u\")", "{ \"u\", \"\" }"},
        Case{"splitSlotName(\"host\")", "{ \"\", \"host\" }"}, Case{"splitSlotName(1)", "error"},
        Case{"versioncmp(\"7.9\", \"7.10\") < 0", "true"},
        Case{"versionGT(\"1.10\", \"1.9\")", "true"}, Case{"versionEQ(\"01\", \"1\")", "false"},
        Case{"versionLE(x, \"1\")", "undefined"},
        Case{"version_in_range(\"8.1\", \"8.0\", \"8.9\")", "true"}));

INSTANTIATE_TEST_SUITE_P(
    Regexp, ClassAdFunctions,
    ::testing::Values(Case{"regexp(\"^a.c$\", \"abc\")", "true"},
                      Case{"regexp(\"^a.c$\", \"ABC\")", "false"},
                      Case{"regexp(\"^a.c$\", \"ABC\", \"i\")", "true"},
                      Case{"regexp(\"[0-9]+\", \"x123\")", "true"},
                      Case{"regexp(\"(a|b)+$\", \"xab\")", "true"},
                      Case{"regexp(\"(\", \"x\")", "error"},  // invalid pattern
                      Case{"regexp(1, \"x\")", "error"}, Case{"regexp(\"a\", x)", "undefined"},
                      Case{"regexp(\"a\")", "error"}));

INSTANTIATE_TEST_SUITE_P(
    Lists, ClassAdFunctions,
    ::testing::Values(
        Case{"member(2, {1, 2, 3})", "true"}, Case{"member(4, {1, 2, 3})", "false"},
        Case{"member(\"B\", {\"a\", \"b\"})", "true"},  // == is case-insensitive
        Case{"identicalMember(\"B\", {\"a\", \"b\"})", "false"},
        Case{"member(x, {1})", "undefined"}, Case{"member(1, x)", "undefined"},
        Case{"member(1, 2)", "error"}, Case{"member({1}, {1})", "error"},
        Case{"sum({1, 2, 3})", "6"}, Case{"sum({1, 2.5})", "3.5"}, Case{"sum({})", "0"},
        Case{"sum({1, \"a\"})", "error"}, Case{"sum(x)", "undefined"}, Case{"sum(1)", "error"},
        Case{"avg({1, 2})", "1.5"}, Case{"avg({})", "0"}, Case{"min({3, 1, 2})", "1"},
        Case{"max({3, 1, 2.5})", "3"}, Case{"min({})", "undefined"}, Case{"max(4, 9, 2)", "error"},
        Case{"sum({1, x, 2})", "3"}, Case{"anyCompare(\"<\", {5, 1}, 3)", "true"},
        Case{"allCompare(\"<\", {5, 1}, 3)", "false"}, Case{"anyCompare(\"~\", {1}, 3)", "error"},
        Case{"min({1, true})", "error"}, Case{"max()", "error"}));

INSTANTIATE_TEST_SUITE_P(
    StringLists, ClassAdFunctions,
    ::testing::Values(Case{"stringListMember(\"b\", \"a, b, c\")", "true"},
                      Case{"stringListMember(\"B\", \"a, b, c\")", "false"},
                      Case{"stringListIMember(\"B\", \"a, b, c\")", "true"},
                      Case{"stringListMember(\"b\", \"a;b\", \";\")", "true"},
                      Case{"stringListMember(x, \"a\")", "false"},  // UNDEFINED counts as ""
                      Case{"stringListMember(x, x)", "undefined"},
                      Case{"stringListSubsetMatch(\"a, b\", \"b, c, a\")", "true"},
                      Case{"stringListISubsetMatch(\"A, d\", \"b, c, a\")", "false"},
                      Case{"stringListsIntersect(\"a b\", \"c,b\")", "true"},
                      Case{"stringListMember(\"a\", 1)", "error"},
                      Case{"stringListMember(\"a\")", "error"},
                      Case{"stringListSize(\"a, b,,c\")", "3"}, Case{"stringListSize(\"\")", "0"},
                      Case{"stringListSize(1)", "error"}, Case{"stringListSum(\"1, 2, 3\")", "6"},
                      Case{"stringListSum(\"1, 2.5\")", "3.5"}, Case{"stringListSum(\"\")", "0.0"},
                      Case{"stringListSum(\"1, x\")", "error"},
                      Case{"stringListAvg(\"1, 2\")", "1"},  // integer items: integer, as HTCondor
                      Case{"stringListAvg(\"1, 2.0\")", "1.5"},
                      Case{"stringListMin(\"3,1,2\")", "1"},
                      Case{"stringListMax(\"3,1,2\")", "3"}));

INSTANTIATE_TEST_SUITE_P(
    Conversions, ClassAdFunctions,
    ::testing::Values(Case{"int(3.7)", "3"}, Case{"int(-3.7)", "-3"}, Case{"int(\"42\")", "42"},
                      Case{"int(\"3.7\")", "3"}, Case{"int(true)", "1"},
                      Case{"int(\"x\")", "error"}, Case{"int(x)", "undefined"},
                      Case{"int({})", "error"}, Case{"int(1e300)", "error"}, Case{"real(3)", "3.0"},
                      Case{"real(\"2.5\")", "2.5"}, Case{"real(\"INF\")", "real(\"INF\")"},
                      Case{"real(\"-INF\") < 0", "true"}, Case{"real(\"abc\")", "error"},
                      Case{"string(3)", "\"3\""}, Case{"string(2.5)", "\"2.500000000000000E+00\""},
                      Case{"string(0.0)", "\"0.0\""}, Case{"string(\"s\")", "\"s\""},
                      Case{"string(true)", "\"true\""}, Case{"string({1, 2})", "\"{ 1,2 }\""},
                      Case{"int(\"0x10\")", "16"}, Case{"string(x)", "undefined"},
                      Case{"bool(1)", "true"}, Case{"bool(\"FALSE\")", "false"},
                      Case{"bool(\"maybe\")", "undefined"}, Case{"bool()", "error"}));

INSTANTIATE_TEST_SUITE_P(
    Math, ClassAdFunctions,
    ::testing::Values(Case{"floor(2.7)", "2"}, Case{"floor(-2.5)", "-3"}, Case{"floor(5)", "5"},
                      Case{"ceiling(2.1)", "3"}, Case{"ceil(2.0)", "2"}, Case{"round(2.5)", "2"},
                      Case{"round(3.5)", "4"}, Case{"round(-2.4)", "-2"},
                      Case{"round(\"2.6\")", "3"}, Case{"floor(\"x\")", "error"},
                      Case{"floor(x)", "error"}, Case{"floor(1, 2)", "error"}, Case{"abs(-3)", "3"},
                      Case{"abs(-2.5)", "2.5"}, Case{"abs(\"a\")", "error"},
                      Case{"abs(x)", "undefined"}, Case{"pow(2, 10)", "1024"},
                      Case{"pow(2, -1)", "0.5"}, Case{"pow(2.0, 2)", "4.0"},
                      Case{"pow(\"2\", 2)", "4.0"}, Case{"pow(2)", "error"},
                      Case{"pow(x, 2)", "error"}, Case{"quantize(3, 4)", "4"},
                      Case{"quantize(8, 4)", "8"}, Case{"quantize(2.5, 1)", "3.0"},
                      Case{"quantize(3, {2, 4, 8})", "4"}, Case{"quantize(9, {2, 4})", "12"},
                      Case{"quantize(3, 0)", "3"}, Case{"quantize(\"a\", 2)", "error"}));

TEST(ClassAdFunctionsExpressions, EvalUnparseUnresolved) {
  ClassAd ad = testing::Ad(
      "A = 1\nB = 2\nC = eval(\"A + B\")\nRequestCpus = 1\n"
      "Requirements = OpSys == \"LINUX\" && TARGET.Arch == \"ARM\" && Cpus >= RequestCpus\n"
      "Loop = eval(\"Loop\")\n");
  const Case cases[] = {
      {"C", "3"},
      {"eval(\"1 +\")", "error"},
      {"eval(x)", "error"},
      {"eval(strcat(\"A\", \"+\", 41))", "42"},
      {"Loop", "error"},
      {"unparse(Requirements)",
       R"("OpSys == \"LINUX\" && TARGET.Arch == \"ARM\" && Cpus >= RequestCpus")"},
      {"unparse(Nothing)", "\"\""},
      {"unparse(1)", "error"},
      {"unresolved(Requirements)", "\"Arch,Cpus,OpSys\""},
      {"unresolved(Requirements, \"^opsys\")", "true"},
      {"unresolved(Requirements, \"OpSys.+\")", "false"},
      {"unresolved(Nothing)", "undefined"},
      {"unresolved(\"Requirements\")", "error"},
  };
  for (const auto& c : cases) EXPECT_EQ(EvalText(c.input, &ad), c.expected) << c.input;
}

TEST(ClassAdFunctionsTime, TimeIsNow) {
  auto e = ParseExpr("time()");
  ASSERT_TRUE(e.has_value());
  Value v = EvaluateExpr(**e, nullptr);
  ASSERT_TRUE(v.IsInteger());
  EXPECT_NEAR(static_cast<double>(v.AsInteger()), static_cast<double>(std::time(nullptr)), 2.0);
}

TEST(ClassAdFunctionsNames, AreCaseInsensitive) {
  EXPECT_EQ(EvalText("STRCAT(\"a\", \"b\")"), "\"ab\"");
  EXPECT_EQ(EvalText("StringListMember(\"a\", \"a\")"), "true");
}

}  // namespace
}  // namespace kite::classad
