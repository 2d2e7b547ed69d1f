// The submit language as an HTCondor user meets it: commands HTCondor knows are never dropped,
// include statements, queue statements with expressions, commands and comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "classad/expr.h"
#include "common/files.h"
#include "submit/commands.h"
#include "submit/submit_file.h"
#include "submit_test_util.h"

namespace kite::submit {
namespace {

using LanguageTest = SubmitTest;
using Strings = std::vector<std::string>;

bool WarnsNeverUsed(const ParsedCluster& c) {
  for (const auto& w : c.warnings) {
    if (w.find("never used") != std::string::npos) return true;
  }
  return false;
}

// Commands that used to be taken for macros, so that the file was accepted and the command lost
// with only a "macro never used" warning.
const struct {
  const char* lines;
  const char* attr;
  const char* expr;
} kOnceDropped[] = {
    {"request_gpus = 2", "RequestGPUs", "2"},
    {"success_exit_code = 3", "JobSuccessExitCode", "3"},
    {"success_exit_code = 3", "OnExitRemove",
     "NumJobCompletions > JobMaxRetries || ExitCode =?= JobSuccessExitCode"},
    {"retry_request_memory = 4GB", "TransformOnEvict", "\"RequestMemory\""},
    {"email_attributes = RemoteHost, ExitCode", "EmailAttributes", "\"RemoteHost,ExitCode\""},
    {"want_graceful_removal = true", "WantGracefulRemoval", "true"},
    {"max_idle = 10", "JobMaterializeMaxIdle", "10"},
    {"machine_count = 4\nWantParallelScheduling = true", "MinHosts", "4"},
    {"machine_count = 4\nWantParallelScheduling = true", "MaxHosts", "4"},
    {"args = -v in.txt", "Args", "\"-v in.txt\""},
    {"env = A=1;B=two", "Env", "\"A=1;B=two\""},
    {"job_lease_duration = 7*60", "JobLeaseDuration", "7*60"},
    {"request_memory = 1GB", "RequestMemory", "1024"},
    {"request_memory = 2G", "RequestMemory", "2048"},
    {"request_memory = 8 gb", "RequestMemory", "8192"},
    {"request_memory = 700MB", "RequestMemory", "700"},
    {"request_disk = 2G", "RequestDisk", "2097152"},
    {"request_disk = 100 MB", "RequestDisk", "102400"},
    {"request_disk = 2048", "RequestDisk", "2048"},
};

// condor_submit's conditionals: `if`/`elif`/`else`/`endif`, nested, over `defined NAME`,
// `version OP X.Y[.Z]`, boolean words and $(...) giving one; a branch not taken is not read at all.
TEST_F(LanguageTest, ConditionalsChooseWhichLinesAreRead) {
  // HTCondor's own example (a DAG's VARS PREPEND defines var1 before the file is read).
  const std::string manual =
      "executable = /bin/true\n"
      "if defined var1\n"
      "     Arguments = \"$(var1) was prepended\"\n"
      "else\n"
      "     Arguments = \"No variables prepended\"\n"
      "endif\n"
      "queue\n";
  EXPECT_EQ(Get(MustParse(manual), "Arguments"), "\"No variables prepended\"");
  EXPECT_EQ(Get(MustParse("var1 = A\n" + manual), "Arguments"), "\"A was prepended\"");
  EXPECT_EQ(Get(MustParse("var1 =\n" + manual), "Arguments"), "\"No variables prepended\"")
      << "a macro with no value is not defined";

  const std::string chain =
      "executable = /bin/true\n"
      "if $(mode) == x\n"  // not simple: only reached when an earlier branch was not taken
      "elif false\n"
      "  arguments = \"one\"\n"
      "elif ! defined mode\n"
      "  arguments = \"two\"\n"
      "elif $(mode)\n"
      "  arguments = \"three\"\n"
      "  if version >= 8.9\n"
      "    request_cpus = 2\n"
      "  elif version < 8.9\n"
      "    request_cpus = 3\n"
      "  endif\n"
      "else\n"
      "  arguments = \"four\"\n"
      "  queue 5\n"
      "endif\n"
      "queue\n";
  // `if $(mode) == x` is evaluated: with mode undefined it is "== x", not a simple condition.
  EXPECT_NE(ErrorOf(chain).find("is not a condition condor_submit reads"), std::string::npos);
  std::string shorter = chain;
  shorter.replace(shorter.find("if $(mode) == x"), 15, "if no");
  EXPECT_EQ(Get(MustParse(shorter), "Arguments"), "\"two\"");
  auto yes = MustParse("mode = yes\n" + shorter);
  EXPECT_EQ(Get(yes, "Arguments"), "\"three\"");
  EXPECT_EQ(Get(yes, "RequestCpus"), "2");
  auto off = MustParse("mode = 0\n" + shorter);
  EXPECT_EQ(Get(off, "Arguments"), "\"four\"");
  EXPECT_EQ(off.procs.size(), 6u) << "the queue in the branch read counts";

  for (const auto& [cond, holds] :
       std::vector<std::pair<std::string, bool>>{{"version == 25.0", true},
                                                 {"version == 25.0.0", true},
                                                 {"version >= 25.1", false},
                                                 {"version > 8.9.7", true},
                                                 {"version != 24.0", true},
                                                 {"TRUE", true},
                                                 {"1", true},
                                                 {"No", false},
                                                 {"!true", false},
                                                 {"! defined nothing", true}}) {
    auto c =
        MustParse("executable = /bin/true\nif " + cond + "\narguments = \"in\"\nendif\nqueue\n");
    EXPECT_EQ(Get(c, "Arguments") == "\"in\"", holds) << cond;
  }
}

TEST_F(LanguageTest, MalformedConditionalsAreRefusedSayingWhere) {
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"if true\nqueue\n", "job.sub:2: this 'if' has no 'endif'"},
           {"endif\nqueue\n", "job.sub:2: 'endif' without an 'if' before it"},
           {"else\nqueue\n", "'else' without an 'if'"},
           {"if true\nelse\nelse\nendif\nqueue\n", "job.sub:4: 'else' after this block's 'else'"},
           {"if true\nelse\nelif true\nendif\nqueue\n", "'elif' after this block's 'else'"},
           {"if\nendif\nqueue\n", "'if' needs a condition"},
           {"if maybe\nendif\nqueue\n", "'maybe' is not a condition"},
           {"if version >= 8\nendif\nqueue\n", "'version' needs OP X.Y"},
           {"if version ~ 8.1\nendif\nqueue\n", "'version' takes ==, !="},
           {"if defined a b\nendif\nqueue\n", "'defined' needs a macro name"},
           {"if true\nendif now\nqueue\n", "'endif' takes nothing after it"},
           {"if true\nelse if false\nendif\nqueue\n", "'else' takes nothing after it"}}) {
    EXPECT_NE(ErrorOf("executable = /bin/true\n" + text).find(says), std::string::npos)
        << text << " -> " << ErrorOf("executable = /bin/true\n" + text);
  }
}

TEST_F(LanguageTest, CommandsOnceDroppedSetTheirAttributes) {
  for (const auto& tc : kOnceDropped) {
    SCOPED_TRACE(tc.lines);
    auto c = MustParse(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    EXPECT_EQ(Get(c, tc.attr), tc.expr);
    EXPECT_FALSE(WarnsNeverUsed(c)) << c.warnings[0];
  }
}

// condor_submit expands a macro nobody defined to nothing (DAGMan's tests rely on it: a node's
// VARS define some of its submit file's macros); Kite says so in a warning naming file and line.
TEST_F(LanguageTest, AnUndefinedMacroExpandsToNothingWithAWarning) {
  auto c = MustParse(
      "executable = prog\narguments = a $(NOPE) b\nA = $(ALSO_NOT)\n"
      "output = $(A)x.out\nqueue\n");
  EXPECT_EQ(JobArgs(c), (Strings{"a", "b"}));
  EXPECT_EQ(Get(c, "Out"), "\"x.out\"");
  bool nope = false, also = false;
  for (const auto& w : c.warnings) {
    nope = nope || w.find(":2: warning: $(NOPE) is not defined") != std::string::npos;
    also = also || w.find(":3: warning: $(ALSO_NOT) is not defined") != std::string::npos;
  }
  EXPECT_TRUE(nope && also) << ::testing::PrintToString(c.warnings);
}

// The short forms reach the job: argv and environment.
TEST_F(LanguageTest, ArgsAndEnvShortFormsReachTheJob) {
  auto c = MustParse("executable = prog\nargs = one two\nenv = A=1\nqueue\n");
  EXPECT_EQ(JobArgs(c), (Strings{"one", "two"}));
  EXPECT_EQ(Get(c, "Env"), "\"A=1\"");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
}

// A sample value for a command of `form`, and the attribute text condor_submit makes of it.
struct Sample {
  const char* value;
  const char* expr;
};
Sample SampleFor(Form form) {
  switch (form) {
    case Form::kString:
    case Form::kUnquoted:
      return {"abc", "\"abc\""};
    case Form::kList:
      return {"a, b", "\"a,b\""};
    case Form::kBool:
      return {"true", "true"};
    case Form::kInt:
    case Form::kUInt:
      return {"2*3", "6"};
    case Form::kExpr:
      return {"1 + 2", "1 + 2"};
    case Form::kLogPath:
      return {"x.log", "\"{dir}/x.log\""};
    case Form::kSpecial:
      break;
  }
  return {nullptr, nullptr};
}

// Every entry of the table: a refused command fails naming itself, a simple one sets its
// attribute in HTCondor's form, and none is taken for a macro.
TEST_F(LanguageTest, EveryCommandOfTheTableIsHandled) {
  size_t refused = 0, simple = 0;
  for (const auto& info : AllCommands()) {
    std::string key = info.key;
    SCOPED_TRACE(key);
    if (key.find('*') != std::string::npos) continue;  // a family, tested below
    EXPECT_TRUE(IsCommand(key));
    EXPECT_EQ(FindCommand(key), &info);
    std::string base = "executable = prog\n";
    if (info.use == KiteUse::kRefused) {
      ++refused;
      std::string msg = ErrorOf(base + key + " = somevalue\nqueue\n");
      EXPECT_EQ(msg.rfind("job.sub:2: " + key + " is not supported by Kite (", 0), 0u) << msg;
      continue;
    }
    Sample s = SampleFor(info.form);
    if (s.value == nullptr || info.attr == nullptr) continue;
    ++simple;
    auto c = MustParse(base + key + " = " + s.value + "\nqueue\n");
    EXPECT_EQ(Get(c, info.attr), D(s.expr));
    EXPECT_FALSE(WarnsNeverUsed(c));
  }
  EXPECT_GT(refused, 20u);
  EXPECT_GT(simple, 50u);
}

// docs/submit-commands.md lists every command with its attribute and what Kite does with it.
TEST_F(LanguageTest, TheDocsListTheTable) {
  auto doc = ReadFile(std::string(KITE_SOURCE_DIR) + "/docs/submit-commands.md");
  ASSERT_TRUE(doc) << doc.error().message();
  for (const auto& info : AllCommands()) {
    std::string row = "\n| `" + std::string(info.key) + "`";
    size_t at = doc->find(row);
    ASSERT_NE(at, std::string::npos) << info.key << " is not in docs/submit-commands.md";
    std::string line = doc->substr(at + 1, doc->find('\n', at + 1) - at - 1);
    const char* use = info.use == KiteUse::kActs      ? "| acts"
                      : info.use == KiteUse::kRecords ? "| records"
                                                      : "| refused";
    EXPECT_NE(line.find(use), std::string::npos) << line;
    if (info.attr != nullptr) {
      EXPECT_NE(line.find("| `" + std::string(info.attr) + "` |"), std::string::npos) << line;
    }
    if (info.note[0] != '\0') {
      EXPECT_NE(line.find(info.note), std::string::npos) << line;
    }
  }
}

TEST_F(LanguageTest, CommandFamilies) {
  const struct {
    const char* lines;
    const char* attr;
    const char* expr;
  } cases[] = {
      {"request_widgets = 2", "RequestWidgets", "2"},
      {"require_widgets = Type == \"x\"", "RequireWidgets", "Type == \"x\""},
      {"universe = grid\ngrid_resource = ec2 https://ec2.example.org/\nec2_access_key_id = key\n"
       "ec2_secret_access_key = key\nec2_ami_id = ami-1\nec2_tag_Owner = me",
       "EC2TagOwner", "\"me\""},
  };
  Write("key", "secret\n", 0600);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.lines);
    auto c = MustParse(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    EXPECT_EQ(Get(c, tc.attr), tc.expr);
  }
}

// machine_count without WantParallelScheduling does nothing in HTCondor either: Kite says so.
TEST_F(LanguageTest, MachineCountAloneWarnsThatItDoesNothing) {
  auto c = MustParse("executable = prog\nmachine_count = 4\nqueue\n");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0].rfind("job.sub:2: warning: machine_count has no effect", 0), 0u)
      << c.warnings[0];
}

// A recorded command whose effect the job would expect, and will not get from Kite, warns at its
// line, naming itself.
TEST_F(LanguageTest, RecordedCommandsWithoutEffectWarn) {
  const struct {
    const char* lines;
    const char* command;
  } cases[] = {
      {"max_idle = 10", "max_idle"},
      {"max_materialize = 10", "max_materialize"},
      {"leave_in_queue = true", "leave_in_queue"},
      {"noop_job = true", "noop_job"},
      {"universe = local\ncron_hour = 3", "cron_hour"},
      {"universe = local\ndeferral_time = 1767225600", "deferral_time"},
      {"request_gpus = 1", "request_gpus"},
      {"concurrency_limits = db", "concurrency_limits"},
      {"+SingularityImage = \"/cvmfs/x.sif\"", "+SingularityImage"},
      {"arc_rte = ENV/PYTHON-3", "arc_rte"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.lines);
    auto c = MustParse(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    int line = 2 + static_cast<int>(std::count(tc.lines, tc.lines + std::strlen(tc.lines), '\n'));
    ASSERT_EQ(c.warnings.size(), 1u);
    std::string want = "job.sub:" + std::to_string(line) + ": warning: " + tc.command;
    EXPECT_EQ(c.warnings[0].rfind(want, 0), 0u) << c.warnings[0];
  }
}

TEST_F(LanguageTest, RefusalsNameTheCommand) {
  const struct {
    const char* lines;
    const char* message;
  } cases[] = {
      {"universe = docker\ndocker_image = debian", "job.sub:1: universe = docker is not supported"},
      {"universe = vm", "job.sub:1: universe = vm is not supported by Kite"},
      {"container_image = x.sif", "job.sub:2: container_image is not supported by Kite"},
      {"log_xml = true", "job.sub:2: log_xml"},
      {"copy_to_spool = true", "job.sub:2: copy_to_spool"},
      {"use_oauth_services = scitokens", "job.sub:2: use_oauth_services is not supported by Kite"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.lines);
    std::string msg = ErrorOf(std::string("executable = prog\n") + tc.lines + "\nqueue\n");
    std::string want = tc.message;
    if (std::string(tc.lines).rfind("universe", 0) == 0) {
      msg = ErrorOf(std::string(tc.lines) + "\nexecutable = prog\nqueue\n");
    }
    EXPECT_EQ(msg.substr(0, want.size()), want) << msg;
  }
}

TEST_F(LanguageTest, IncludeFile) {
  ASSERT_TRUE(MakeDirs(dir_ + "/conf"));
  Write("conf/common.sub", "output = out.$(Process)\ninclude : more.sub\n");
  Write("conf/more.sub", "request_cpus = 2\n");
  auto c = MustParse("executable = prog\ninclude : conf/common.sub\nqueue 2\n");
  ASSERT_EQ(c.procs.size(), 2u);
  EXPECT_EQ(Get(c, "Out", 1), "\"out.1\"");
  EXPECT_EQ(Get(c, "RequestCpus"), "2");  // nested include, relative to the including file
}

TEST_F(LanguageTest, IncludeErrorsNameTheIncludedFile) {
  Write("bad.sub", "# ok\nrequest_cpus = 0\n");
  std::string msg = ErrorOf("executable = prog\ninclude : bad.sub\nqueue\n");
  EXPECT_NE(msg.find("bad.sub:2: request_cpus must be at least 1"), std::string::npos) << msg;
  msg = ErrorOf("executable = prog\ninclude : missing.sub\nqueue\n");
  EXPECT_EQ(msg.rfind("job.sub:2: include", 0), 0u) << msg;
  Write("loop.sub", "include : loop.sub\n");
  msg = ErrorOf("executable = prog\ninclude : loop.sub\nqueue\n");
  EXPECT_NE(msg.find("include"), std::string::npos) << msg;
}

// `include command : CMD` runs CMD with /bin/sh in the submit file's directory; its output is
// submit text.
TEST_F(LanguageTest, IncludeCommandRunsARealCommand) {
  auto c = MustParse(
      "executable = prog\n"
      "include command : printf 'arguments = from %s\\nrequest_cpus = 3\\n' `pwd`\n"
      "queue\n");
  EXPECT_EQ(JobArgs(c), (Strings{"from", dir_}));
  EXPECT_EQ(Get(c, "RequestCpus"), "3");
  std::string msg = ErrorOf("executable = prog\ninclude command : exit 3\nqueue\n");
  EXPECT_NE(msg.find("exit"), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("job.sub:2: ", 0), 0u) << msg;
}

TEST_F(LanguageTest, CommandsCanBeRefusedByTheCaller) {
  options_.allow_commands = false;
  std::string msg = ErrorOf("executable = prog\ninclude command : echo x\nqueue\n");
  EXPECT_EQ(msg.rfind("job.sub:2: ", 0), 0u) << msg;
}

TEST_F(LanguageTest, QueueFromARealCommand) {
  auto c = MustParse("executable = prog\narguments = $(n)\nqueue n from seq 7 9 |\n");
  ASSERT_EQ(c.procs.size(), 3u);
  EXPECT_EQ(JobArgs(c, 2), Strings{"9"});
}

TEST_F(LanguageTest, QueueCountIsAnExpression) {
  auto c = MustParse("executable = prog\nqueue 15*1000\n");
  EXPECT_EQ(c.procs.size(), 15000u);
  c = MustParse("executable = prog\nN = 3\nqueue $(N) * 2\n");
  EXPECT_EQ(c.procs.size(), 6u);
}

// A '#' line in an item file is a comment and a blank line is nothing: neither becomes a job.
TEST_F(LanguageTest, CommentsAndBlankLinesOfItemFilesAreNotItems) {
  Write("items.txt", "# the inputs\nalpha\n\n   # indented comment\nbeta\n   \n");
  auto c = MustParse("executable = prog\narguments = $(x)\nqueue x from items.txt\n");
  ASSERT_EQ(c.procs.size(), 2u);
  EXPECT_EQ(JobArgs(c, 0), Strings{"alpha"});
  EXPECT_EQ(JobArgs(c, 1), Strings{"beta"});
}

// condor_submit FILE NAME=value and -append "cmd = value".
TEST_F(LanguageTest, CommandLineLines) {
  options_.before_lines = {"N = 2", "out = default.txt"};
  options_.append_lines = {"request_cpus = 4"};
  auto c = MustParse("executable = prog\noutput = $(out)\nrequest_cpus = 1\nqueue $(N)\n");
  EXPECT_EQ(c.procs.size(), 2u);
  EXPECT_EQ(Get(c, "Out"), "\"default.txt\"");
  EXPECT_EQ(Get(c, "RequestCpus"), "4");  // -append comes last
  options_.before_lines = {"out = x.txt"};
  c = MustParse("executable = prog\nout = file.txt\noutput = $(out)\nqueue\n");
  EXPECT_EQ(Get(c, "Out"), "\"file.txt\"");  // the file overrides NAME=value
  options_.before_lines = {};
  options_.append_lines = {"bogus line"};
  std::string msg = ErrorOf("executable = prog\nqueue\n");
  EXPECT_EQ(msg.rfind("-append:1: expected 'command = value'", 0), 0u) << msg;
}

// Every attribute a file can produce is valid ClassAd text, even with odd values.
TEST_F(LanguageTest, AttributesAreValidClassAdText) {
  auto c = MustParse(
      "executable = prog\n"
      "description = say \"hi\" \\ there\n"
      "arguments = \"'it''s' 'a b' \"\"q\"\"\"\n"
      "environment = \"X='1 2' Y=\"\"z\"\"\"\n"
      "queue\n");
  for (const auto& a : ProcAttrs(c, 0)) {
    EXPECT_TRUE(classad::ParseExpr(a.expr)) << a.name << " = " << a.expr;
  }
  EXPECT_EQ(JobArgs(c), (Strings{"it's", "a b", "\"q\""}));
}

}  // namespace
}  // namespace kite::submit
