// Malformed submit files: each fails as a whole with "file:line: message".
#include <gtest/gtest.h>

#include <string>

#include "grid/grid_type.h"
#include "submit/submit_file.h"
#include "submit_test_util.h"

namespace kite::submit {
namespace {

using ErrorsTest = SubmitTest;

struct ErrorCase {
  const char* text;
  int line;
  const char* message;  // a part of the message after "job.sub:LINE: "
};

const ErrorCase kErrorCases[] = {
    // Lines that are nothing the language knows.
    {"executable = prog\nfoo bar\nqueue\n", 2, "expected 'command = value'"},
    {"executable = prog\n1abc = 2\nqueue\n", 2, "'1abc' is not a valid command or macro name"},
    {"executable = prog\n+ = 2\nqueue\n", 2, "'' is not a valid attribute name"},
    {"executable = prog\nqueue = 3\n", 2, "'queue' is a statement"},
    {"executable = prog\n+ProcId = 3\nqueue\n", 2, "ProcId is set by Kite"},
    // Invalid values.
    {"universe = pvm\nexecutable = prog\nqueue\n", 1, "universe = pvm is not supported by Kite"},
    {"universe = sideways\nexecutable = prog\nqueue\n", 1,
     "universe = sideways is not a universe HTCondor knows"},
    {"executable = prog\nhold = maybe\nqueue\n", 2, "hold must be true or false, not 'maybe'"},
    {"executable = prog\nstream_output = 2\nqueue\n", 2, "stream_output must be true or false"},
    {"executable = prog\nnotification = sometimes\nqueue\n", 2, "notification must be Never"},
    {"executable = prog\nmax_retries = -2\nqueue\n", 2, "must be a non-negative integer"},
    {"executable = prog\npriority = high\nqueue\n", 2, "priority must be an integer"},
    {"executable = prog\ncredential_alarm = soon\nqueue\n", 2, "must be a duration"},
    {"executable = prog\nremote_io_method = nfs\nqueue\n", 2,
     "remote_io_method must be auto, fuse or preload, not 'nfs'"},
    {"executable = prog\ncredential_alarm = 2h,,30m\nqueue\n", 2, "must be a duration"},
    {"executable = prog\ncredential_alarm = 0\nqueue\n", 2, "must be a duration"},
    {"executable = prog\ncredential_alarm = 2h,\nqueue\n", 2, "must be a duration"},
    {"executable = prog\nrequest_memory = 2XB\nqueue\n", 2, "'2XB' is not a size"},
    {"executable = prog\nrequest_memory = -1\nqueue\n", 2, "must not be negative"},
    {"executable = prog\nrequest_cpus = 0\nqueue\n", 2, "request_cpus must be at least 1"},
    {"executable = prog\nrequest_cpus = -2\nqueue\n", 2, "request_cpus must be at least 1"},
    {"executable = prog\nrequest_cpus = 2.5\nqueue\n", 2,
     "request_cpus must be a whole number of CPUs, not '2.5'"},
    {"executable = prog\nrequest_cpus = 2GB\nqueue\n", 2, "whole number of CPUs, not '2GB'"},
    {"executable = prog\nbatch_runtime = forever\nqueue\n", 2, "batch_runtime must be a duration"},
    {"universe = grid\ngrid_resource = kite h:1/slurm\nexecutable = prog\n"
     "batch_queue = short;reboot\nqueue\n",
     4, "batch_queue must be 1 to 64 of A-Z a-z 0-9 _ . + -"},
    {"universe = grid\ngrid_resource = kite h:1/slurm\nexecutable = prog\n"
     "batch_project = 'phys 1'\nqueue\n",
     4,
     "batch_project must be 1 to 64 of A-Z a-z 0-9 _ . + - (a name the site's batch system "
     "knows), not ''phys 1''"},
    {"executable = prog\nshould_transfer_files = maybe\nqueue\n", 2,
     "must be one of YES,NO,IF_NEEDED"},
    {"executable = prog\narguments = \"a 'b\"\nqueue\n", 2, "arguments: unbalanced single quote"},
    {"executable = prog\narguments = \"unterminated\nqueue\n", 2, "must end with '\"'"},
    {"executable = prog\nenvironment = \"A=1 B\"\nqueue\n", 2, "'B' is not NAME=VALUE"},
    {"universe = grid\nexecutable = prog\nqueue\n", 1, "universe = grid needs grid_resource"},
    {"universe = grid\ngrid_resource = gt2 host\nexecutable = prog\nqueue\n", 2,
     "unsupported grid type 'gt2'"},
    {"universe = grid\ngrid_resource = ec2\nexecutable = prog\nqueue\n", 2,
     "EC2 grid jobs need a service URL"},
    {"universe = grid\ngrid_resource = kite host\nexecutable = prog\nqueue\n", 2,
     "needs HOST:PORT[/BATCH]"},
    {"universe = grid\ngrid_resource = kite host:99999\nexecutable = prog\nqueue\n", 2,
     "needs HOST:PORT[/BATCH]"},
    // Bad expressions.
    {"executable = prog\nrequirements = (Memory > \nqueue\n", 2, "requirements: bad expression"},
    {"executable = prog\nperiodic_remove = a b\nqueue\n", 2, "periodic_remove: bad expression"},
    {"executable = prog\non_exit_remove = ExitCode ==\nqueue\n", 2,
     "on_exit_remove: bad expression"},
    {"executable = prog\n+Foo = 1 +\nqueue\n", 2, "+Foo: bad expression"},
    {"executable = prog\nMY.Foo = \"open\nqueue\n", 2, "+Foo: bad expression"},
    {"executable = prog\n+Foo =\nqueue\n", 2, "+Foo needs a value"},
    // The executable.
    {"output = x\nqueue\n", 2, "no executable given"},
    {"executable = missing\nqueue\n", 1, "/missing does not exist"},
    {"executable = data.txt\nqueue\n", 1, "/data.txt is not executable"},
    {"executable = empty.sh\nqueue\n", 1, "/empty.sh is empty"},
    {"executable = subdir\nqueue\n", 1, "/subdir is a directory"},
    {"universe = local\n\nexecutable = missing\nqueue\n", 3, "does not exist"},
    // Files the job reads and writes.
    {"universe = local\nexecutable = prog\ninput = nope.txt\nqueue\n", 3,
     "input file {dir}/nope.txt does not exist"},
    {"executable = prog\ninput = subdir\nqueue\n", 2, "is a directory"},
    {"executable = prog\ninitialdir = nodir\nqueue\n", 2, "initialdir {dir}/nodir is not a dir"},
    {"executable = prog\noutput = nodir/out\nqueue\n", 2,
     "output: directory {dir}/nodir does not exist"},
    {"executable = prog\nerror = nodir/err\nqueue\n", 2, "error: directory"},
    {"executable = prog\nlog = nodir/log\nqueue\n", 2, "log: directory"},
    {"executable = prog\ntransfer_input_files = data.txt, gone.txt\nqueue\n", 2,
     "transfer_input_files: {dir}/gone.txt does not exist"},
    {"executable = prog\ninput = in.$(Process)\nqueue 3\n", 2, "{dir}/in.2 does not exist"},
    // Queue statements.
    {"executable = prog\nqueue -1\n", 2, "queue count must be a non-negative integer, not '-1'"},
    {"executable = prog\nqueue many\n", 2, "expected a count, or 'in'"},
    {"executable = prog\nqueue 2 3\n", 2, "queue count must be a non-negative integer, not '2 3'"},
    {"executable = prog\nqueue 2.5\n", 2, "queue count must be a non-negative integer, not '2.5'"},
    {"executable = prog\nqueue X in (a, b\n", 2, "never closed"},
    {"executable = prog\nqueue X in (a, b) c\n", 2, "unexpected text after ')'"},
    {"executable = prog\nqueue X in (\n a\n) junk\n", 4, "unexpected text after ')'"},
    {"executable = prog\nqueue X from missing.txt\n", 2, "cannot read item file {dir}/missing"},
    {"executable = prog\nqueue X from\n", 2, "missing file name"},
    {"executable = prog\nqueue X from ./no_such_list.sh |\n", 2,
     "queue ... from: command './no_such_list.sh' exited with status 127"},
    {"executable = prog\nqueue X, X in (a)\n", 2, "appears twice"},
    {"executable = prog\nqueue 1x in (a)\n", 2, "non-negative integer, not '1x'"},
    {"executable = prog\nqueue X in [1:2:0] (a)\n", 2, "slice step must be positive"},
    {"executable = prog\nqueue X in [1] (a)\n", 2, "expected [start:stop:step]"},
    {"executable = prog\nqueue X in [1:2 (a)\n", 2, "missing its ']'"},
    // Macros (one nobody defines is not an error: it expands to nothing, with a warning).
    {"A = $(B)\nB = $(A)\nexecutable = prog\narguments = $(A)\nqueue\n", 1,
     "A is defined in terms of itself (A -> B -> A)"},
    {"A = $(A)\nexecutable = prog\narguments = $(A)\nqueue\n", 1, "defined in terms of itself"},
    {"executable = prog\narguments = $(foo\nqueue\n", 2, "missing ')' after $("},
    {"executable = prog\narguments = $(a b)\nqueue\n", 2, "bad macro reference $(a b)"},
    {"executable = prog\narguments = $NOPE(3)\nqueue\n", 2, "unknown macro function $NOPE()"},
    {"executable = prog\narguments = $INT(abc)\nqueue\n", 2,
     "$INT(): 'abc' does not evaluate to an integer"},
    // No queue statement at all.
    {"executable = prog\n", 1, "no queue statement"},
    {"executable = prog\n# queue\n\n", 3, "no queue statement"},
    {"", 1, "no queue statement"},
};

TEST_F(ErrorsTest, EveryErrorNamesFileAndLine) {
  Write("in.0", "");
  Write("in.1", "");
  Write("empty.sh", "", 0755);
  for (const auto& tc : kErrorCases) {
    SCOPED_TRACE(tc.text);
    std::string msg = ErrorOf(tc.text);
    std::string prefix = "job.sub:" + std::to_string(tc.line) + ": ";
    EXPECT_EQ(msg.substr(0, prefix.size()), prefix) << msg;
    EXPECT_NE(msg.find(D(tc.message)), std::string::npos) << msg;
  }
}

// A grid type of the tests' own: one word as its contact, and no output files back.
void AddToyGridType() {
  static const bool added =
      grid::AddGridType({
                            .name = "toy",
                            .display = "toy site",
                            .syntax = "NAME",
                            .example = "box1",
                            .parse = [](std::string_view c) -> Result<grid::GridResource> {
                              if (c.empty() || c.find_first_of(" /:") != std::string_view::npos) {
                                return Fail(ErrorCode::kInvalidInput, "one word");
                              }
                              return grid::GridResource{.host = std::string(c), .port = 1};
                            },
                            .label = [](const grid::GridResource& r) { return r.host; },
                        })
          .has_value();
  EXPECT_TRUE(added);
}

// A grid type added as one registry row is read by that row: its own contact syntax, its name
// in the messages, and the list of types Kite runs.
TEST_F(ErrorsTest, GridResourceIsReadByItsTypesRegistryRow) {
  AddToyGridType();
  auto c = MustParse("universe = grid\ngrid_resource = TOY box1\nexecutable = prog\nqueue\n");
  EXPECT_EQ(Get(c, "GridResource"), "\"toy box1:1\"");
  EXPECT_NE(ErrorOf("universe = grid\ngrid_resource = toy a:b\nexecutable = prog\nqueue\n")
                .find("job.sub:2: grid_resource = toy needs NAME, not 'a:b'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("universe = grid\ngrid_resource = toys x\nexecutable = prog\nqueue\n")
                .find("(Kite runs: kite, arc, gt5, toy)"),
            std::string::npos);
}

// transfer_output_files of a grid job: taken for the types that bring them back (ARC, Kite,
// GRAM5), folders too where the type can; refused, saying so, for one that does not.
TEST_F(ErrorsTest, GridOutputFilesGoToTypesThatBringThemBack) {
  const std::string arc = "universe = grid\ngrid_resource = arc ce.example.org\nexecutable = p\n";
  auto c = MustParse(arc + "transfer_output_files = result.dat, sub/t.csv, out/\nqueue\n");
  EXPECT_EQ(Get(c, "TransferOutput"), "\"result.dat,sub/t.csv,out/\"");
  EXPECT_NE(ErrorOf("universe = grid\ngrid_resource = gt5 gk.example.org\nexecutable = p\n"
                    "transfer_output_files = r.dat, out/\nqueue\n")
                .find("a Globus GRAM5 gatekeeper sends back files, not folders ('out/'"),
            std::string::npos);
  for (const char* bad : {"/abs/x", "../x", "gsiftp://h/x"}) {
    EXPECT_NE(ErrorOf(arc + "transfer_output_files = " + bad + "\nqueue\n")
                  .find("is not the name of a file or folder in the job's directory at the site"),
              std::string::npos)
        << bad;
  }
  auto kite = MustParse(
      "universe = grid\ngrid_resource = kite gk:1\nexecutable = p\n"
      "transfer_output_files = r.dat\nqueue\n");
  EXPECT_EQ(Get(kite, "TransferOutput"), "\"r.dat\"");
  // A type that does not bring them back.
  AddToyGridType();
  EXPECT_NE(ErrorOf("universe = grid\ngrid_resource = toy x\nexecutable = p\n"
                    "transfer_output_files = r.dat\nqueue\n")
                .find("transfer_output_files is not supported for grid jobs to a toy site"),
            std::string::npos);
}

TEST_F(ErrorsTest, ExponentialMacrosAreCutOff) {
  std::string text = "m0 = xxxxxxxxxxxxxxxx\n";
  for (int i = 1; i <= 30; ++i) {
    text += "m" + std::to_string(i) + " = $(m" + std::to_string(i - 1) + ")$(m" +
            std::to_string(i - 1) + ")\n";
  }
  text += "executable = prog\narguments = $(m30)\nqueue\n";
  EXPECT_NE(ErrorOf(text).find("longer than 1 MiB"), std::string::npos);
}

TEST_F(ErrorsTest, NulBytesAreRefused) {
  using namespace std::string_literals;
  std::string text = "executable = prog\nargu\0ments = x\nqueue\n"s;
  EXPECT_EQ(ErrorOf(text), "job.sub:2: NUL character in submit file");
}

TEST_F(ErrorsTest, MessagesForTheExecutable) {
  EXPECT_EQ(ErrorOf("executable = missing\nqueue\n"),
            D("job.sub:1: executable {dir}/missing does not exist"));
  EXPECT_EQ(ErrorOf("output = x\nqueue 2\n"),
            "job.sub:2: no executable given (add 'executable = PROGRAM' before queue)");
}

}  // namespace
}  // namespace kite::submit
