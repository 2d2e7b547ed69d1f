// Evaluation: three-valued logic, =?=, arithmetic, comparison, scoping and attribute chains.
#include <gtest/gtest.h>

#include <chrono>

#include <string>

#include "classad/classad.h"
#include "classad/io.h"
#include "test_util.h"

namespace kite::classad {
namespace {

using testing::Ad;
using testing::EvalText;

struct Case {
  std::string_view input;
  std::string_view expected;
};

void ExpectAll(std::initializer_list<Case> cases, const ClassAd* my = nullptr,
               const ClassAd* target = nullptr) {
  for (const auto& c : cases) EXPECT_EQ(EvalText(c.input, my, target), c.expected) << c.input;
}

// The full truth tables of && and || over {true, false, undefined, error}, as HTCondor's
// short-circuit evaluation defines them (rows: left operand; columns: right operand).
TEST(ClassAdEval, LogicalTruthTables) {
  const char* vals[] = {"true", "false", "undefined", "error"};
  const char* and_table[4][4] = {
      {"true", "false", "undefined", "error"},
      {"false", "false", "false", "false"},
      {"undefined", "false", "undefined", "error"},
      {"error", "error", "error", "error"},
  };
  const char* or_table[4][4] = {
      {"true", "true", "true", "true"},
      {"true", "false", "undefined", "error"},
      {"true", "undefined", "undefined", "error"},
      {"error", "error", "error", "error"},
  };
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      std::string a = std::string(vals[i]) + " && " + vals[j];
      std::string o = std::string(vals[i]) + " || " + vals[j];
      EXPECT_EQ(EvalText(a), and_table[i][j]) << a;
      EXPECT_EQ(EvalText(o), or_table[i][j]) << o;
    }
  }
  ExpectAll({{"!true", "false"},
             {"!false", "true"},
             {"!undefined", "undefined"},
             {"!error", "error"},
             {"!0", "true"},
             {"!\"s\"", "error"},
             {"1 && 2.5", "true"},
             {"0 || 0.0", "false"},
             {"\"s\" && true", "error"},
             {"false && \"s\"", "false"},
             {"true && \"s\"", "error"}});
}

TEST(ClassAdEval, MetaEqualityNeverUndefined) {
  ExpectAll({
      {"undefined =?= undefined", "true"},
      {"error =?= error", "true"},
      {"undefined =?= 1", "false"},
      {"x =?= undefined", "true"},
      {"x =!= undefined", "false"},
      {"1 =?= 1.0", "false"},
      {"1 == 1.0", "true"},
      {"\"abc\" =?= \"ABC\"", "false"},
      {"\"abc\" == \"ABC\"", "true"},
      {"\"abc\" =!= \"ABC\"", "true"},
      {"\"abc\" != \"ABC\"", "false"},
      {"true =?= true", "true"},
      {"x == 1", "undefined"},
      {"x != 1", "undefined"},
      {"error == undefined", "error"},
      {"{1, 2} =?= {1, 2}", "true"},
  });
}

TEST(ClassAdEval, ComparisonAndArithmetic) {
  ExpectAll({
      {"\"apple\" < \"Banana\"", "true"},
      {"\"a\" < \"ab\"", "true"},
      {"\"a\" < 1", "error"},
      {"true == 1", "true"},
      {"true + 1", "2"},
      {"2 < 2.5", "true"},
      {"7 / 2", "3"},
      {"7.0 / 2", "3.5"},
      {"-7 % 3", "-1"},
      {"1 / 0", "error"},
      {"1 % 0", "error"},
      {"1.0 / 0", "error"},
      {"5.5 % 2", "error"},
      {"\"a\" + 1", "error"},
      {"undefined + 1", "undefined"},
      {"error + undefined", "error"},
      {"9223372036854775807 + 1", "-9223372036854775808"},
      {"-9223372036854775808 / -1", "9223372036854775807"},
      {"-(-9223372036854775808)", "-9223372036854775808"},
      {"+5", "5"},
      {"+\"s\"", "error"},
      {"-true", "error"},
      {"6 & 3", "2"},
      {"6 | 3", "7"},
      {"6 ^ 3", "5"},
      {"1 << 4", "16"},
      {"-16 >> 2", "-4"},
      {"-1 >>> 60", "15"},
      {"1 << 64", "1"},  // as HTCondor on x86-64: the count is taken modulo 64
      {"-8 >> 70", "-1"},
      {"1.0 / 0", "error"},  // +infinity is ERROR in HTCondor; -infinity is a value
      {"-1.0 / 0 < 0", "true"},
      {"1.0 & 1", "error"},
      {"{1, 2}[5]", "error"},
      {"{1, 2}[undefined]", "undefined"},
      {"[a = 3][\"A\"]", "3"},
      {"undefined ? 1 : 2", "undefined"},
      {"\"s\" ? 1 : 2", "error"},
      {"0 ? 1 : 2", "2"},
  });
}

TEST(ClassAdEval, ScopingMyTargetAndUnscoped) {
  ClassAd job = Ad("Memory = 1\nName = \"job\"\nOnlyJob = 5\nRequest = 2048\n");
  ClassAd machine =
      Ad("Memory = 4096\nName = \"slot1\"\nOnlyMachine = 7\n"
         "Fits = TARGET.Request <= MY.Memory\nSelfName = Name\n");
  ExpectAll(
      {
          {"MY.Memory", "1"},
          {"TARGET.Memory", "4096"},
          {"Memory", "1"},       // unscoped: MY first
          {"OnlyMachine", "7"},  // ... then TARGET
          {"my.onlyjob", "5"},
          {"TARGET.OnlyJob", "undefined"},
          {"MY.OnlyMachine", "undefined"},
          {"Nothing", "undefined"},
          {"TARGET.Fits", "true"},  // evaluated in the machine's scope: MY and TARGET swap
          {"TARGET.SelfName", "\"slot1\""},
          {"MY.Name == TARGET.Name", "false"},
      },
      &job, &machine);
  ExpectAll({{"TARGET.Memory", "undefined"}, {"Memory", "1"}}, &job, nullptr);
}

TEST(ClassAdEval, NestedRecordsSeeTheirEnclosingAd) {
  ClassAd ad = Ad("Outer = 10\nR = [ Inner = 1; Sum = Inner + Outer ]\n");
  ExpectAll({{"R.Sum", "11"}, {"R.Inner", "1"}, {"R.Missing", "undefined"}, {"Outer.x", "error"}},
            &ad);
}

// HTCondor scopes a record by where it is written: names it lacks are looked up in the ads
// around it there, however the record was reached.
TEST(ClassAdEval, NestedRecordsAreScopedWhereTheyAreWritten) {
  ClassAd ad =
      Ad("Machines = [ RAM = 6000; Box = [ Need = RAM ] ]\n"
         "Jobs = [ RAM = 1; Pick = Machines.Box ]\n"
         "Alias = Machines.Box\n"
         "Outer = 7\n"
         "List = { [ a = 1 ], [ a = 2 ] }\n"
         "Loop = Loop.x\n");
  ExpectAll({{"Machines.Box.Need", "6000"},
             {"Jobs.Pick.Need", "6000"},  // Box's enclosing ad is Machines, not Jobs
             {"Alias.Need", "6000"},
             {"Machines.Box.Outer", "7"},  // selection falls back to the enclosing ads
             {"List.Outer", "{ 7, 7 }"},
             {"List.a", "{ 1, 2 }"},
             {"Machines[\"Box\"].Need", "6000"},
             {"Loop", "error"}},
            &ad);
}

TEST(ClassAdEval, SelfReferenceIsErrorNotACrash) {
  ClassAd ad = Ad("A = B + 1\nB = A + 1\nC = C\n");
  EXPECT_EQ(ad.Evaluate("A").ToString(), "error");
  EXPECT_EQ(ad.Evaluate("C").ToString(), "error");
}

// Found by the fuzzer: an attribute that names itself twice doubles the work at every level, so a
// depth cap alone takes 2^depth steps. The cycle must be cut where it closes.
TEST(ClassAdEval, SelfReferenceTwiceIsErrorQuickly) {
  ClassAd ad = Ad("p = +jp > p > p >= +1/z\nq = r + r + r\nr = q * q\n");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ad.Evaluate("p").ToString(), "error");
  EXPECT_EQ(ad.Evaluate("q").ToString(), "error");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  // Referring to the same attribute twice without a cycle is fine.
  ClassAd ok = Ad("x = 2\ny = x + x\nz = y * y\n");
  EXPECT_EQ(ok.Evaluate("z").ToString(), "16");
}

TEST(ClassAdEval, ChainedParentSuppliesMissingAttributes) {
  ClassAd cluster =
      Ad("ClusterId = 7\nCmd = \"/bin/sleep\"\nRequestMemory = 100\n"
         "Label = strcat(Cmd, \".\", ProcId)\nProcId = -1\n");
  ClassAd proc = Ad("ProcId = 3\nRequestMemory = 200\n");
  proc.SetParent(&cluster);
  EXPECT_EQ(proc.EvaluateInt("ClusterId"), 7);
  EXPECT_EQ(proc.EvaluateInt("RequestMemory"), 200);  // the proc's own value wins
  EXPECT_EQ(cluster.EvaluateInt("RequestMemory"), 100);
  // The parent's expression is evaluated with MY = the proc ad.
  EXPECT_EQ(proc.EvaluateString("Label"), "/bin/sleep.3");
  EXPECT_NE(proc.Lookup("cmd"), nullptr);
  EXPECT_EQ(proc.LookupOwn("cmd"), nullptr);
  EXPECT_EQ(proc.size(), 2u);
  proc.SetParent(nullptr);
  EXPECT_EQ(proc.Evaluate("ClusterId").ToString(), "undefined");
}

TEST(ClassAdEval, TargetChainWorksToo) {
  ClassAd cluster = Ad("Requirements = TARGET.Memory >= RequestMemory\nRequestMemory = 100\n");
  ClassAd proc = Ad("ProcId = 0\n");
  proc.SetParent(&cluster);
  ClassAd machine = Ad("Memory = 50\n");
  EXPECT_EQ(EvalText("TARGET.RequestMemory", &machine, &proc), "100");
  EXPECT_EQ(proc.EvaluateBool("Requirements", &machine), false);
}

TEST(ClassAdEval, BareMyAndTargetNameTheAds) {
  ClassAd a = Ad("X = 1\n");
  ClassAd b = Ad("X = 2\n");
  EXPECT_EQ(EvalText("isClassAd(TARGET)", &a, &b), "true");
  EXPECT_EQ(EvalText("TARGET[\"X\"]", &a, &b), "2");
  EXPECT_EQ(EvalText("size(MY)", &a, &b), "1");
}

}  // namespace
}  // namespace kite::classad
