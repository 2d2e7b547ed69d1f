// HTCondor's macro functions and built-in macros, as a user writes them in a submit file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "submit/submit_file.h"
#include "submit_test_util.h"

namespace kite::submit {
namespace {

class MacrosTest : public SubmitTest {
 protected:
  void SetUp() override {
    SubmitTest::SetUp();
    options_.random = [] { return 4u; };
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    ::setenv("KITE_MACRO_TEST", "from env", 1);
    ::unsetenv("KITE_MACRO_UNSET");
  }
  void TearDown() override {
    ::unsetenv("KITE_MACRO_TEST");
    SubmitTest::TearDown();
  }
  // JobDescription of a file that defines `defs` and describes the job as `text`.
  std::string Describe(const std::string& defs, const std::string& text,
                       const std::string& queue = "queue") {
    auto c =
        MustParse("executable = prog\n" + defs + "\ndescription = " + text + "\n" + queue + "\n");
    if (c.procs.empty()) return "<no job>";
    return StringLiteral(Get(c, "JobDescription")).value_or("<not a string>");
  }
};

struct MacroCase {
  const char* defs;
  const char* text;  // value of `description =`
  const char* want;  // "{dir}" is the scratch directory
};

const MacroCase kFilenameCases[] = {
    {"f = /data/run/input.tar.gz", "$Fp(f)", "/data/run/"},
    {"f = /data/run/input.tar.gz", "$Fpb(f)", "/data/run"},
    {"f = /data/run/input.tar.gz", "$Fn(f)", "input.tar"},
    {"f = /data/run/input.tar.gz", "$Fx(f)", ".gz"},
    {"f = /data/run/input.tar.gz", "$Fxb(f)", "gz"},
    {"f = /data/run/input.tar.gz", "$Fnx(f)", "input.tar.gz"},
    {"f = /data/run/input.tar.gz", "$Fpn(f)", "/data/run/input.tar"},
    {"f = /data/run/input.tar.gz", "$Fd(f)", "run/"},
    {"f = /data/run/input.tar.gz", "$Fdb(f)", "run"},
    {"f = /data/run/input.tar.gz", "$Fdd(f)", "data/run/"},
    {"f = /data/run/input.tar.gz", "$Fdn(f)", "run/input.tar"},
    {"f = /data/run/input.tar.gz", "$Fq(f)", "\"/data/run/input.tar.gz\""},
    {"f = /data/run/input.tar.gz", "$Fqa(f)", "'/data/run/input.tar.gz'"},
    {"f = /data/run/input.tar.gz", "$Fw(f)", "\\data\\run\\input.tar.gz"},
    {"f = /data/run/input.tar.gz", "$BASENAME(f)", "input.tar.gz"},
    {"f = /data/run/input.tar.gz", "$DIRNAME(f)", "/data/run/"},
    {"f = /data/run/input.tar.gz", "$F(f)", "/data/run/input.tar.gz"},
    {"w = C:\\x\\y.txt", "$Fu(w)", "C:/x/y.txt"},
    {"q = \"quoted name.txt\"", "$Fn(q)", "quoted name"},
    {"plain = file.txt", "$Fn(plain)[$Fp(plain)]", "file[]"},
    {"", "$Fn(/a/b.c)", "b"},
    {"rel = sub/file.txt", "$Ff(rel)", "{dir}/sub/file.txt"},
    {"rel = ./file.txt\ninitialdir = subdir", "$Ff(rel)", "{dir}/subdir/file.txt"},
    {"", "$Fp(SUBMIT_FILE)prog $Fnx(SUBMIT_FILE) $Fn(SUBMIT_FILE)", "prog job.sub job"},
    {"", "$Ffp(SUBMIT_FILE)", "{dir}/"},
};

const MacroCase kValueCases[] = {
    {"", "$INT(3*7)", "21"},
    {"sum = 1 + 2", "$INT(sum)", "3"},
    {"x = 42", "$INT(x,%04d)-$INT(x,%x)", "0042-2a"},
    {"", "$INT(2.7)", "2"},
    {"", "$REAL(1/4.0)", "0.25"},
    {"x = 3", "$REAL(x,%.2f)-$REAL(x)", "3.00-3"},
    {"s = \"a b\"", "$STRING(s)", "a b"},
    {"plain = file.txt", "$STRING(plain)", "file.txt"},
    {"", "$EVAL(2+3) $EVAL(1 > 2) $EVAL(strcat(\"a\", \"b\"))", "5 false ab"},
    {"", "$CHOICE(1, a, b, c)", "b"},
    {"idx = 2\nlist = x, y, z", "$CHOICE(idx, list)", "z"},
    {"f = /data/run/input.tar.gz", "$SUBSTR(f, 6)|$SUBSTR(f, -6)|$SUBSTR(f,1,4)|$SUBSTR(f,-6,3)",
     "run/input.tar.gz|tar.gz|data|tar"},
    {"", "$RANDOM_INTEGER(10, 20, 5) $RANDOM_CHOICE(a, b, c)", "15 b"},
    {"pick = p, q, r", "$RANDOM_CHOICE(pick)", "q"},
    {"", "$ENV(KITE_MACRO_TEST)", "from env"},
    {"", "$ENV(KITE_MACRO_UNSET)", "UNDEFINED"},
    {"", "$ENV(KITE_MACRO_UNSET:dflt)", "dflt"},
    {"", "$(SUBMIT_FILE) $(SUBMIT_TIME) $(Year)-$(Month)-$(Day)", "job.sub 1767225600 2026-01-01"},
    {"", "$(JobId) [$(Node)] $(ARCH) $(OPSYS) $(IsLinux)$(IsWindows)", "42.0 [] X86_64 LINUX 10"},
    {"", "$(Cluster).$(ClusterId).$(Process).$(ProcId).$(Step).$(Row).$(ItemIndex)",
     "42.42.0.0.0.0.0"},
    {"", "$(DOLLAR)(x) $$(OpSys)", "$(x) $$(OpSys)"},
};

TEST_F(MacrosTest, FilenameFunctions) {
  Write("subdir/file.txt", "");
  for (const auto& tc : kFilenameCases) {
    SCOPED_TRACE(std::string(tc.defs) + " | " + tc.text);
    EXPECT_EQ(Describe(tc.defs, tc.text), D(tc.want));
  }
}

TEST_F(MacrosTest, ValueFunctionsAndBuiltins) {
  for (const auto& tc : kValueCases) {
    SCOPED_TRACE(std::string(tc.defs) + " | " + tc.text);
    EXPECT_EQ(Describe(tc.defs, tc.text), D(tc.want));
  }
}

// HTCondor's regression test ref.sub: $INT() of a macro that adds two queue items.
TEST_F(MacrosTest, IntOfQueueItems) {
  auto c = MustParse(
      "executable = prog\narguments = $(paramset) $(chunk) $INT(argsum)\n"
      "argsum = $(paramset) + $(chunk)\n"
      "queue paramset,chunk from (\n70 110\n216 142\n)\n");
  EXPECT_EQ(JobArgs(c, 0), (std::vector<std::string>{"70", "110", "180"}));
  EXPECT_EQ(JobArgs(c, 1), (std::vector<std::string>{"216", "142", "358"}));
}

// Queue items hold macros too: they are expanded where the item is used (HTCondor's
// procexe.sub: `queue item from ( $Fp(SUBMIT_FILE)cmd_true.cmd )`).
TEST_F(MacrosTest, QueueItemsAreExpanded) {
  auto c = MustParse(
      "base = /opt\nexecutable = prog\narguments = $(x)\n"
      "queue x from (\n  $(base)/a\n  $Fn(SUBMIT_FILE).$(Process)\n)\n");
  EXPECT_EQ(JobArgs(c, 0), std::vector<std::string>{"/opt/a"});
  EXPECT_EQ(JobArgs(c, 1), std::vector<std::string>{"job.1"});
}

TEST_F(MacrosTest, RandomValuesDifferPerJob) {
  uint32_t n = 0;
  options_.random = [&n] { return n++; };
  auto c = MustParse("executable = prog\narguments = $RANDOM_INTEGER(0, 99)\nqueue 3\n");
  EXPECT_EQ(JobArgs(c, 0), std::vector<std::string>{"0"});
  EXPECT_EQ(JobArgs(c, 2), std::vector<std::string>{"2"});
}

TEST_F(MacrosTest, ErrorsNameTheFunction) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"$CHOICE(5, a, b)", "job.sub:2: $CHOICE(): index 5 is out of range (the list has 2 items)"},
      {"$CHOICE(0, nolist)", "job.sub:2: $CHOICE(): no list named nolist"},
      {"$CHOICE(x, a, b)", "job.sub:2: $CHOICE(): 'x' is not an integer"},
      {"$INT(7,%s)", "job.sub:2: $INT(): '%s' is not a printf format for one integer"},
      {"$INT(abc)", "job.sub:2: $INT(): 'abc' does not evaluate to an integer"},
      {"$REAL(\"x\")", "job.sub:2: $REAL(): '\"x\"' does not evaluate to a number"},
      {"$RANDOM_INTEGER(5, 1)", "job.sub:2: $RANDOM_INTEGER(): needs min <= max"},
      {"$SUBSTR(x)", "job.sub:2: $SUBSTR() needs a name, a start and an optional length"},
      {"$FOO(x)", "job.sub:2: unknown macro function $FOO()"},
      {"$Fn(x", "job.sub:2: missing ')' after $Fn("},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    std::string msg =
        ErrorOf(std::string("executable = prog\ndescription = ") + c.text + "\nqueue\n");
    EXPECT_EQ(msg.substr(0, std::string(c.message).size()), c.message) << msg;
  }
}

}  // namespace
}  // namespace kite::submit
