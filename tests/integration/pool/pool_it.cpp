// The personal pool on this desktop's own startd: vanilla jobs matched, run in a sandbox with
// their files transferred, and every failure of a part (startd, agent) survived with no job lost
// or run twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>

#include "common/strings.h"
#include "pool/credential.h"
#include "pool/protocol.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;

// The one child of `parent` whose command line has `name`, or 0.
pid_t ChildNamed(pid_t parent, const std::string& name) {
  auto r = RunCommand({"pgrep", "-P", std::to_string(parent), "-f", name});
  return r.exit_code == 0 ? static_cast<pid_t>(std::stol(r.out)) : 0;
}

class Pool : public ::testing::Test {
 protected:
  // START is true here: the default owner policy depends on this machine's load and keyboard
  // (its own unit test checks it), which a test must not.
  void Start(const std::string& config = "[pool]\nlocal_slots = 2\nlocal_start = true\n") {
    env_ = std::make_unique<KiteEnv>("pool");
    fs::create_directories(env_->home());
    WriteFile(env_->home() + "/config.toml", "[agent]\nkill_grace = 2\n" + config);
    env_->StartAgent();
  }
  // The slot ads `kite status -json` shows.
  boost::json::array Slots() {
    auto r = env_->Kite({"status", "-json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    boost::system::error_code ec;
    auto v = boost::json::parse(r.out, ec);
    return !ec && v.is_array() ? v.as_array() : boost::json::array{};
  }
  // A python3 job writing three remote files through a clean agent restart and a kill -9.
  void RestartsDuringRemoteIo(const std::string& method);
  // Submits a job with transparent checkpoints that says each of its `passes` in the file
  // "progress" of the test's folder, and moves it A -> B -> C -> A, three startds whose programs
  // are at three paths, by `kite vacate`; checks that it ended as an uninterrupted run does:
  // standard output `expected_out`, each pass said once.
  void HopThroughThreeInstalls(const std::string& submit, int passes,
                               const std::string& expected_out);
  // The same for a program built from `source` (named `file`) with `compiler`: its answer is
  // that of the program run here with no pause.
  void HopACompiledSimulation(const std::string& compiler, const std::string& file,
                              const char* source);
  // Runs EXE ARGS with remote I/O the way `method` says (`extra`: more submit lines), waits for its
  // end and checks that it ended well, that way; its error output is EXE.err. Its id.
  std::string RunWithRemoteIo(const std::string& method, const std::string& exe,
                              const std::string& args, const std::string& extra, double seconds) {
    int c = env_->Submit("universe = vanilla\nexecutable = " + exe + "\narguments = " + args +
                         "\nwant_remote_io = true\nremote_io_method = " + method + "\n" + extra +
                         "error = " + exe + ".err\nqueue\n");
    std::string id = std::to_string(c) + ".0";
    WaitDone(c, seconds);
    EXPECT_EQ(History(id, "ExitCode"), "0") << ReadFileOr(env_->dir() + "/" + exe + ".err");
    EXPECT_EQ(History(id, "RemoteIOMethod"), method);
    return id;
  }
  std::string RunThroughTheKernel(const std::string& exe, const std::string& args,
                                  const std::string& extra, double seconds) {
    return RunWithRemoteIo("fuse", exe, args, extra, seconds);
  }
  // Submits EXE ARGS with remote I/O through the preloaded library and waits for it to be held for
  // a write the library could not see (a bash builtin's), to FILE; then removes it.
  void ExpectHeldForAnUnseenWrite(const std::string& exe, const std::string& args,
                                  const std::string& file) {
    int c = env_->Submit("universe = vanilla\nexecutable = " + exe + "\narguments = " + args +
                         "\nwant_remote_io = true\nremote_io_method = preload\n"
                         "should_transfer_files = yes\nqueue\n");
    std::string id = std::to_string(c) + ".0";
    ASSERT_TRUE(WaitUntil([&] { return Q(id, "JobStatus") == "5"; }, 60))
        << Q(id, "JobStatus") << "\n"
        << ReadFileOr(env_->home() + "/agent.log");
    auto reason = Q(id, "HoldReason");
    EXPECT_NE(reason.find(file + " through calls remote I/O cannot follow"), std::string::npos)
        << reason;
    auto r = env_->Kite({"rm", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  bool WaitSlots(size_t n, double seconds = 20) {
    return WaitUntil([&] { return Slots().size() == n; }, seconds);
  }
  void WaitDone(int cluster, double seconds = 60) {
    auto r = env_->Kite({"wait", std::to_string(cluster), "--timeout", std::to_string(seconds)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_->Kite({"q", "-nobatch"}).out;
  }
  std::string History(const std::string& id, const std::string& attr) {
    auto r = env_->Kite({"history", id, "-af", attr});
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  std::string Q(const std::string& id, const std::string& attr) {
    auto r = env_->Kite({"q", id, "-af", attr});
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  // A startd process's pid, from the agent's children (the local startd).
  pid_t StartdPid() {
    auto r = RunCommand({"pgrep", "-f", "kite-startd --agent unix:" + env_->home() + "/pool.sock"});
    return r.exit_code == 0 ? static_cast<pid_t>(std::stol(r.out)) : 0;
  }
  // A job of two seconds, killed under its startd at `victim` (the run's kite-starter, or the
  // job's wrapper kite-exec below it) once it runs: the run is lost, not failed; what it had
  // started goes with it, the startd goes on, and the job runs again (on the other slot: the one
  // that lost it cools off for a while). The user log says why.
  // A job that marks its run in `marks`, sleeps 2 s, marks its end and exits 3; its cluster,
  // once it runs.
  int SubmitTwoSecondJob(const std::string& marks) {
    env_->Write("job.sh",
                "#!/bin/sh\necho \"run of $1\" >> \"$2\"\nsleep 2\necho \"end of $1\" >> \"$2\"\n"
                "exit 3\n",
                0755);
    int c = env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = 0 " + marks +
                         "\nlog = job.log\nqueue\n");
    EXPECT_TRUE(WaitUntil([&] { return ReadFileOr(marks).size() > 0; }, 20)) << "it never ran";
    return c;
  }
  void ExpectALostRunRunsAgain(const std::string& victim, const std::string& why) {
    KiteEnv& env = *env_;
    std::string marks = env.dir() + "/marks";
    int c = SubmitTwoSecondJob(marks);
    std::string id = std::to_string(c) + ".0";
    pid_t startd = StartdPid();
    ASSERT_GT(startd, 0);
    pid_t starter = ChildNamed(startd, "kite-starter");
    ASSERT_GT(starter, 0) << "no kite-starter under the startd";
    pid_t pid = victim == "kite-starter" ? starter : ChildNamed(starter, "kite-exec");
    ASSERT_GT(pid, 0) << "no " << victim << " under the starter";
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    WaitDone(c);
    EXPECT_EQ(History(id, "NumJobStarts"), "2");
    EXPECT_EQ(History(id, "ExitCode"), "3");
    ::usleep(2500 * 1000);  // past the lost run's sleep: had it lingered, it would mark its end
    EXPECT_EQ(ReadFileOr(marks), "run of 0\nrun of 0\nend of 0\n");
    EXPECT_EQ(StartdPid(), startd) << "the startd itself went on";
    auto log = ReadFileOr(env.dir() + "/job.log");
    EXPECT_NE(log.find("004 ("), std::string::npos) << log;
    std::string reason = why;
    if (auto at = reason.find("PID"); at != std::string::npos)
      reason.replace(at, 3, std::to_string(pid));
    EXPECT_NE(log.find(reason), std::string::npos) << log;
  }
  std::unique_ptr<KiteEnv> env_;
};

// The job used below: reads its input, writes stdout, stderr and two output files, one in a
// directory, and leaves a mark per run on the desktop side (its count says how often it ran).
const char* kJobScript = R"(#!/bin/sh
set -e
echo "run of $1" >> "$2"
cat data.txt
tr a-z A-Z < data.txt > upper.txt
mkdir -p sub && echo nested > sub/n.txt
echo "to stderr" >&2
sleep "${3:-0}"
exit 3
)";

TEST_F(Pool, VanillaJobsRunWithTheirFilesAndMatchWhatALocalRunGives) {
  Start();
  ASSERT_TRUE(WaitSlots(2)) << env_->Kite({"status"}).out;
  env_->Write("job.sh", kJobScript, 0755);
  std::string bytes;
  for (int i = 0; i < 70000; ++i) bytes += static_cast<char>('a' + (i * 7) % 26);
  bytes += "\n";  // more than one chunk: sent in pieces
  env_->Write("data.txt", bytes);
  std::string marks = env_->dir() + "/marks";
  int c =
      env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = $(Process) " + marks +
                       "\nshould_transfer_files = YES\ntransfer_input_files = data.txt\n"
                       "transfer_output_files = upper.txt\n"
                       "transfer_output_remaps = \"upper.txt = upper.$(Process).txt\"\n"
                       "output = out.$(Process)\nerror = err.$(Process)\nlog = pool.log\nqueue 4\n",
                   "v.sub");
  WaitDone(c);
  // The same program as a local job, in a directory of its own: the reference.
  fs::create_directories(env_->dir() + "/ref");
  env_->Write("ref/data.txt", bytes);
  int ref =
      env_->Submit("universe = local\nexecutable = " + env_->dir() + "/job.sh\narguments = ref " +
                       marks + "\ninitialdir = ref\noutput = out\nerror = err\nqueue\n",
                   "ref.sub");
  WaitDone(ref);
  for (int p = 0; p < 4; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(ReadFileOr(env_->dir() + "/out." + std::to_string(p)),
              ReadFileOr(env_->dir() + "/ref/out"));
    EXPECT_EQ(ReadFileOr(env_->dir() + "/err." + std::to_string(p)), "to stderr\n");
    EXPECT_EQ(ReadFileOr(env_->dir() + "/upper." + std::to_string(p) + ".txt"),
              ReadFileOr(env_->dir() + "/ref/upper.txt"));
    EXPECT_EQ(History(id, "ExitCode"), "3");
    EXPECT_EQ(History(id, "NumJobStarts"), "1");
    EXPECT_GT(std::atoi(History(id, "MemoryUsage").c_str()), 0) << "the run's peak, from wait4";
    EXPECT_NE(History(id, "LastRemoteHost").find("slot"), std::string::npos);
    EXPECT_EQ(History(id, "RemoteHost"), "undefined");
  }
  // Only what transfer_output_files names comes back; each job ran once.
  EXPECT_FALSE(fs::exists(env_->dir() + "/upper.txt"));
  EXPECT_FALSE(fs::exists(env_->dir() + "/sub"));
  auto runs = ReadFileOr(marks);
  for (int p = 0; p < 4; ++p) {
    std::string line = "run of " + std::to_string(p) + "\n";
    EXPECT_EQ(runs.find(line), runs.rfind(line)) << runs;
    EXPECT_NE(runs.find(line), std::string::npos) << runs;
  }
  auto log = ReadFileOr(env_->dir() + "/pool.log");
  EXPECT_NE(log.find("001 ("), std::string::npos) << log;
  EXPECT_NE(log.find("005 ("), std::string::npos) << log;
}

// HTCondor's shared file system: the local slots share the desktop's FileSystemDomain, so a job
// that does not ask for transfer (IF_NEEDED, the default, or NO) runs in its Iwd and works on the
// user's files in place; YES still gets a sandbox. Each of ten jobs appends a line to one file.
TEST_F(Pool, JobsThatDoNotAskForTransferRunInTheirIwdOnTheLocalSlots) {
  Start();
  ASSERT_TRUE(WaitSlots(2)) << env_->Kite({"status"}).out;
  fs::create_directories(env_->dir() + "/work");
  env_->Write("work/in.txt", "input\n");
  env_->Write("append.sh",
              "#!/bin/sh\nset -e\necho \"job $1 in $(pwd)\" >> lines.txt\ncat in.txt\n"
              "echo \"$1\" > \"made.$1\"\n",
              0755);
  std::string common = "universe = vanilla\nexecutable = " + env_->dir() +
                       "/append.sh\narguments = $(Process)\ninitialdir = work\n"
                       "output = out.$(Process)\nerror = err.$(Process)\n";
  int c = env_->Submit(common + "queue 5\nshould_transfer_files = NO\nqueue 5\n", "shared.sub");
  WaitDone(c);
  std::string work = env_->dir() + "/work";
  std::string lines = ReadFileOr(work + "/lines.txt");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 10) << lines;
  for (int p = 0; p < 10; ++p) {
    std::string n = std::to_string(p);
    EXPECT_NE(lines.find("job " + n + " in " + work + "\n"), std::string::npos) << lines;
    EXPECT_EQ(ReadFileOr(work + "/out." + n), "input\n");
    EXPECT_EQ(ReadFileOr(work + "/made." + n), n + "\n");
    EXPECT_EQ(History(std::to_string(c) + "." + n, "NumJobStarts"), "1");
  }
  // should_transfer_files = YES: a sandbox; the lines.txt it made there is new, and comes back
  // over the shared one (as HTCondor's transfer does).
  int y = env_->Submit(common +
                           "should_transfer_files = YES\ntransfer_input_files = in.txt\n"
                           "queue\n",
                       "yes.sub");
  WaitDone(y);
  lines = ReadFileOr(work + "/lines.txt");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1) << lines;
  EXPECT_EQ(lines.find(" in " + work + "\n"), std::string::npos) << lines;
  EXPECT_EQ(ReadFileOr(work + "/out.0"), "input\n");
}

TEST_F(Pool, RemovingOrHoldingARunningJobStopsItThere) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  int c = env_->Submit("universe = vanilla\nexecutable = /bin/sleep\narguments = 300\nqueue 2\n");
  std::string a = std::to_string(c) + ".0", b = std::to_string(c) + ".1";
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(a) == 2 && env_->JobStatus(b) == 2; }, 20));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return RunCommand({"pgrep", "-f", "kite-exec .*--dir " + env_->home() + "/execute/"})
                   .exit_code == 0;
      },
      10));
  EXPECT_EQ(env_->Kite({"rm", a}).exit_code, 0);
  EXPECT_EQ(env_->Kite({"hold", b}).exit_code, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return env_->JobStatus(a) == 3 || env_->JobStatus(a) == 0 || History(a, "JobStatus") == "3";
      },
      20));
  EXPECT_TRUE(WaitUntil([&] { return Q(b, "RemoteHost") == "undefined"; }, 20));
  EXPECT_EQ(env_->JobStatus(b), 5);
  // Both slots are free again, and the sleeps are gone.
  EXPECT_TRUE(WaitUntil(
      [&] {
        auto s = Slots();
        return s.size() == 2 && s[0].as_object().if_contains("JobId") == nullptr &&
               s[1].as_object().if_contains("JobId") == nullptr;
      },
      20))
      << env_->Kite({"status"}).out;
  EXPECT_TRUE(WaitUntil(
      [&] {
        // No wrapper of this pool's runs is left (other tests' sleeps may run beside).
        return RunCommand({"pgrep", "-f", "kite-exec .*--dir " + env_->home() + "/execute/"})
                   .exit_code != 0;
      },
      10));
}

// stream_output: a vanilla job's output grows on the desktop while it runs, line by line, and
// is whole and exact at its end; its error, not streamed, comes only at the end.
TEST_F(Pool, StreamedOutputGrowsOnTheDesktopWhileTheJobRuns) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  std::string dir = env_->dir() + "/";
  env_->Write("talk.sh",
              "#!/bin/sh\nfor i in 1 2 3; do echo \"line $i\"; echo \"err $i\" >&2; "
              "while [ ! -e \"$1/go.$i\" ]; do sleep 0.1; done; done\n",
              0755);
  int c = env_->Submit("universe = vanilla\nexecutable = talk.sh\narguments = " + env_->dir() +
                       "\nshould_transfer_files = YES\noutput = talk.out\nerror = talk.err\n"
                       "stream_output = true\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  // Each line is on the desktop while the job waits for the test to let it go on.
  for (int i = 1; i <= 3; ++i) {
    std::string want;
    for (int k = 1; k <= i; ++k) want += "line " + std::to_string(k) + "\n";
    EXPECT_TRUE(WaitUntil([&] { return ReadFileOr(dir + "talk.out") == want; }, 20))
        << "[" << ReadFileOr(dir + "talk.out") << "]";
    EXPECT_EQ(env_->JobStatus(id), 2);
    EXPECT_EQ(ReadFileOr(dir + "talk.err"), "");  // not streamed: it comes at the end
    WriteFile(dir + "go." + std::to_string(i), "");
  }
  auto w = env_->Kite({"wait", "--timeout", "60", id});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err;
  EXPECT_EQ(ReadFileOr(dir + "talk.out"), "line 1\nline 2\nline 3\n");
  EXPECT_EQ(ReadFileOr(dir + "talk.err"), "err 1\nerr 2\nerr 3\n");
  EXPECT_EQ(History(id, "ExitCode"), "0");
}

// condor_vacate_job: the running job stops where it runs, goes back to Idle and runs again; the
// user log says it was evicted and why. Jobs it cannot vacate are named with the reason.
TEST_F(Pool, KiteVacateSendsARunningJobBackToIdleAndItRunsAgain) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  std::string marks = env_->dir() + "/marks";
  // The first run waits long; the one after the vacate ends at once.
  env_->Write("job.sh",
              "#!/bin/sh\necho run >> \"$1\"\n[ \"$(wc -l < \"$1\")\" -gt 1 ] || sleep 300\n"
              "echo finished\n",
              0755);
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = " + marks +
                       "\noutput = out\nlog = job.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "run\n"; }, 20));
  int idle = env_->Submit("universe = vanilla\nexecutable = /bin/true\nhold = true\nqueue\n");
  int local = env_->Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue\n");
  std::string idle_id = std::to_string(idle) + ".0", local_id = std::to_string(local) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(local_id) == 2; }, 20));

  auto r = env_->Kite({"vacate", id, idle_id, local_id});
  EXPECT_EQ(r.exit_code, 1) << "two of the three could not be vacated";
  EXPECT_NE(r.out.find("1 job(s) vacated."), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Job " + idle_id + " is not running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Job " + local_id + " is not a vanilla job"), std::string::npos) << r.err;

  WaitDone(c);
  EXPECT_EQ(ReadFileOr(marks), "run\nrun\n");
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
  EXPECT_EQ(ReadFileOr(env_->dir() + "/out"), "finished\n");
  auto log = ReadFileOr(env_->dir() + "/job.log");
  EXPECT_NE(log.find("004 ("), std::string::npos) << log;
  EXPECT_NE(log.find("via kite vacate"), std::string::npos) << log;
  EXPECT_EQ(env_->JobStatus(idle_id), 5);  // untouched
  env_->Kite({"rm", local_id});
}

// The checkpointing job below: it counts to 12, a step per PAUSE seconds, and after every fourth
// step saves its state and exits 85 (its checkpoint_exit_code); each launch leaves "start at N"
// in the file named by $1. `at_step_8` runs after step 8, before that checkpoint.
std::string CountingJob(const std::string& pause, const std::string& at_step_8 = ":") {
  return "#!/bin/sh\nn=0\n[ -f state ] && n=$(cat state)\necho \"start at $n\" >> \"$1\"\n"
         "while [ \"$n\" -lt 12 ]; do\n  n=$((n + 1))\n  echo \"step $n\" >> steps.txt\n  sleep " +
         pause + "\n  [ \"$n\" -eq 8 ] && " + at_step_8 +
         "\n  if [ $((n % 4)) -eq 0 ] && [ \"$n\" -lt 12 ]; then echo \"$n\" > state; exit 85; fi\n"
         "done\nrm -f blob\necho \"counted to $n\"\n";
}

// What a counting job that lost one stretch after its first checkpoint leaves: it started again
// from step 4, and its output is that of a run never interrupted.
void ExpectACountResumedOnceFromStep4(const KiteEnv& env, const std::string& marks) {
  EXPECT_EQ(ReadFileOr(marks), "start at 0\nstart at 4\nstart at 4\nstart at 8\n");
  std::string steps;
  for (int i = 1; i <= 12; ++i) steps += "step " + std::to_string(i) + "\n";
  EXPECT_EQ(ReadFileOr(env.dir() + "/steps.txt"), steps);
  EXPECT_EQ(ReadFileOr(env.dir() + "/out"), "counted to 12\n");
}

// HTCondor's checkpoint_exit_code: a job that saves its state and exits with that code has its
// checkpoint files stored at home and starts again in place; vacated, it resumes from its last
// checkpoint on its next start, and its result is that of a run never interrupted.
TEST_F(Pool, ACheckpointingJobResumesFromItsLastCheckpointAfterAVacate) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  std::string marks = env_->dir() + "/marks";
  env_->Write("count.sh", CountingJob("0.4"), 0755);
  int c = env_->Submit("universe = vanilla\nexecutable = count.sh\narguments = " + marks +
                       "\ncheckpoint_exit_code = 85\ntransfer_checkpoint_files = state, steps.txt\n"
                       "transfer_output_files = steps.txt\noutput = out\nlog = count.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  // Past its first checkpoint (step 4), a step or so into the next stretch: vacated.
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "start at 0\nstart at 4\n"; }, 30))
      << ReadFileOr(marks);
  EXPECT_EQ(Q(id, "NumCheckpoints"), "1");
  ::usleep(600 * 1000);
  auto v = env_->Kite({"vacate", id});
  ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
  WaitDone(c, 90);

  ExpectACountResumedOnceFromStep4(*env_, marks);
  EXPECT_EQ(History(id, "NumCheckpoints"), "2");
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
  EXPECT_EQ(History(id, "ExitCode"), "0");
  EXPECT_NE(History(id, "CheckpointBytes"), "undefined");
  auto log = ReadFileOr(env_->dir() + "/count.log");
  size_t checkpoints = 0;
  for (size_t at = log.find("003 ("); at != std::string::npos; at = log.find("003 (", at + 1))
    ++checkpoints;
  EXPECT_EQ(checkpoints, 2u) << log;
  // Nothing of it is kept once the job has left the queue.
  EXPECT_TRUE(
      WaitUntil([&] { return !fs::exists(env_->home() + "/spool/checkpoints/" + id); }, 10));
}

// want_remote_io (docs/remote-io.md): the program reads a file of the job's Iwd that was never
// transferred and appends to another there while it runs; both go through the shadow, the desktop
// sees the output grow, the job ad and the user log count the bytes, and a link leading out of
// the job's paths is refused and logged. Through the preloaded library, which sends whole paths:
// through the kernel a link is followed on the execute node, as on NFS (on this local slot that
// is the desktop itself, where the job's user may read anything).
TEST_F(Pool, RemoteIoReachesTheJobsFilesWhileItRunsAndNothingElse) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  std::string big;
  for (int i = 0; big.size() < 300000; ++i) big += "row " + std::to_string(i) + "\n";
  env_->Write("big.txt", big);
  fs::create_directories(d + "/../rsc-outside");
  WriteFile(d + "/../rsc-outside/secret", "no\n");
  fs::create_symlink(d + "/../rsc-outside/secret", d + "/leak");
  env_->Write("release", "");
  fs::remove(d + "/release");
  env_->Write("io.sh",
              "#!/bin/sh\nD=$1\nwc -l < $D/big.txt > $D/count.txt\n"
              "echo first >> $D/progress.txt\n"
              "while [ ! -e $D/release ]; do sleep 0.1; done\necho second >> $D/progress.txt\n"
              "cat $D/leak > /dev/null 2>&1 || echo refused >> $D/progress.txt\n",
              0755);
  int c = env_->Submit("universe = vanilla\nexecutable = io.sh\narguments = " + d +
                       "\nwant_remote_io = true\nremote_io_method = preload\n"
                       "should_transfer_files = yes\nerror = io.err\nlog = io.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  // While it runs, the desktop already has what it wrote.
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(d + "/progress.txt") == "first\n"; }, 30))
      << ReadFileOr(env_->home() + "/agent.log");
  EXPECT_EQ(Q(id, "JobStatus"), "2");
  EXPECT_EQ(ReadFileOr(d + "/count.txt"),
            std::to_string(std::count(big.begin(), big.end(), '\n')) + "\n");
  env_->Write("release", "");
  WaitDone(c);
  EXPECT_EQ(History(id, "ExitCode"), "0");
  EXPECT_EQ(ReadFileOr(d + "/progress.txt"), "first\nsecond\nrefused\n");
  EXPECT_GE(std::stoll(History(id, "BytesRead")), static_cast<long long>(big.size()));
  EXPECT_GE(std::stoll(History(id, "BytesWritten")), 20);
  EXPECT_GT(std::stoll(History(id, "RemoteIOCalls")), 5);
  // Written on the desktop only: the sandbox got none of these files.
  auto log = ReadFileOr(d + "/io.log");
  EXPECT_NE(log.find("  -  Run Bytes Received By Job"), std::string::npos) << log;
  EXPECT_EQ(log.find("\t0  -  Run Bytes Received By Job"), std::string::npos) << log;
  EXPECT_NE(ReadFileOr(env_->home() + "/agent.log").find("a symbolic link leads out"),
            std::string::npos);
  EXPECT_EQ(ReadFileOr(d + "/../rsc-outside/secret"), "no\n");
  fs::remove_all(d + "/../rsc-outside");
}

// Remote I/O across agent restarts (docs/remote-io.md, "Across agent restarts"): a python3 job
// keeps three remote files open -- one it reads a line at a time, one it writes, one it appends
// to -- while the agent is stopped and started, then killed -9 and started. Its calls wait while
// no agent runs, the next agent's shadow answers them (the job's library opens its files again
// there), and the job ends once with every line in place: none lost, none twice.
const char* kRestartWriter = R"(#!/usr/bin/python3
import os, sys, time
D = sys.argv[1]
with open(D + "/starts", "a") as s:
    s.write("start\n")
src = open(D + "/src.txt")
out = open(D + "/lines.txt", "w")
log = open(D + "/appended.txt", "a")
i = 0
while True:
    out.write("%d %s" % (i, src.readline()))
    out.flush()
    log.write("%d\n" % i)
    log.flush()
    i += 1
    if i >= 200 and os.path.exists(D + "/release"):
        break
    time.sleep(0.01)
out.close()
log.close()
)";

void Pool::RestartsDuringRemoteIo(const std::string& method) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  std::string src;
  for (int i = 0; i < 60000; ++i) src += "row " + std::to_string(i) + "\n";
  env_->Write("src.txt", src);
  env_->Write("writer.py", kRestartWriter, 0755);
  int c = env_->Submit("universe = vanilla\nexecutable = writer.py\narguments = " + d +
                       "\nwant_remote_io = true\nremote_io_method = " + method +
                       "\nshould_transfer_files = yes\nerror = w.err\n"
                       "log = w.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  auto lines = [&] {
    auto text = ReadFileOr(d + "/lines.txt");
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  };
  ASSERT_TRUE(WaitUntil([&] { return lines() >= 20; }, 30))
      << ReadFileOr(env_->home() + "/agent.log") << ReadFileOr(d + "/w.err");
  for (bool kill : {false, true}) {
    if (kill) {
      env_->KillAgent();
    } else {
      env_->StopAgent();
    }
    size_t before = lines();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its calls wait meanwhile
    EXPECT_LE(lines(), before + 1) << "written with no agent running";
    env_->StartAgent();
    EXPECT_TRUE(WaitUntil([&] { return lines() >= before + 30; }, 30))
        << (kill ? "after kill -9: " : "after a stop: ") << lines() << " lines\n"
        << ReadFileOr(d + "/w.err");
  }
  env_->Write("release", "");
  WaitDone(c, 60);
  EXPECT_EQ(History(id, "ExitCode"), "0") << ReadFileOr(d + "/w.err");
  EXPECT_EQ(History(id, "NumJobStarts"), "1");
  EXPECT_EQ(History(id, "RemoteIOMethod"), method);
  EXPECT_EQ(ReadFileOr(d + "/starts"), "start\n");
  // Line i is "i row i" in the written file and "i" in the appended one, for every i, once.
  auto written = Split(ReadFileOr(d + "/lines.txt"), '\n');
  auto appended = Split(ReadFileOr(d + "/appended.txt"), '\n');
  ASSERT_GE(written.size(), 200u);
  ASSERT_EQ(written.size(), appended.size());
  for (size_t i = 0; i < written.size(); ++i) {
    if (i + 1 == written.size() && written[i].empty() && appended[i].empty()) break;
    ASSERT_EQ(written[i], std::to_string(i) + " row " + std::to_string(i)) << "line " << i;
    ASSERT_EQ(appended[i], std::to_string(i)) << "line " << i;
  }
  EXPECT_EQ(ReadFileOr(env_->home() + "/agent.log").find("remote I/O refused"), std::string::npos);
}

TEST_F(Pool, RemoteIoWaitsAcrossAgentRestartsAndEveryLineLandsOnce) {
  RestartsDuringRemoteIo("preload");
}

// The same through the kernel: the file system's server waits for the next agent as the library
// does, and opens its files again at the new shadow.
TEST_F(Pool, RemoteIoThroughTheKernelWaitsAcrossAgentRestartsAndEveryLineLandsOnce) {
  RestartsDuringRemoteIo("fuse");
}

// bash's builtins write a redirected file with glibc's internal calls, which the preloaded library
// (remote_io_method = preload, or where the kernel's way cannot be had) cannot forward
// (docs/remote-io.md): the bytes stay on the execute node. That is never taken for
// a good run: the job is held with the file named, and a run that wrote through `cat` (which the
// library forwards) is not.
TEST_F(Pool, ABashBuiltinsWriteThatRemoteIoCannotSendHoldsTheJobWithTheFileNamed) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  env_->Write("builtin.sh", "#!/bin/bash\necho hello > $1/echo.txt\nsleep 30\n", 0755);
  env_->Write("program.sh", "#!/bin/bash\necho hello | cat > $1/cat.txt\n", 0755);
  int good = env_->Submit("universe = vanilla\nexecutable = program.sh\narguments = " + d +
                          "\nwant_remote_io = true\nremote_io_method = preload\n"
                          "should_transfer_files = yes\nqueue\n");
  ExpectHeldForAnUnseenWrite("builtin.sh", d, d + "/echo.txt");
  EXPECT_EQ(ReadFileOr(d + "/echo.txt"), "");  // what the user would otherwise have found
  WaitDone(good);
  std::string ok = std::to_string(good) + ".0";
  EXPECT_EQ(History(ok, "ExitCode"), "0");
  EXPECT_EQ(ReadFileOr(d + "/cat.txt"), "hello\n");
}

// Remote I/O through the kernel (remote_io_method = fuse; docs/remote-io.md): the same job script
// written the way scientists write them -- bash builtins redirected to files, a here-document,
// `mkdir -p`, coreutils, `sort -T` with its temporary files, python3, sqlite3, git -- leaves on the
// desktop exactly what it leaves when run there by hand, in a folder the sandbox never saw (nothing
// is transferred).
const char* kEverydayScript = R"SH(#!/bin/bash
set -e
R=$1/results
mkdir -p $R/a/b/c
echo "one" > $R/echo.txt
printf '%s\n' two three >> $R/echo.txt
{ echo four; echo five; } >> $R/echo.txt
cat > $R/here.txt <<END
here $((6 * 7))
END
for i in $(seq 1 200); do echo "line $i" >> $R/a/b/c/loop.txt; done
cp $1/input.txt $R/a/copy.txt
sort -r $1/input.txt > $R/sorted.txt
mv $R/sorted.txt $R/a/b/sorted.txt
python3 -c "import sys; open(sys.argv[1], 'w').write(str(sum(range(100))) + '\n')" $R/py.txt
sqlite3 $R/db.sqlite "create table t(x); insert into t values (1), (2), (3);"
sqlite3 $R/db.sqlite "select sum(x) from t;" > $R/sum.txt
ls $R/a/b > $R/listing.txt
mkdir $R/sorttmp
seq 1 20000 | sort -rn -S 64K -T $R/sorttmp > $R/rsorted.txt
mkdir $R/repo
(cd $R/repo && git init -q && git config user.email job@example.org &&
 git config user.name job && echo hi > f && git add f && git commit -q -m first &&
 git log --format=%s > $R/gitlog.txt)
rm $R/a/copy.txt
test ! -e $R/a/copy.txt
echo done > $R/done.txt
)SH";

// What kEverydayScript leaves in D/results, run anywhere.
void ExpectWhatTheEverydayScriptLeaves(const std::string& d) {
  const std::string r = d + "/results";
  EXPECT_EQ(ReadFileOr(r + "/echo.txt"), "one\ntwo\nthree\nfour\nfive\n");
  EXPECT_EQ(ReadFileOr(r + "/here.txt"), "here 42\n");
  std::string loop;
  for (int i = 1; i <= 200; ++i) loop += "line " + std::to_string(i) + "\n";
  EXPECT_EQ(ReadFileOr(r + "/a/b/c/loop.txt"), loop);
  EXPECT_EQ(ReadFileOr(r + "/a/b/sorted.txt"), "c\nb\na\n");
  EXPECT_FALSE(fs::exists(r + "/a/copy.txt"));
  EXPECT_EQ(ReadFileOr(r + "/py.txt"), "4950\n");
  EXPECT_EQ(ReadFileOr(r + "/sum.txt"), "6\n");
  EXPECT_EQ(ReadFileOr(r + "/listing.txt"), "c\nsorted.txt\n");
  std::string rsorted;
  for (int i = 20000; i >= 1; --i) rsorted += std::to_string(i) + "\n";
  EXPECT_TRUE(ReadFileOr(r + "/rsorted.txt") == rsorted) << "sort -T with its temporary files";
  EXPECT_EQ(ReadFileOr(r + "/gitlog.txt"), "first\n");
  EXPECT_EQ(ReadFileOr(r + "/done.txt"), "done\n");
}

TEST_F(Pool, RemoteIoThroughTheKernelGivesEveryProgramWhatALocalDiskWould) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  env_->Write("input.txt", "b\na\nc\n");
  env_->Write("everyday.sh", kEverydayScript, 0755);
  RunThroughTheKernel("everyday.sh", d, "should_transfer_files = yes\n", 60);
  ExpectWhatTheEverydayScriptLeaves(d);
  EXPECT_EQ(ReadFileOr(env_->home() + "/agent.log").find("remote I/O refused"), std::string::npos);
}

// Small writes through the kernel are sent together (a shell loop's echos into one redirection:
// one request for many), yet in the order they were made -- lines appended in turn through two
// opens of one file, by one process or by a loop and its children, alternate as on a local disk --
// and a job that pauses with
// its file open has what it wrote on the desktop within a moment, not at its end.
const char* kSmallWrites = R"SH(#!/bin/bash
set -e
D=$1
{ for i in $(seq 1 300); do echo "a$i"; echo "b$i" >> $D/mixed.txt; done; } >> $D/mixed.txt
python3 - $D/two.txt <<'END'
import os, sys
a = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
b = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
for i in range(1, 201):
    os.write(a, b"a%d\n" % i)
    os.write(b, b"b%d\n" % i)
os.write(a, b"small\n")
os.write(a, b"x" * 70000 + b"\n")
END
{ for i in $(seq 1 2000); do echo "line $i"; done; echo written; sleep 5; echo after; } > $D/live.txt
)SH";

TEST_F(Pool, RemoteIoThroughTheKernelSendsSmallWritesTogetherInTheOrderMade) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  env_->Write("small.sh", kSmallWrites, 0755);
  int c = env_->Submit("universe = vanilla\nexecutable = small.sh\narguments = " + d +
                       "\nwant_remote_io = true\nremote_io_method = fuse\nerror = small.err\n"
                       "queue\n");
  std::string id = std::to_string(c) + ".0";
  std::string lines;
  for (int i = 1; i <= 2000; ++i) lines += "line " + std::to_string(i) + "\n";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(d + "/live.txt") == lines + "written\n"; }, 30))
      << ReadFileOr(d + "/live.txt").size() << " bytes; " << ReadFileOr(d + "/small.err");
  EXPECT_EQ(Q(id, "JobStatus"), "2") << "only seen once the job had ended";
  WaitDone(c, 60);
  EXPECT_EQ(History(id, "ExitCode"), "0") << ReadFileOr(d + "/small.err");
  EXPECT_EQ(History(id, "RemoteIOMethod"), "fuse");
  EXPECT_TRUE(ReadFileOr(d + "/live.txt") == lines + "written\nafter\n");
  std::string mixed;
  for (int i = 1; i <= 300; ++i)
    mixed += "a" + std::to_string(i) + "\nb" + std::to_string(i) + "\n";
  EXPECT_TRUE(ReadFileOr(d + "/mixed.txt") == mixed) << ReadFileOr(d + "/mixed.txt").substr(0, 200);
  std::string two;
  for (int i = 1; i <= 200; ++i) two += "a" + std::to_string(i) + "\nb" + std::to_string(i) + "\n";
  two += "small\n" + std::string(70000, 'x') + "\n";  // a large write after a small one
  EXPECT_TRUE(ReadFileOr(d + "/two.txt") == two) << ReadFileOr(d + "/two.txt").substr(0, 200);
}

// Reads through the kernel, every way a program makes them -- cp, sha256sum, dd with small and
// large blocks, random preads of 1 byte to 2 MB -- give the desktop's bytes, byte for byte (a read
// answered short is the file's end to the kernel: one must never be). And a file rewritten while
// open is read as it now is.
const char* kReader = R"SH(#!/bin/bash
set -e
cp $1/big.dat local.dat
sha256sum local.dat | cut -d' ' -f1 > $1/cp.sum
sha256sum $1/big.dat | cut -d' ' -f1 > $1/direct.sum
dd if=$1/big.dat bs=32k 2>/dev/null | sha256sum | cut -d' ' -f1 > $1/dd32k.sum
dd if=$1/big.dat bs=4M 2>/dev/null | sha256sum | cut -d' ' -f1 > $1/dd4m.sum
python3 - $1/big.dat > $1/random.sum <<'END'
import hashlib, os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
rng, h = random.Random(3), hashlib.sha256()
for _ in range(300):
    h.update(os.pread(fd, rng.choice([1, 100, 4096, 70000, 131072, 600000, 2000000]),
                      rng.randrange(0, 20000000)))
print(h.hexdigest())
END
python3 - $1/changing.txt > $1/changing.out <<'END'
import sys
with open(sys.argv[1], "r+") as f:
    first = f.read()
    f.seek(0); f.write("second"); f.flush()
    f.seek(0); print(first, f.read())
END
)SH";

TEST_F(Pool, RemoteIoThroughTheKernelReadsEveryByteAsTheDesktopHasIt) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  std::string big(20000000, '\0');
  std::mt19937_64 rng(11);
  for (auto& c : big) c = static_cast<char>(rng());
  env_->Write("big.dat", big);
  env_->Write("changing.txt", "first!");
  env_->Write("reader.sh", kReader, 0755);
  RunThroughTheKernel("reader.sh", d, "", 90);
  auto here = RunCommand({"sha256sum", d + "/big.dat"});
  std::string sum = here.out.substr(0, 64) + "\n";
  for (const char* f : {"cp.sum", "direct.sum", "dd32k.sum", "dd4m.sum"})
    EXPECT_EQ(ReadFileOr(d + "/" + f), sum) << f;
  auto random = RunCommand({"python3", "-c",
                            "import hashlib, os, random, sys\n"
                            "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
                            "rng, h = random.Random(3), hashlib.sha256()\n"
                            "for _ in range(300):\n"
                            "    h.update(os.pread(fd, rng.choice([1, 100, 4096, 70000, 131072, "
                            "600000, 2000000]), rng.randrange(0, 20000000)))\n"
                            "print(h.hexdigest())\n",
                            d + "/big.dat"});
  EXPECT_EQ(ReadFileOr(d + "/random.sum"), random.out);
  EXPECT_EQ(ReadFileOr(d + "/changing.out"), "first! second\n");
  EXPECT_EQ(ReadFileOr(d + "/changing.txt"), "second");
}

// Metadata through the kernel: the same commands -- modes, times, symbolic and hard links, tar
// c/x, cp -a, gzip/gunzip in place, sed -i, mv across folders, make building a C program
// (statically linked, which the preloaded library could never reach) -- run by the test on a local
// folder and by a job on a remote one leave the same tree, entry for entry.
const char* kMetadataScript = R"SH(#!/bin/bash
set -e
cd "$1"
mkdir -p tree/sub/deep
printf 'data\n' > tree/a.txt
seq 1 1000 > tree/sub/nums.txt
seq 1 5000 > tree/sub/big.txt
ln -s a.txt tree/link
ln -s ../a.txt tree/sub/uplink
ln tree/sub/nums.txt tree/hard.txt
chmod 0640 tree/a.txt
chmod 0750 tree/sub
find tree -exec touch -h -d '2020-01-02 03:04:05' {} +
gzip tree/sub/big.txt
gunzip tree/sub/big.txt.gz
tar cf tree.tar tree
mkdir -p untar
tar xf tree.tar -C untar
cp -a tree copy
mv copy/sub/deep moved-deep
sed -i 's/data/DATA/' copy/a.txt
readlink tree/link > readlink.txt
mkdir -p build
printf 'int main(void) { return 42; }\n' > build/ret.c
printf 'ret: ret.c\n\tcc -static -o ret ret.c\n' > build/Makefile
make -s -C build
set +e
build/ret
echo "ret $?" > build/ret.txt
set -e
find tree untar copy moved-deep build -printf '%p %y %m %s %l %n\n' | sort > listing.txt
find tree untar copy -type f ! -path copy/a.txt -printf '%p %T@\n' | sort > times.txt
)SH";

// What kMetadataScript left in REMOTE is what it left in LOCAL, entry for entry.
void ExpectTheSameTree(const std::string& local, const std::string& remote) {
  for (const char* f : {"listing.txt", "times.txt", "readlink.txt", "build/ret.txt"}) {
    std::string here = ReadFileOr(local + "/" + f);
    EXPECT_FALSE(here.empty()) << f;
    EXPECT_EQ(ReadFileOr(remote + "/" + f), here) << f;
  }
  EXPECT_EQ(ReadFileOr(remote + "/build/ret.txt"), "ret 42\n");
  EXPECT_EQ(ReadFileOr(remote + "/copy/a.txt"), "DATA\n");
}

TEST_F(Pool, RemoteIoThroughTheKernelKeepsMetadataAsALocalDiskDoes) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  env_->Write("meta.sh", kMetadataScript, 0755);
  fs::create_directories(d + "/local");
  fs::create_directories(d + "/remote");
  auto here = RunCommand({d + "/meta.sh", d + "/local"});
  ASSERT_EQ(here.exit_code, 0) << here.err;
  RunThroughTheKernel("meta.sh", d + "/remote", "should_transfer_files = yes\n", 90);
  ExpectTheSameTree(d + "/local", d + "/remote");
}

// The same scripts with the preloaded library forced (remote_io_method = preload: the fallback
// where an execute node has no FUSE) are each right or refused with a reason -- never a silent
// difference. As written, both redirect bash builtins to remote files, which the library cannot
// see: the job is held, naming the file. With those writes made by programs instead (`env echo`),
// they leave what a local disk has: modes, times, links, tar, cp -a, sed -i, mkdir -p (on this,
// the desktop's own slot, where a remote folder can be the working directory; elsewhere the
// library refuses that with its reason, kite-rsc's "cannot be the working directory").
std::string ByPrograms(const std::string& script) {
  static const std::regex kBuiltin(R"((^|\n|[ ;{(])(echo|printf) )");
  return std::regex_replace(script, kBuiltin, "$1env $2 ");
}

TEST_F(Pool, RemoteIoThroughTheLibraryIsRightOrSaysWhyForEachProgram) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  env_->Write("input.txt", "b\na\nc\n");
  env_->Write("everyday.sh", kEverydayScript, 0755);
  env_->Write("meta.sh", kMetadataScript, 0755);
  fs::create_directories(d + "/as-written");
  ExpectHeldForAnUnseenWrite("everyday.sh", d, d + "/results/echo.txt");
  ExpectHeldForAnUnseenWrite("meta.sh", d + "/as-written", d + "/as-written/tree/a.txt");
  fs::remove_all(d + "/results");
  env_->Write("everyday-p.sh", ByPrograms(kEverydayScript), 0755);
  env_->Write("meta-p.sh", ByPrograms(kMetadataScript), 0755);
  ASSERT_NE(ReadFileOr(d + "/meta-p.sh").find("env printf 'data"), std::string::npos);
  ASSERT_NE(ReadFileOr(d + "/meta-p.sh").find("-printf '%p"), std::string::npos);
  RunWithRemoteIo("preload", "everyday-p.sh", d, "should_transfer_files = yes\n", 90);
  ExpectWhatTheEverydayScriptLeaves(d);
  fs::create_directories(d + "/local");
  fs::create_directories(d + "/remote");
  auto here = RunCommand({d + "/meta-p.sh", d + "/local"});
  ASSERT_EQ(here.exit_code, 0) << here.err;
  RunWithRemoteIo("preload", "meta-p.sh", d + "/remote", "should_transfer_files = yes\n", 90);
  ExpectTheSameTree(d + "/local", d + "/remote");
}

// A job that speaks the remote-I/O wire itself to its starter's socket (as the attack's probe
// did), not through the preloaded library: each refusal the issue lists (defects 7, 11, 12, 13,
// 15 and 16) as the job and the desktop see it.
const char* kRscProbe = R"(#!/usr/bin/python3
import os, socket, struct, sys
D = sys.argv[1]
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["KITE_RSC_SOCKET"])
seq = [0]
def rd(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise EOFError
        b += c
    return b
def call(op, path="", flags=0, mode=0, handle=0, size=0):
    seq[0] += 1
    p = path.encode()
    body = struct.pack("<QIiIqqQIII", seq[0], op, flags, mode, handle, 0, size, len(p), 0, 0) + p
    s.sendall(struct.pack("<I", len(body)) + body)
    r = rd(struct.unpack("<I", rd(4))[0])
    q, res, err, dl = struct.unpack("<QqiI", r[:24])
    return res, err, r[24:24 + dl]
OPEN, CLOSE, PREAD = 1, 2, 3
O = os.environ["PROBE_OUTSIDE"]  # outside the Iwd: where the roots that are links live
def opens(label, path, flags=os.O_RDONLY, mode=0, keep=False):
    res, err, _ = call(OPEN, path, flags, mode)
    print(label, "errno", err, flush=True)
    if err == 0 and not keep: call(CLOSE, handle=res)
    return res
opens("etc", O + "/links/etc/passwd")
opens("fileroot", O + "/outdir/out.txt")
opens("sibling", O + "/outdir/secret2")
opens("suid", D + "/suid", os.O_CREAT | os.O_WRONLY, 0o4755)
opens("inject", "/tmp/kite-nowhere\nFORGED-LOG-LINE agent: pool: forged")
h = opens("args", sys.argv[2], keep=True)
print("args-read", call(PREAD, handle=h, size=100)[2].decode().strip(), flush=True)
call(CLOSE, handle=h)
ok, first = 0, None
for i in range(1100):
    res, err, _ = call(OPEN, D + "/in.dat")
    if err == 0: ok += 1
    elif first is None: first = err
print("fds", ok, "first-errno", first, flush=True)
)";

TEST_F(Pool, RemoteIoRefusesWhatTheProbeTriedAndLogsItSafely) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(1));
  const std::string d = env_->dir();
  // Outside the job's Iwd, as the probe had them: a folder root that links to /etc, and a file
  // root that links to its sibling.
  std::string o = fs::weakly_canonical(d + "/../rsc-outside-iwd").string();
  fs::create_directories(o + "/links");
  fs::create_symlink("/etc", o + "/links/etc");
  fs::create_directories(o + "/outdir");
  WriteFile(o + "/outdir/secret2", "a sibling\n");
  fs::create_symlink("secret2", o + "/outdir/out.txt");
  fs::create_directories(d + "/../rsc-args");
  std::string named = fs::weakly_canonical(d + "/../rsc-args/only-in-args.txt").string();
  WriteFile(named, "named in Args\n");
  env_->Write("in.dat", "x\n");
  env_->Write("probe.py", kRscProbe, 0755);
  // Old-syntax arguments: the ad has Args, not Arguments.
  int c = env_->Submit(
      "universe = vanilla\nexecutable = probe.py\narguments = " + d + " " + named +
      "\nenvironment = PROBE_OUTSIDE=" + o +
      "\nwant_remote_io = true\nremote_io_method = preload\nremote_io_paths = " + o +
      "/links/etc " + o + "/outdir/out.txt\noutput = probe.out\nerror = probe.err\nqueue\n");
  WaitDone(c);
  std::string out = ReadFileOr(d + "/probe.out");
  EXPECT_NE(out.find("etc errno 13\n"), std::string::npos) << out << ReadFileOr(d + "/probe.err");
  EXPECT_NE(out.find("fileroot errno 13\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sibling errno 13\n"), std::string::npos) << out;
  EXPECT_NE(out.find("suid errno 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("inject errno 13\n"), std::string::npos) << out;
  EXPECT_NE(out.find("args errno 0\nargs-read named in Args\n"), std::string::npos) << out;
  EXPECT_NE(out.find("fds 1024 first-errno 24\n"), std::string::npos) << out;
  struct stat st {};
  ASSERT_EQ(::stat((d + "/suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07000, 0u) << "setuid/setgid/sticky bits reached the desktop";
  auto log = ReadFileOr(env_->home() + "/agent.log");
  EXPECT_EQ(log.find("\nFORGED-LOG-LINE"), std::string::npos) << "a job forged a log line";
  EXPECT_NE(log.find("\\x0aFORGED-LOG-LINE"), std::string::npos);
  EXPECT_NE(log.find("system folder /etc"), std::string::npos);
  EXPECT_NE(log.find("(EMFILE)"), std::string::npos);
  EXPECT_EQ(History(std::to_string(c) + ".0", "ExitCode"), "0");
  EXPECT_NE(log.find("a file the job may use is a symbolic link"), std::string::npos);
  fs::remove_all(d + "/../rsc-args");
  fs::remove_all(o);
}

// A statically linked program: through the kernel (the default where it can be had) its calls
// reach the desktop like any program's; through the preloaded library they cannot be redirected,
// and the job is held saying so rather than run with its files unreachable.
TEST_F(Pool, RemoteIoWithAStaticProgramWorksThroughTheKernelAndIsHeldWithTheLibrary) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  // A statically linked program of our own (the C library's static archive is part of the build
  // tools).
  env_->Write("write.c",
              "#include <stdio.h>\nint main(int c, char** v) { FILE* f = fopen(v[1], \"w\");\n"
              "  return !f || fputs(\"static\\n\", f) < 0 || fclose(f) != 0; }\n");
  std::string prog = env_->dir() + "/static_write";
  auto cc = RunCommand({"/usr/bin/cc", "-static", "-o", prog, env_->dir() + "/write.c"});
  ASSERT_EQ(cc.exit_code, 0) << "cannot link a static program here: " << cc.err;
  const std::string job =
      "universe = vanilla\nexecutable = static_write\narguments = " + env_->dir() +
      "/static.txt\nwant_remote_io = true\n";
  int kernel = env_->Submit(job + "queue\n");
  int library = env_->Submit(job + "remote_io_method = preload\nqueue\n");
  std::string id = std::to_string(library) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Q(id, "JobStatus") == "5"; }, 30));
  EXPECT_NE(Q(id, "HoldReason").find("is statically linked; remote I/O needs a dynamically"),
            std::string::npos)
      << Q(id, "HoldReason");
  WaitDone(kernel);
  EXPECT_EQ(History(std::to_string(kernel) + ".0", "ExitCode"), "0");
  EXPECT_EQ(History(std::to_string(kernel) + ".0", "RemoteIOMethod"), "fuse");
  EXPECT_EQ(ReadFileOr(env_->dir() + "/static.txt"), "static\n");
}

// A Go program -- statically linked, making its own system calls with no C library, goroutines
// on several threads -- built here with Debian's Go: through the kernel it makes folders, writes
// and reads the desktop's files like any program; through the library it would reach none of
// them, and the job is held saying so.
const char* kGoProgram = R"GO(package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

func main() {
	d := os.Args[1]
	in, err := os.ReadFile(filepath.Join(d, "input.txt"))
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			dir := filepath.Join(d, "go", fmt.Sprintf("w%d", w), "deep")
			if err := os.MkdirAll(dir, 0o750); err != nil {
				panic(err)
			}
			f, err := os.Create(filepath.Join(dir, "out.txt"))
			if err != nil {
				panic(err)
			}
			for i := 0; i < 1000; i++ {
				fmt.Fprintf(f, "worker %d line %d of %d bytes\n", w, i, len(in))
			}
			if err := f.Close(); err != nil {
				panic(err)
			}
		}(w)
	}
	wg.Wait()
	if err := os.Symlink("w0/deep/out.txt", filepath.Join(d, "go", "first")); err != nil {
		panic(err)
	}
	back, err := os.ReadFile(filepath.Join(d, "go", "first"))
	if err != nil {
		panic(err)
	}
	os.WriteFile(filepath.Join(d, "go", "sum.txt"), []byte(fmt.Sprintf("%d\n", len(back))), 0o640)
}
)GO";

TEST_F(Pool, RemoteIoServesAGoProgramThroughTheKernelAndHoldsItWithTheLibrary) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  env_->Write("main.go", kGoProgram);
  env_->Write("input.txt", "twelve bytes");
  auto go = RunCommand({"/usr/bin/env", "HOME=" + d, "GOCACHE=" + d + "/.gocache",
                        "GOPATH=" + d + "/.gopath", "CGO_ENABLED=0", "GO111MODULE=off",
                        "/usr/bin/go", "build", "-o", d + "/goprog", d + "/main.go"});
  ASSERT_EQ(go.exit_code, 0) << "Debian's Go (golang-go, scripts/deps.d/rsc.txt) did not build it: "
                             << go.err;
  fs::create_directories(d + "/remote");
  std::string kernel = RunThroughTheKernel("goprog", d, "", 60);
  std::string expected[4];
  for (int w = 0; w < 4; ++w) {
    for (int i = 0; i < 1000; ++i)
      expected[w] +=
          "worker " + std::to_string(w) + " line " + std::to_string(i) + " of 12 bytes\n";
    EXPECT_TRUE(ReadFileOr(d + "/go/w" + std::to_string(w) + "/deep/out.txt") == expected[w])
        << "worker " << w;
    EXPECT_EQ(fs::status(d + "/go/w" + std::to_string(w) + "/deep").permissions(), fs::perms(0750));
  }
  EXPECT_EQ(fs::read_symlink(d + "/go/first"), "w0/deep/out.txt");
  EXPECT_EQ(ReadFileOr(d + "/go/sum.txt"), std::to_string(expected[0].size()) + "\n");
  // All of it through the agent's shadow, not the execute side's own view of this disk.
  EXPECT_GE(std::stoll("0" + History(kernel, "BytesWritten")),
            static_cast<long long>(4 * expected[0].size()));
  int library = env_->Submit("universe = vanilla\nexecutable = goprog\narguments = " + d +
                             "/remote\nwant_remote_io = true\nremote_io_method = preload\nqueue\n");
  std::string id = std::to_string(library) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Q(id, "JobStatus") == "5"; }, 30));
  EXPECT_NE(Q(id, "HoldReason").find("is statically linked; remote I/O needs a dynamically"),
            std::string::npos)
      << Q(id, "HoldReason");
  EXPECT_FALSE(fs::exists(d + "/remote/go"));
}

// Whether a piece of a checkpoint named `file` is being received in the job's store.
bool OnItsWay(const std::string& store, const std::string& file) {
  std::error_code ec;
  for (auto& e : fs::directory_iterator(store, ec)) {
    if (e.path().filename().string().starts_with("incoming.") && fs::exists(e.path() / file, ec))
      return true;
  }
  return false;
}

// The startd killed while a checkpoint is on its way: the one before it stays the one the job
// resumes from, whole.
TEST_F(Pool, AStartdKilledDuringACheckpointLeavesThePreviousOneToResumeFrom) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(1));
  std::string marks = env_->dir() + "/marks";
  // The second checkpoint carries 100 MB: long enough on the way to be cut.
  env_->Write("count.sh", CountingJob("0.2", "head -c 100000000 /dev/zero > blob"), 0755);
  int c = env_->Submit(
      "universe = vanilla\nexecutable = count.sh\narguments = " + marks +
      "\ncheckpoint_exit_code = 85\ntransfer_checkpoint_files = state, steps.txt, blob\n"
      "transfer_output_files = steps.txt\noutput = out\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  std::string store = env_->home() + "/spool/checkpoints/" + id;
  ASSERT_TRUE(WaitUntil([&] { return OnItsWay(store, "blob"); }, 30)) << ReadFileOr(marks);
  pid_t startd = StartdPid();
  ASSERT_GT(startd, 0);
  ASSERT_EQ(::kill(startd, SIGSTOP), 0);  // the transfer stops where it is
  EXPECT_EQ(Q(id, "NumCheckpoints"), "1");
  ASSERT_EQ(::kill(startd, SIGKILL), 0);

  WaitDone(c, 120);
  ExpectACountResumedOnceFromStep4(*env_, marks);
  EXPECT_EQ(History(id, "NumCheckpoints"), "2");
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
}

TEST_F(Pool, AJobWhoseStartdIsKilledRunsAgainAndFinishes) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(1));
  env_->Write("job.sh", kJobScript, 0755);
  env_->Write("data.txt", "abc\n");
  std::string marks = env_->dir() + "/marks";
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = 0 " + marks +
                       " 2\ntransfer_input_files = data.txt\noutput = out\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks).size() > 0; }, 20));
  pid_t startd = StartdPid();
  ASSERT_GT(startd, 0);
  ASSERT_EQ(::kill(startd, SIGKILL), 0);
  WaitDone(c);
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
  EXPECT_EQ(History(id, "ExitCode"), "3");
  EXPECT_EQ(ReadFileOr(env_->dir() + "/out"), "abc\n");
  EXPECT_EQ(ReadFileOr(marks), "run of 0\nrun of 0\n");  // the lost run, and the one that counted
}

TEST_F(Pool, AJobWhoseWrapperIsKilledRunsAgainAndNothingOfTheLostRunLingers) {
  Start("[pool]\nlocal_slots = 2\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(2));
  ExpectALostRunRunsAgain("kite-exec",
                          "(kite-exec, pid PID) was killed by signal 9 before the job's end was "
                          "known");
}

TEST_F(Pool, AJobWhoseStarterIsKilledRunsAgainAndNothingOfTheLostRunLingers) {
  Start("[pool]\nlocal_slots = 2\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(2));
  ExpectALostRunRunsAgain("kite-starter",
                          "the run's starter (kite-starter) went away before the job's end was "
                          "known");
}

// A batch system stopping a glide-in signals every process of its job (Slurm's `scancel --full`
// at the walltime): the job's wrapper forwards SIGTERM to the job, which dies of it. That is the
// glide-in going, not the job's end: the run is vacated and the job runs again. Here the job and
// its starter get SIGTERM well before the startd does, the order that would otherwise report it
// ended by signal 15.
TEST_F(Pool, ASigtermToEveryProcessOfTheGlideinVacatesTheJobRatherThanEndingIt) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(1));
  int c = SubmitTwoSecondJob(env_->dir() + "/marks");
  std::string id = std::to_string(c) + ".0";
  pid_t startd = StartdPid();
  ASSERT_GT(startd, 0);
  pid_t starter = ChildNamed(startd, "kite-starter");
  ASSERT_GT(starter, 0);
  pid_t wrapper = ChildNamed(starter, "kite-exec");
  ASSERT_GT(wrapper, 0);
  ASSERT_EQ(::kill(wrapper, SIGTERM), 0);
  ASSERT_EQ(::kill(starter, SIGTERM), 0);
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(id) == 1; }, 10))
      << "the run was not vacated: " << env_->Kite({"q", id, "-af", "JobStatus"}).out;
  ASSERT_EQ(::kill(startd, SIGTERM), 0);
  WaitDone(c, 90);  // on the startd the agent starts again
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
  EXPECT_EQ(History(id, "ExitCode"), "3");
  auto log = ReadFileOr(env_->dir() + "/job.log");
  EXPECT_NE(log.find("004 ("), std::string::npos) << log;
  EXPECT_NE(log.find("told to stop (SIGTERM)"), std::string::npos) << log;
}

TEST_F(Pool, JobsKeepRunningWhileTheAgentIsDownAndEachResultIsCollectedOnce) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  env_->Write("job.sh", kJobScript, 0755);
  env_->Write("data.txt", "xyz\n");
  std::string marks = env_->dir() + "/marks";
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = $(Process) " + marks +
                       " 3\ntransfer_input_files = data.txt\noutput = out.$(Process)\nqueue 4\n");
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks).size() >= 2 * 9; }, 20));
  env_->KillAgent();
  env_->StartAgent();
  WaitDone(c, 90);
  auto runs = ReadFileOr(marks);
  for (int p = 0; p < 4; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    std::string line = "run of " + std::to_string(p) + "\n";
    EXPECT_NE(runs.find(line), std::string::npos) << runs;
    EXPECT_EQ(runs.find(line), runs.rfind(line)) << "job " << p << " ran twice:\n" << runs;
    EXPECT_EQ(History(id, "NumJobStarts"), "1");
    EXPECT_EQ(ReadFileOr(env_->dir() + "/out." + std::to_string(p)), "xyz\n");
  }
}

// `kite agent stop` and `start` -- twice, to change the configuration, say -- while pool jobs run
// on the local startd: the startd and its jobs go on, the next agent adopts each run, and every
// job ends once with its output whole (docs/pool.md, "Local slots").
TEST_F(Pool, JobsOnTheLocalStartdRunOnceAcrossCleanAgentRestarts) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  pid_t startd = env_->LocalStartdPid();
  ASSERT_GT(startd, 0);
  env_->Write("job.sh", kJobScript, 0755);
  env_->Write("data.txt", "xyz\n");
  std::string marks = env_->dir() + "/marks";
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = $(Process) " + marks +
                       " 6\ntransfer_input_files = data.txt\noutput = out.$(Process)\n"
                       "log = job.log\nqueue 2\n");
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks).size() >= 2 * 9; }, 20));
  for (int i = 0; i < 2; ++i) {
    env_->StopAgent();
    EXPECT_EQ(env_->LocalStartdPid(), startd) << "the local startd went on without the agent";
    env_->StartAgent();
  }
  WaitDone(c, 90);
  auto runs = ReadFileOr(marks);
  for (int p = 0; p < 2; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    std::string line = "run of " + std::to_string(p) + "\n";
    EXPECT_NE(runs.find(line), std::string::npos) << runs;
    EXPECT_EQ(runs.find(line), runs.rfind(line)) << "job " << p << " ran twice:\n" << runs;
    EXPECT_EQ(History(id, "NumJobStarts"), "1");
    EXPECT_EQ(History(id, "ExitCode"), "3");
    EXPECT_EQ(ReadFileOr(env_->dir() + "/out." + std::to_string(p)), "xyz\n");
  }
  EXPECT_EQ(env_->LocalStartdPid(), startd);
  // The user log says the job was found again, never that it was evicted.
  auto log = ReadFileOr(env_->dir() + "/job.log");
  EXPECT_NE(log.find("023 ("), std::string::npos) << log;
  EXPECT_EQ(log.find("004 ("), std::string::npos) << log;
  // `--stop-startd` stops it too.
  auto r = env_->Kite({"agent", "stop", "--stop-startd"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitUntil([&] { return env_->LocalStartdPid() == 0; }, 20));
}

// A restart to change [pool] settings: an idle local startd from before is replaced by one with
// the new settings; one with running jobs would wait for them (the agent's log says so).
TEST_F(Pool, ARestartWithNewPoolSettingsReplacesAnIdleLocalStartd) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  pid_t before = env_->LocalStartdPid();
  env_->StopAgent();
  EXPECT_EQ(env_->LocalStartdPid(), before);
  WriteFile(env_->home() + "/config.toml",
            "[agent]\nkill_grace = 2\n[pool]\nlocal_slots = 1\nlocal_start = true\n");
  env_->StartAgent();
  EXPECT_TRUE(WaitSlots(1, 30)) << Slots();
  EXPECT_NE(env_->LocalStartdPid(), before);
  // The same settings again: the startd is kept.
  pid_t now = env_->LocalStartdPid();
  env_->StopAgent();
  env_->StartAgent();
  EXPECT_TRUE(WaitSlots(1, 30));
  EXPECT_EQ(env_->LocalStartdPid(), now);
}

// The same for a DAG whose node jobs run on the local startd: restarts while a node runs start
// no node twice.
TEST_F(Pool, DagNodesOnTheLocalStartdRunOnceAcrossCleanAgentRestarts) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  std::string marks = env_->dir() + "/marks";
  env_->Write("node.sh", "#!/bin/sh\necho \"run of $1\" >> \"$2\"\nsleep 4\n", 0755);
  env_->Write("node.sub", "universe = vanilla\nexecutable = node.sh\narguments = $(node) " + marks +
                              "\nqueue\n");
  env_->Write("two.dag",
              "JOB A node.sub\nJOB B node.sub\nVARS A node=\"A\"\n"
              "VARS B node=\"B\"\nPARENT A CHILD B\n");
  auto r = env_->Kite({"dag", "submit", "two.dag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("submitted to cluster ([0-9]+)"))) << r.out;
  for (const char* node : {"A", "B"}) {
    ASSERT_TRUE(WaitUntil(
        [&] { return ReadFileOr(marks).find(std::string("run of ") + node) != std::string::npos; },
        30))
        << node << " never ran";
    env_->StopAgent();
    env_->StartAgent();
  }
  auto w = env_->Kite({"wait", m[1].str(), "--timeout", "90"});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << env_->Kite({"q", "-dag"}).out;
  EXPECT_EQ(ReadFileOr(marks), "run of A\nrun of B\n");
  EXPECT_EQ(env_->Kite({"history", m[1].str(), "-af", "ExitCode"}).out, "0\n");
}

TEST_F(Pool, AFalseStartExpressionKeepsJobsAway) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = \"TARGET.Owner == \\\"nobody-here\\\"\"\n");
  ASSERT_TRUE(WaitSlots(1));
  int c = env_->Submit("universe = vanilla\nexecutable = /bin/true\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ::usleep(1500 * 1000);
  EXPECT_EQ(env_->JobStatus(id), 1);
  EXPECT_EQ(Q(id, "NumJobStarts"), "undefined");
}

TEST_F(Pool, AnInputFileGoneBeforeTheJobStartsHoldsItWithTheReason) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  // condor_submit checks the file is there; it goes between the submit and the start.
  env_->Write("soon-gone.txt", "x");
  int c = env_->Submit(
      "universe = vanilla\nexecutable = /bin/true\nshould_transfer_files = YES\n"
      "transfer_input_files = soon-gone.txt\nhold = true\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  fs::remove(env_->dir() + "/soon-gone.txt");
  ASSERT_EQ(env_->Kite({"release", id}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return Q(id, "HoldReasonCode") == "13"; }, 20))
      << env_->Kite({"q", id, "-hold"}).out;
  EXPECT_EQ(env_->JobStatus(id), 5);
  EXPECT_NE(Q(id, "HoldReason").find("soon-gone.txt"), std::string::npos) << Q(id, "HoldReason");
}

// A kite-startd of its own (as a glide-in's would be), dialling the agent's socket with a pool
// credential the agent issued for it (kite pool credential create).
pid_t SpawnStartd(const std::string& home, const std::string& name, const std::string& work,
                  const std::vector<std::string>& extra, const std::string& bin = BinDir()) {
  std::string credential = work + ".credential";
  auto issued = RunCommand({BinDir() + "/kite", "pool", "credential", "create", "--name", name,
                            "--slots", "4", "-o", credential},
                           {"KITE_HOME=" + home});
  EXPECT_EQ(issued.exit_code, 0) << issued.out << issued.err;
  std::vector<std::string> args = {bin + "/kite-startd",
                                   "--agent",
                                   "unix:" + home + "/pool.sock",
                                   "--name",
                                   name,
                                   "--slots",
                                   "1",
                                   "--credential",
                                   credential,
                                   "--work",
                                   work,
                                   "--log",
                                   work + ".log"};
  // A short grace unless the test sets its own.
  if (std::find(extra.begin(), extra.end(), "--kill-grace") == extra.end())
    args.insert(args.end(), {"--kill-grace", "1"});
  args.insert(args.end(), extra.begin(), extra.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Reaps `pid` within `seconds`; its exit code, or -1.
int WaitExit(pid_t pid, double seconds) {
  int status = 0;
  bool done = WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds);
  return done && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A startd whose connection goes quiet without closing (a NAT's timeout, a cut cable; here the
// startd is stopped with SIGSTOP) is taken for gone after 4 of its UpdateIntervals (at least 5 s):
// its slot leaves `kite status` and the agent's log says why. Once it goes on, it finds its
// connection closed, dials again and offers the slot anew.
TEST_F(Pool, AStartdThatFallsSilentIsTakenForGoneAndOffersItsSlotAgainWhenItSpeaks) {
  Start("[pool]\nlocal_slots = 0\n");
  std::string work = env_->dir() + "/quiet";
  pid_t s = SpawnStartd(env_->home(), "quiet", work, {"--update-interval", "1"});
  ASSERT_TRUE(WaitSlots(1)) << ReadFileOr(work + ".log");
  ASSERT_EQ(::kill(s, SIGSTOP), 0);
  auto stopped = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitSlots(0, 20)) << env_->Kite({"status"}).out;
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  EXPECT_GE(took, 3.5) << "taken for gone before its silence limit";
  EXPECT_NE(ReadFileOr(env_->home() + "/agent.log").find("silent for"), std::string::npos)
      << ReadFileOr(env_->home() + "/agent.log");
  ASSERT_EQ(::kill(s, SIGCONT), 0);
  EXPECT_TRUE(WaitSlots(1, 30)) << ReadFileOr(work + ".log");
  ::kill(s, SIGTERM);
  EXPECT_EQ(WaitExit(s, 20), 0);
}

TEST_F(Pool, AStartdThatLeavesVacatesItsJobWhichFinishesOnAnother) {
  Start("[pool]\nlocal_slots = 0\n");
  env_->Write("job.sh", kJobScript, 0755);
  env_->Write("data.txt", "abc\n");
  std::string marks = env_->dir() + "/marks";
  std::string work = env_->dir() + "/w";
  // A's lifetime ends while the job runs; B is told to stop (SIGTERM, as a batch system does
  // before its walltime); C lets it finish.
  pid_t a = SpawnStartd(env_->home(), "a", work + "a", {"--lifetime", "3"});
  ASSERT_TRUE(WaitSlots(1));
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\narguments = 0 " + marks +
                       " 8\ntransfer_input_files = data.txt\noutput = out\nlog = job.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "run of 0\n"; }, 20));
  EXPECT_EQ(WaitExit(a, 20), 0);  // it left by itself, before the job could end
  EXPECT_TRUE(WaitUntil([&] { return env_->JobStatus(id) == 1; }, 10));
  pid_t b = SpawnStartd(env_->home(), "b", work + "b", {});
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "run of 0\nrun of 0\n"; }, 20));
  ASSERT_EQ(::kill(b, SIGTERM), 0);
  EXPECT_EQ(WaitExit(b, 20), 0);
  EXPECT_TRUE(WaitUntil([&] { return env_->JobStatus(id) == 1; }, 10));
  pid_t cc = SpawnStartd(env_->home(), "c", work + "c", {"--idle-timeout", "2"});
  WaitDone(c, 60);
  EXPECT_EQ(WaitExit(cc, 30), 0);  // and C leaves once idle
  EXPECT_EQ(History(id, "NumJobStarts"), "3");
  EXPECT_EQ(History(id, "LastRemoteHost"), "slot1@c");
  EXPECT_EQ(History(id, "ExitCode"), "3");
  EXPECT_EQ(ReadFileOr(env_->dir() + "/out"), "abc\n");
  auto log = ReadFileOr(env_->dir() + "/job.log");
  size_t evictions = 0;
  for (size_t at = log.find("\n004 ("); at != std::string::npos; at = log.find("\n004 (", at + 1))
    ++evictions;
  EXPECT_EQ(evictions, 2u) << log;
  EXPECT_NE(log.find("SlotName: slot1@c"), std::string::npos) << log;
}

// A batch system told to stop a glide-in signals every process of the job (Slurm's
// `scancel --full`) and kite-exec forwards its own copy, so the startd gets SIGTERM more than
// once, the later ones while it is finishing. However many come, it leaves as it should: exit
// code 0, not killed by a signal (which would make its glide-in's grid job end "by signal 15").
TEST_F(Pool, AStartdGivenManySigtermsLeavesWithExitCodeZero) {
  Start("[pool]\nlocal_slots = 0\n");
  std::string work = env_->dir() + "/w";
  for (int round = 0; round < 5; ++round) {
    pid_t pid =
        SpawnStartd(env_->home(), "t" + std::to_string(round), work + std::to_string(round), {});
    ASSERT_TRUE(WaitSlots(1));
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(pid, &status, WNOHANG) != pid) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the startd did not leave";
      ::kill(pid, SIGTERM);  // a zombie is still this pid: nothing else can be hit
      ::usleep(100);
    }
    EXPECT_TRUE(WIFEXITED(status)) << "round " << round << ": killed by signal "
                                   << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (WIFEXITED(status)) {
      EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round;
    }
    ASSERT_TRUE(WaitSlots(0));
  }
}

// Runs about `tenths` tenths of a second of its own time (a stopped process does not count on),
// leaving a mark per run.
std::string TimedJob(const std::string& marks, int tenths, bool ignore_term = false) {
  return std::string("#!/bin/sh\n") + (ignore_term ? "trap '' TERM\n" : "") + "echo run >> " +
         marks + "\ni=0\nwhile [ $i -lt " + std::to_string(tenths) +
         " ]; do sleep 0.1; i=$((i+1)); done\nexit 3\n";
}

// The owner's SUSPEND stops the running job and CONTINUE lets it go on: the job is Suspended
// (JobStatus 7) meanwhile, the user log says both, and the suspension shows in the job's times.
TEST_F(Pool, SuspendAndContinueStopAndResumeARunningJob) {
  // Suspended 2 s after the claim, for about 3 s, once.
  Start(
      "[pool]\nlocal_slots = 1\nlocal_start = true\n"
      "local_suspend = \"Activity == \\\"Busy\\\" && time() - EnteredCurrentState >= 2 && "
      "time() - EnteredCurrentState < 4\"\n"
      "local_continue = \"time() - EnteredCurrentState >= 5\"\n");
  ASSERT_TRUE(WaitSlots(1));
  std::string marks = env_->dir() + "/marks";
  env_->Write("job.sh", TimedJob(marks, 40), 0755);
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\nlog = job.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(id) == 7; }, 20))
      << env_->Kite({"q", "-nobatch"}).out;
  EXPECT_NE(env_->Kite({"q", "-nobatch", id}).out.find(" S "), std::string::npos)
      << env_->Kite({"q", "-nobatch", id}).out;
  EXPECT_NE(env_->Kite({"status"}).out.find("Suspended"), std::string::npos)
      << env_->Kite({"status"}).out;
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(id) == 2; }, 20));
  WaitDone(c, 60);
  EXPECT_EQ(History(id, "ExitCode"), "3");
  EXPECT_EQ(History(id, "NumJobStarts"), "1");
  EXPECT_EQ(History(id, "TotalSuspensions"), "1");
  EXPECT_EQ(History(id, "LastSuspensionTime"), "0");
  int suspended = std::atoi(History(id, "CumulativeSuspensionTime").c_str());
  EXPECT_GE(suspended, 2);
  EXPECT_LE(suspended, 5);
  // Four seconds of its own time and the suspension: the wall clock counts both.
  EXPECT_GE(std::atof(History(id, "RemoteWallClockTime").c_str()), 4.0 + suspended - 1);
  auto log = ReadFileOr(env_->dir() + "/job.log");
  size_t exec = log.find("001 ("), susp = log.find("010 ("), cont = log.find("011 ("),
         end = log.find("005 (");
  ASSERT_NE(susp, std::string::npos) << log;
  ASSERT_NE(cont, std::string::npos) << log;
  EXPECT_LT(exec, susp);
  EXPECT_LT(susp, cont);
  EXPECT_LT(cont, end);
  EXPECT_NE(log.find("Job was suspended.\n\tNumber of processes actually suspended: 1"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Job was unsuspended."), std::string::npos) << log;
  EXPECT_EQ(ReadFileOr(marks), "run\n");
}

// PREEMPT vacates a running job after its retirement time (MaxJobRetirementTime), KILL cuts the
// vacating short for a job that ignores SIGTERM, and the job finishes on another slot.
TEST_F(Pool, PreemptVacatesAfterTheRetirementTimeAndTheJobFinishesElsewhere) {
  Start("[pool]\nlocal_slots = 0\n");
  std::string marks = env_->dir() + "/marks", work = env_->dir() + "/w";
  env_->Write("job.sh", TimedJob(marks, 60, /*ignore_term=*/true), 0755);
  pid_t a =
      SpawnStartd(env_->home(), "a", work + "a",
                  {"--preempt", "Activity == \"Busy\" && time() - EnteredCurrentActivity >= 1",
                   "--max-job-retirement-time", "2", "--kill", "true", "--kill-grace", "60"});
  ASSERT_TRUE(WaitSlots(1));
  int c = env_->Submit("universe = vanilla\nexecutable = job.sh\nlog = job.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "run\n"; }, 20));
  // Retiring while its retirement time lasts, then vacated; KILL spares it the 60 s grace.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return env_->Kite({"status", "-af", "Activity"}).out == "Retiring\n";
      },
      10))
      << env_->Kite({"status"}).out;
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(id) == 1; }, 15))
      << env_->Kite({"q", "-nobatch"}).out << ReadFileOr(work + "a.log");
  double first_run = std::atof(Q(id, "RemoteWallClockTime").c_str());
  EXPECT_GE(first_run, 2.5);   // ran on through its retirement time
  EXPECT_LT(first_run, 10.0);  // and was not left its 60 s of grace
  EXPECT_NE(Q(id, "LastRemoteHost").find("slot1@a"), std::string::npos);
  pid_t b = SpawnStartd(env_->home(), "b", work + "b", {});
  WaitDone(c, 60);
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
  EXPECT_EQ(History(id, "LastRemoteHost"), "slot1@b");
  EXPECT_EQ(History(id, "ExitCode"), "3");
  auto log = ReadFileOr(env_->dir() + "/job.log");
  EXPECT_NE(log.find("004 ("), std::string::npos) << log;
  EXPECT_NE(log.find("PREEMPT = "), std::string::npos) << log;
  for (pid_t p : {a, b}) {
    ::kill(p, SIGTERM);
    EXPECT_EQ(WaitExit(p, 20), 0);
  }
}

// Speaks the pool protocol on the agent's socket as a broken or hostile startd would.
class RawStartd {
 public:
  explicit RawStartd(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawStartd() { ::close(fd_); }
  bool ok() const { return ok_; }
  // MSG_NOSIGNAL: the agent may have closed the connection already (a refusal); no SIGPIPE.
  void Send(const std::string& bytes) {
    (void)!::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // The next frame, or nullopt when the agent closed the connection.
  std::optional<pool::Frame> Next() {
    for (;;) {
      auto f = reader_.Next();
      if (!f) return std::nullopt;
      if (*f) return std::move(**f);
      char buf[4096];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  pool::FrameReader reader_;
};

TEST_F(Pool, MalformedStartdsAreRefusedAndNothingElseIsDisturbed) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(1));
  std::string sock = env_->home() + "/pool.sock";
  {  // no pool credential: refused before anything it offers is read
    RawStartd s(sock);
    ASSERT_TRUE(s.ok());
    pool::Message hello{.type = pool::MsgType::kHello, .name = "evil"};
    hello.slots = {{"slot1@evil", "[ Cpus = ; ]"}};
    s.Send(pool::EncodeFrame(hello));
    auto f = s.Next();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->msg.type, pool::MsgType::kRefuse);
    EXPECT_NE(f->msg.reason.find("no pool credential"), std::string::npos) << f->msg.reason;
    EXPECT_FALSE(s.Next());  // and the connection is closed
  }
  {  // the local startd's own credential, with a slot ad that does not parse
    auto local = ReadFileOr(env_->home() + "/pool/local.credential");
    auto claims = pool::ParseCredential(local);
    ASSERT_TRUE(claims) << local;
    RawStartd s(sock);
    pool::Message hello{
        .type = pool::MsgType::kHello, .name = claims->name, .credential = std::string(local)};
    hello.slots = {{"slot1@" + claims->name, "[ Cpus = ; ]"}};
    s.Send(pool::EncodeFrame(hello));
    auto f = s.Next();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->msg.type, pool::MsgType::kRefuse);
    EXPECT_NE(f->msg.reason.find("slot1@" + claims->name + ": its ad does not parse"),
              std::string::npos)
        << f->msg.reason;
    EXPECT_FALSE(s.Next());
  }
  {  // garbage bytes instead of a frame
    RawStartd s(sock);
    s.Send(std::string("\xff\xff\xff\xff garbage", 12));
    EXPECT_FALSE(s.Next());
  }
  {  // a startd that reports output for a job it was never given: not let in, nothing written
    RawStartd s(sock);
    pool::Message hello{.type = pool::MsgType::kHello, .name = "liar"};
    hello.slots = {{"slot1@liar", "[ Requirements = false ]"}};
    s.Send(pool::EncodeFrame(hello));
    pool::Message out{.type = pool::MsgType::kOutput, .job = "1.0", .run = "forged", .path = "x"};
    s.Send(pool::EncodeFrame(out, "planted"));
    pool::Message ended{
        .type = pool::MsgType::kEnded, .slot = "slot1@liar", .job = "1.0", .run = "forged"};
    s.Send(pool::EncodeFrame(ended));
    auto f = s.Next();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->msg.type, pool::MsgType::kRefuse);
    ::usleep(300 * 1000);
    EXPECT_FALSE(fs::exists(env_->dir() + "/x"));
  }
  // The agent and its real startd still serve.
  int c = env_->Submit(
      "universe = vanilla\nexecutable = /bin/echo\narguments = fine\noutput = o\nqueue\n");
  WaitDone(c);
  EXPECT_EQ(ReadFileOr(env_->dir() + "/o"), "fine\n");
  auto log = ReadFileOr(env_->home() + "/agent.log");
  EXPECT_NE(log.find("refused startd 'evil'"), std::string::npos) << log;
  EXPECT_NE(log.find("refused startd 'liar'"), std::string::npos) << log;
}

// An unmodified C program that keeps its state in memory — an array on the heap, a buffer on the
// stack, a counter in bss — and appends a line per step to a file on the desktop (remote I/O).
const char* kMemoryCounter = R"(#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static long in_bss;
int main(int argc, char** argv) {
  int steps = atoi(argv[2]);
  long* heap = calloc(1 << 16, sizeof(long));
  char on_stack[256];
  long sum = 0;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) { perror(argv[1]); return 2; }
  for (int i = 1; i <= steps; ++i) {
    heap[i] = heap[i - 1] + i;
    sum += heap[i];
    in_bss += 2;
    snprintf(on_stack, sizeof on_stack, "step %d heap %ld sum %ld bss %ld pid-free\n", i, heap[i],
             sum, in_bss);
    if (write(fd, on_stack, strlen(on_stack)) < 0) { perror("write"); return 3; }
    usleep(100000);
  }
  printf("done: sum %ld\n", sum);
  return 0;
}
)";

// Builds the counter (or `source`) as `counter` in the test's folder, with `opt`.
bool BuildCounter(KiteEnv& env, const std::string& source = kMemoryCounter,
                  const std::string& opt = "-O1") {
  env.Write("counter.c", source);
  auto cc =
      RunCommand({"/usr/bin/cc", opt, "-o", env.dir() + "/counter", env.dir() + "/counter.c"});
  EXPECT_EQ(cc.exit_code, 0) << cc.err;
  return cc.exit_code == 0;
}

// What the counter writes when nothing stops it.
std::string CounterSteps(int steps) {
  std::string out;
  long heap = 0, sum = 0, bss = 0;
  for (int i = 1; i <= steps; ++i) {
    heap += i;
    sum += heap;
    bss += 2;
    out += "step " + std::to_string(i) + " heap " + std::to_string(heap) + " sum " +
           std::to_string(sum) + " bss " + std::to_string(bss) + " pid-free\n";
  }
  return out;
}

// `universe = standard` (remote I/O and transparent checkpoints) for a program that knows
// nothing of either: vacated three times, each time from a different startd (each one's START
// takes the job only with its number of checkpoints), it resumes every time from the checkpoint
// taken as it was vacated — memory and the remote file's end exactly where they were — and its
// result is that of a run never interrupted; `kite checkpoint` takes one and lets it go on.
TEST_F(Pool, TransparentCheckpointsCarryAnUnmodifiedProgramAcrossFourStartds) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildCounter(*env_));
  const int kSteps = 80;
  std::string work = d + "/w";
  std::vector<pid_t> startds;
  const char* kStarts[] = {"TARGET.NumCheckpoints =?= undefined", "TARGET.NumCheckpoints == 1",
                           "TARGET.NumCheckpoints == 3", "TARGET.NumCheckpoints == 4"};
  for (int i = 0; i < 4; ++i) {
    startds.push_back(SpawnStartd(env_->home(), "s" + std::to_string(i), work + std::to_string(i),
                                  {"--start", kStarts[i], "--kill-grace", "5"}));
  }
  ASSERT_TRUE(WaitSlots(4));
  int c = env_->Submit("universe = standard\nexecutable = counter\narguments = " + d +
                       "/steps.txt " + std::to_string(kSteps) +
                       "\noutput = out\nerror = err\nlog = counter.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  auto lines = [&] {
    auto t = ReadFileOr(d + "/steps.txt");
    return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
  };
  auto running_on = [&](const std::string& host) {
    return WaitUntil(
        [&] { return Q(id, "RemoteHost") == "slot1@" + host && env_->JobStatus(id) == 2; }, 30);
  };
  ASSERT_TRUE(running_on("s0")) << env_->Kite({"q", "-nobatch"}).out;
  ASSERT_TRUE(WaitUntil([&] { return lines() >= 10; }, 30)) << lines();
  // 1: vacated from s0; it goes on at s1.
  ASSERT_EQ(env_->Kite({"vacate", id}).exit_code, 0);
  ASSERT_TRUE(running_on("s1")) << Q(id, "NumCheckpoints") << ReadFileOr(work + "0.log");
  EXPECT_EQ(Q(id, "NumCheckpoints"), "1");
  int at = lines();
  // `kite checkpoint`: one more, and it goes on where it is.
  ASSERT_TRUE(WaitUntil([&] { return lines() >= at + 10; }, 30));
  auto k = env_->Kite({"checkpoint", id});
  ASSERT_EQ(k.exit_code, 0) << k.out << k.err;
  ASSERT_TRUE(WaitUntil([&] { return Q(id, "NumCheckpoints") == "2"; }, 30));
  EXPECT_EQ(Q(id, "RemoteHost"), "slot1@s1");
  // 2 and 3: from s1 to s2, from s2 to s3.
  for (int hop = 2; hop <= 3; ++hop) {
    at = lines();
    ASSERT_TRUE(WaitUntil([&] { return lines() >= at + 8; }, 30));
    ASSERT_EQ(env_->Kite({"vacate", id}).exit_code, 0);
    ASSERT_TRUE(running_on("s" + std::to_string(hop)))
        << Q(id, "NumCheckpoints") << ReadFileOr(work + std::to_string(hop - 1) + ".log");
  }
  WaitDone(c, 90);
  EXPECT_EQ(ReadFileOr(d + "/steps.txt"), CounterSteps(kSteps));
  long sum = 0, heap = 0;
  for (int i = 1; i <= kSteps; ++i) sum += (heap += i);
  EXPECT_EQ(ReadFileOr(d + "/out"), "done: sum " + std::to_string(sum) + "\n");
  EXPECT_EQ(ReadFileOr(d + "/err"), "");
  EXPECT_EQ(History(id, "NumCheckpoints"), "4");
  EXPECT_EQ(History(id, "NumJobStarts"), "4");
  EXPECT_EQ(History(id, "LastRemoteHost"), "slot1@s3");
  EXPECT_EQ(History(id, "ExitCode"), "0");
  for (pid_t p : startds) ::kill(p, SIGTERM);
  for (pid_t p : startds) WaitExit(p, 20);
}

// The same startd's programs at another path (hard links: the same files), as a glide-in unpacked
// in its own folder has them: its jobs get the preloaded library from there.
std::string InstallElsewhere(const std::string& dir) {
  fs::create_directories(dir);
  for (const char* p :
       {"kite-startd", "kite-starter", "kite-exec", "libkite_rsc.so", "kite-rsc-fuse"})
    fs::create_hard_link(BinDir() + "/" + p, dir + "/" + p);
  return dir;
}

// A program in the spirit of a simulation: 64 MiB of state, a pass over it at a time (each said
// in `progress`, a file on the desktop), a checksum printed at the end. argv: progress passes
// pause-in-microseconds.
const char* kSimulation = R"(#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  size_t n = (size_t)64 << 20;
  unsigned char* a = calloc(n, 1);
  int passes = atoi(argv[2]);
  FILE* progress = fopen(argv[1], "a");
  if (!a || !progress) return 2;
  for (int p = 1; p <= passes; ++p) {
    for (size_t i = 0; i < n; i += 64) a[i] = (unsigned char)(a[i] * 31 + i + p);
    fprintf(progress, "pass %d\n", p);
    fflush(progress);
    usleep(atoi(argv[3]));
  }
  unsigned long sum = 0;
  for (size_t i = 0; i < n; i += 64) sum = sum * 131 + a[i];
  char* line = malloc(64);
  snprintf(line, 64, "checksum %lu", sum);
  puts(line);
  free(line);
  return 0;
}
)";

// The same in Python, with a module that loads a library (hashlib: libcrypto) and text that
// needs the locale's files (é under C.UTF-8).
const char* kPythonSimulation = R"(import hashlib, sys, time
h = hashlib.sha256()
passes, pause = int(sys.argv[2]), float(sys.argv[3])
with open(sys.argv[1], "a", encoding="utf-8") as progress:
    for p in range(1, passes + 1):
        h.update(("pass %d é" % p).encode())
        progress.write("pass %d\n" % p)
        progress.flush()
        time.sleep(pause)
print("checksum", h.hexdigest(), "é")
)";

// The same simulation in C++ (iostreams, a std::map, and a static object whose destructor
// prints at exit), in Fortran (its own I/O library over the remote file) and in Perl.
const char* kCppSimulation = R"(#include <unistd.h>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
struct Farewell {
  int passes = 0;
  ~Farewell() { std::cout << "farewell after " << passes << " passes" << std::endl; }
};
static Farewell farewell;
int main(int argc, char** argv) {
  int passes = std::stoi(argv[2]);
  std::vector<double> v(1 << 22, 1.0);
  std::map<int, std::string> seen;
  std::ofstream progress(argv[1], std::ios::app);
  double sum = 0;
  for (int p = 1; p <= passes; ++p) {
    for (auto& x : v) x = x * 1.0000001 + p;
    sum += v[p * 1000];
    seen[p] = std::to_string(sum);
    progress << "pass " << p << std::endl;
    usleep(std::stoi(argv[3]));
  }
  std::ostringstream out;
  out.precision(17);
  out << "sum " << sum << " entries " << seen.size() << " last " << seen.rbegin()->second;
  std::cout << out.str() << std::endl;
  farewell.passes = passes;
}
)";

const char* kFortranSimulation = R"(program sim
  use iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function usleep(us) bind(c, name='usleep')
      import :: c_int
      integer(c_int), value :: us
    end function
  end interface
  integer :: passes, p, i, pause_us, rc
  character(len=512) :: path, arg
  real(8), allocatable :: a(:)
  call get_command_argument(1, path)
  call get_command_argument(2, arg)
  read(arg, *) passes
  call get_command_argument(3, arg)
  read(arg, *) pause_us
  allocate(a(4000000))
  a = 1.0d0
  open(unit=10, file=trim(path), position='append', action='write')
  do p = 1, passes
    do i = 1, size(a)
      a(i) = a(i) * 1.0000001d0 + p
    end do
    write(10, '(A,I0)') 'pass ', p
    flush(10)
    rc = usleep(int(pause_us, c_int))
  end do
  close(10)
  write(*, '(A,ES25.17)') 'sum ', sum(a)
end program sim
)";

const char* kPerlSimulation = R"(use strict;
use warnings;
my ($path, $passes, $pause) = @ARGV;
my @a = (1) x 200000;
my %seen;
open(my $out, '>>', $path) or die "$path: $!";
$out->autoflush(1);
for my $p (1 .. $passes) {
  $_ = ($_ * 3 + $p) % 1000003 for @a;
  $seen{$p} = $a[$p];
  print $out "pass $p\n";
  select(undef, undef, undef, $pause);
}
my $s = 0;
$s = ($s * 31 + $_) % 1000000007 for @a;
print "sum $s seen ", scalar(keys %seen), "\n";
)";

// Builds `source` (in `file`) with `compiler` into the test's folder as `sim`; false on failure.
bool BuildSimulation(KiteEnv& env, const std::string& compiler, const std::string& file,
                     const char* source) {
  env.Write(file, source);
  auto cc = RunCommand({compiler, "-O1", "-o", env.dir() + "/sim", env.dir() + "/" + file});
  EXPECT_EQ(cc.exit_code, 0) << cc.err;
  return cc.exit_code == 0;
}

void Pool::HopACompiledSimulation(const std::string& compiler, const std::string& file,
                                  const char* source) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildSimulation(*env_, compiler, file, source));
  auto reference = RunCommand({d + "/sim", d + "/reference", "24", "0"});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  HopThroughThreeInstalls("universe = standard\nexecutable = sim\narguments = " + d +
                              "/progress 24 150000\noutput = out\nerror = err\nqueue\n",
                          24, reference.out);
}

void Pool::HopThroughThreeInstalls(const std::string& submit, int passes,
                                   const std::string& expected_out) {
  const std::string d = env_->dir();
  // A: the build's own folder; B and C: the same programs at a longer and a shorter path, so
  // everything the loader allocates before the program's main is elsewhere on each.
  std::string b = InstallElsewhere(d + "/another/install/of/the/same/kite/for/site/b/bin");
  std::string c = InstallElsewhere(d + "/c");
  std::vector<pid_t> startds = {
      SpawnStartd(env_->home(), "A", d + "/wa",
                  {"--start", "TARGET.NumCheckpoints =?= undefined || TARGET.NumCheckpoints == 3"}),
      SpawnStartd(env_->home(), "B", d + "/wb", {"--start", "TARGET.NumCheckpoints == 1"}, b),
      SpawnStartd(env_->home(), "C", d + "/wc", {"--start", "TARGET.NumCheckpoints == 2"}, c)};
  ASSERT_TRUE(WaitSlots(3));
  int cluster = env_->Submit(submit);
  std::string id = std::to_string(cluster) + ".0";
  auto passes_done = [&] {
    auto t = ReadFileOr(d + "/progress");
    return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
  };
  const char* hosts[] = {"A", "B", "C", "A"};
  for (int hop = 0; hop < 3; ++hop) {
    ASSERT_TRUE(WaitUntil(
        [&] {
          return Q(id, "RemoteHost") == std::string("slot1@") + hosts[hop] &&
                 env_->JobStatus(id) == 2;
        },
        60))
        << hop << " " << env_->Kite({"q", "-nobatch"}).out;
    int at = passes_done();
    ASSERT_TRUE(WaitUntil([&] { return passes_done() >= at + 3; }, 60)) << passes_done();
    ASSERT_EQ(env_->Kite({"vacate", id}).exit_code, 0);
    ASSERT_TRUE(WaitUntil([&] { return Q(id, "NumCheckpoints") == std::to_string(hop + 1); }, 60))
        << Q(id, "LastCheckpointRefusal") << ReadFileOr(env_->home() + "/agent.log");
  }
  WaitDone(cluster, 120);
  EXPECT_EQ(History(id, "ExitCode"), "0") << ReadFileOr(d + "/err");
  EXPECT_EQ(History(id, "NumJobStarts"), "4");
  EXPECT_EQ(History(id, "LastRemoteHost"), "slot1@A");
  EXPECT_EQ(ReadFileOr(d + "/out"), expected_out) << ReadFileOr(d + "/err");
  std::string all;
  for (int p = 1; p <= passes; ++p) all += "pass " + std::to_string(p) + "\n";
  EXPECT_EQ(ReadFileOr(d + "/progress"), all);
  for (pid_t p : startds) ::kill(p, SIGTERM);
  for (pid_t p : startds) WaitExit(p, 20);
}

// A checkpoint is restored on startds whose programs (and so the preloaded library) are at other
// paths, as a glide-in's are: the loader's own allocations then sit elsewhere before the restore,
// and what the loader wrote into the libraries' read-only relocations, and where the kernel keeps
// the thread's rseq area, were the new process's. It crashed with SIGSEGV at the program's end.
TEST_F(Pool, ATransparentCheckpointOfACProgramRestoresOnStartdsInstalledElsewhere) {
  HopACompiledSimulation("/usr/bin/cc", "sim.c", kSimulation);
}

// Python under the default locale (C.UTF-8), with a module that loads a library after the
// program started (hashlib): what the program mapped itself — the locale's files, libcrypto —
// is mapped again at its place on restore when the file there is the same. It was refused: "a
// file mapped at the checkpoint is not here: /usr/lib/locale/C.utf8/LC_CTYPE".
TEST_F(Pool,
       ATransparentCheckpointOfPythonUnderTheDefaultLocaleRestoresOnStartdsInstalledElsewhere) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  env_->Write("sim.py", kPythonSimulation);
  auto reference = RunCommand({"/usr/bin/python3", d + "/sim.py", d + "/reference", "24", "0"},
                              {"LANG=C.UTF-8"});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  HopThroughThreeInstalls(
      "universe = standard\nexecutable = /usr/bin/python3\ntransfer_executable = false\n"
      "arguments = sim.py " +
          d +
          "/progress 24 0.15\ntransfer_input_files = sim.py\n"
          "environment = \"LANG=C.UTF-8\"\noutput = out\nerror = err\nqueue\n",
      24, reference.out);
}

TEST_F(Pool, ATransparentCheckpointOfACppProgramRestoresOnStartdsInstalledElsewhere) {
  HopACompiledSimulation("/usr/bin/g++", "sim.cpp", kCppSimulation);
}

TEST_F(Pool, ATransparentCheckpointOfAFortranProgramRestoresOnStartdsInstalledElsewhere) {
  HopACompiledSimulation("/usr/bin/gfortran", "sim.f90", kFortranSimulation);
}

TEST_F(Pool, ATransparentCheckpointOfAPerlProgramRestoresOnStartdsInstalledElsewhere) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  env_->Write("sim.pl", kPerlSimulation);
  auto reference = RunCommand({"/usr/bin/perl", d + "/sim.pl", d + "/reference", "24", "0"});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  HopThroughThreeInstalls(
      "universe = standard\nexecutable = /usr/bin/perl\ntransfer_executable = false\n"
      "arguments = sim.pl " +
          d +
          "/progress 24 0.15\ntransfer_input_files = sim.pl\noutput = out\nerror = err\n"
          "queue\n",
      24, reference.out);
}

// A bash script that prepares, runs a C program for most of its time, and reports (the issue's
// "executable = run.sh"): the shell waiting for its child and the child are checkpointed
// together, and restored together on startds installed elsewhere — the child started again as
// the shell's child, its output file (the shell's `>`) put back, and the ids the shell knows
// ($$, its child's) kept, and the programs it starts after the restore given this run's
// sandbox in their environment. The script's lines after the program see what an uninterrupted
// run sees.
TEST_F(Pool,
       ATransparentCheckpointOfABashScriptRunningACProgramRestoresOnStartdsInstalledElsewhere) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildSimulation(*env_, "/usr/bin/cc", "sim.c", kSimulation));
  auto reference = RunCommand({d + "/sim", d + "/reference", "24", "0"});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  env_->Write(
      "run.sh",
      "#!/bin/bash\n"
      "echo \"$$\" > shell.pid\n"
      "./sim \"$1\" 24 150000 > sim.out\n"
      "echo \"sim said $?\"\n"
      "cat sim.out\n"
      "[ \"$(cat shell.pid)\" = \"$$\" ] && echo \"the same shell\"\n"
      "[ \"$(/bin/pwd)\" = \"$(printenv _CONDOR_SCRATCH_DIR)\" ] && echo \"scratch here\"\n",
      0755);
  HopThroughThreeInstalls("universe = standard\nexecutable = run.sh\narguments = " + d +
                              "/progress\ntransfer_input_files = sim\noutput = out\nerror = err\n"
                              "queue\n",
                          24, "sim said 0\n" + reference.out + "the same shell\nscratch here\n");
  // How long the last one took on its startd: a fraction of a second here.
  double took = std::atof(History("1.0", "LastCheckpointDuration").c_str());
  EXPECT_GT(took, 0);
  EXPECT_LT(took, 30);
}

// A pipeline in a script: a generator writes lines faster than a reader (which reads a few
// bytes at a time with read(2)) takes them, so lines wait in the pipe at each checkpoint (some
// KiB on this machine). Both programs, the pipe and what waits in it are checkpointed with the
// shell and made again on startds installed elsewhere; the reader sees every line, once, in order.
const char* kLineGenerator = R"(#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  FILE* progress = fopen(argv[2], "a");
  long* a = calloc(1 << 20, sizeof(long));
  for (int i = 1; i <= n; ++i) {
    for (int j = 0; j < (1 << 20); ++j) a[j] += j ^ i;
    printf("line %d value %ld %0900d\n", i, a[i * 1000], i);
    fflush(stdout);
    fprintf(progress, "pass %d\n", i);
    fflush(progress);
    usleep(60000);
  }
  return 0;
}
)";
const char* kSlowReader = R"(#include <stdio.h>
#include <unistd.h>
int main(void) {
  char buf[64];
  unsigned long h = 5381, bytes = 0, lines = 0;
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      h = h * 33 + (unsigned char)buf[i];
      lines += buf[i] == '\n';
    }
    bytes += n;
    usleep(5000);
  }
  printf("lines %lu bytes %lu hash %lu\n", lines, bytes, h);
  return 0;
}
)";

TEST_F(Pool, ATransparentCheckpointOfAPipelineInAScriptRestoresItsPipeOnStartdsInstalledElsewhere) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  env_->Write("gen.c", kLineGenerator);
  env_->Write("reader.c", kSlowReader);
  for (const char* p : {"gen", "reader"}) {
    auto cc = RunCommand({"/usr/bin/cc", "-O1", "-o", d + "/" + p, d + "/" + p + ".c"});
    ASSERT_EQ(cc.exit_code, 0) << cc.err;
  }
  auto reference = RunCommand({"/bin/bash", "-c", "./gen 30 /dev/null | ./reader"}, {}, d);
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  env_->Write("run.sh",
              "#!/bin/bash\n"
              "./gen 30 \"$1\" | ./reader > sum.out\n"
              "echo \"pipeline said ${PIPESTATUS[*]}\"\n"
              "cat sum.out\n",
              0755);
  HopThroughThreeInstalls("universe = standard\nexecutable = run.sh\narguments = " + d +
                              "/progress\ntransfer_input_files = gen,reader\noutput = out\n"
                              "error = err\nqueue\n",
                          30, "pipeline said 0 0\n" + reference.out);
}

// A Python script talking to a child Python through two pipes (subprocess.Popen with stdin and
// stdout piped), the job that once died of BrokenPipeError at a checkpoint: both processes, both
// pipes and the child's id as the parent knows it (its wait) come back on startds installed
// elsewhere, and the conversation goes on where it was.
TEST_F(Pool,
       ATransparentCheckpointOfAPythonScriptTalkingToItsChildRestoresOnStartdsInstalledElsewhere) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  env_->Write("talk.py",
              "#!/usr/bin/python3\n"
              "import os, subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import sys\\nfor l in sys.stdin: "
              "print(l.strip()[::-1], flush=True)'], stdin=subprocess.PIPE, "
              "stdout=subprocess.PIPE, text=True)\n"
              "me, heard = os.getpid(), []\n"
              "with open(sys.argv[1], 'a') as progress:\n"
              "    for i in range(1, 25):\n"
              "        child.stdin.write('line %d\\n' % i)\n"
              "        child.stdin.flush()\n"
              "        heard.append(child.stdout.readline().strip())\n"
              "        progress.write('pass %d\\n' % i)\n"
              "        progress.flush()\n"
              "        time.sleep(0.15)\n"
              "child.stdin.close()\n"
              "print(' '.join(heard))\n"
              "print('child', child.wait(), 'same pid', os.getpid() == me)\n",
              0755);
  std::string heard;
  for (int i = 1; i <= 24; ++i) {
    std::string l = "line " + std::to_string(i);
    heard += (i > 1 ? " " : "") + std::string(l.rbegin(), l.rend());
  }
  HopThroughThreeInstalls("universe = standard\nexecutable = talk.py\narguments = " + d +
                              "/progress\noutput = out\nerror = err\nqueue\n",
                          24, heard + "\nchild 0 same pid True\n");
}

// `kite checkpoint` of jobs whose processes cannot all be checkpointed harms none of them: a
// bash script that runs a statically linked program (which the checkpoint library cannot be in;
// bash once died of the checkpoint signal), and a python program talking through pipes to a
// child python (the child, the same executable, took a checkpoint of its own and left; the parent
// got BrokenPipeError). Each goes on and ends as if never asked; why nothing was taken is in the
// job's ad, its user log and `kite q -analyze`.
TEST_F(Pool, ACheckpointThatCannotBeTakenLeavesEveryProcessOfTheJobRunningAndSaysWhy) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildCounter(*env_, kMemoryCounter, "-static"));
  env_->Write("run.sh", "#!/bin/bash\n./counter \"$1\" 30\necho \"script saw $?\"\n", 0755);
  env_->Write("talk.py",
              "import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import sys\\nfor l in sys.stdin: "
              "print(l.strip()[::-1], flush=True)'], stdin=subprocess.PIPE, "
              "stdout=subprocess.PIPE, text=True)\n"
              "with open(sys.argv[1], 'a') as out:\n"
              "    for i in range(1, 31):\n"
              "        child.stdin.write('line %d\\n' % i)\n"
              "        child.stdin.flush()\n"
              "        out.write(child.stdout.readline())\n"
              "        out.flush()\n"
              "        time.sleep(0.1)\n"
              "child.stdin.close()\n"
              "print('talked', child.wait())\n");
  int script = env_->Submit("universe = standard\nexecutable = run.sh\narguments = " + d +
                            "/steps.txt\ntransfer_input_files = counter\noutput = script.out\n"
                            "log = script.log\nqueue\n");
  int talk = env_->Submit(
      "universe = standard\nexecutable = /usr/bin/python3\ntransfer_executable = false\n"
      "arguments = talk.py " +
      d +
      "/talk.txt\ntransfer_input_files = talk.py\noutput = talk.out\nerror = talk.err\n"
      "log = talk.log\nqueue\n");
  std::string sid = std::to_string(script) + ".0", tid = std::to_string(talk) + ".0";
  auto lines = [&](const std::string& f) {
    auto t = ReadFileOr(d + "/" + f);
    return std::count(t.begin(), t.end(), '\n');
  };
  ASSERT_TRUE(WaitUntil([&] { return lines("steps.txt") >= 5 && lines("talk.txt") >= 5; }, 30))
      << env_->Kite({"q", "-nobatch"}).out;
  for (const auto& id : {sid, tid}) ASSERT_EQ(env_->Kite({"checkpoint", id}).exit_code, 0) << id;
  auto refused = [&](const std::string& id) {
    return Q(id, "LastCheckpointRefusal") != "undefined";
  };
  ASSERT_TRUE(WaitUntil([&] { return refused(sid) && refused(tid); }, 30))
      << ReadFileOr(env_->home() + "/agent.log");
  EXPECT_NE(Q(sid, "LastCheckpointRefusal").find("(counter) is not under the checkpoint library"),
            std::string::npos)
      << Q(sid, "LastCheckpointRefusal");
  EXPECT_NE(Q(tid, "LastCheckpointRefusal").find("the program has a child process"),
            std::string::npos)
      << Q(tid, "LastCheckpointRefusal");
  auto analyze = env_->Kite({"q", "-analyze", tid});
  EXPECT_NE(analyze.out.find("Its last checkpoint was not taken"), std::string::npos)
      << analyze.out;
  WaitDone(script, 60);
  WaitDone(talk, 60);
  EXPECT_EQ(ReadFileOr(d + "/steps.txt"), CounterSteps(30));
  long sum = 0, heap = 0;
  for (int i = 1; i <= 30; ++i) sum += (heap += i);
  EXPECT_EQ(ReadFileOr(d + "/script.out"), "done: sum " + std::to_string(sum) + "\nscript saw 0\n");
  std::string talked;
  for (int i = 1; i <= 30; ++i) {
    std::string l = "line " + std::to_string(i);
    talked += std::string(l.rbegin(), l.rend()) + "\n";
  }
  EXPECT_EQ(ReadFileOr(d + "/talk.txt"), talked);
  EXPECT_EQ(ReadFileOr(d + "/talk.out"), "talked 0\n") << ReadFileOr(d + "/talk.err");
  for (const auto& [id, log] : {std::pair{sid, "script.log"}, std::pair{tid, "talk.log"}}) {
    EXPECT_EQ(History(id, "ExitCode"), "0") << id;
    EXPECT_EQ(History(id, "NumJobStarts"), "1") << id;
    EXPECT_EQ(History(id, "NumCheckpoints"), "undefined") << id;
    EXPECT_NE(ReadFileOr(d + "/" + log).find("Checkpoint not taken: "), std::string::npos) << log;
  }
}

// checkpoint_interval: the starter asks for a checkpoint each interval; each is stored and the
// program goes on from it in place, and its result is that of a run never interrupted. A restore
// that cannot be (the executable on the desktop was rebuilt since the checkpoint) holds the job,
// saying why, rather than starting it over.
TEST_F(Pool, PeriodicTransparentCheckpointsAndARestoreRefusedHoldsTheJob) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildCounter(*env_));
  int c = env_->Submit(
      "universe = vanilla\ncheckpoint = transparent\nwant_remote_io = true\n"
      "checkpoint_interval = 1\nexecutable = counter\narguments = " +
      d + "/steps.txt 35\noutput = out\nlog = periodic.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  WaitDone(c, 60);
  EXPECT_EQ(ReadFileOr(d + "/steps.txt"), CounterSteps(35));
  EXPECT_GE(std::stoi(History(id, "NumCheckpoints")), 2) << "35 steps of 0.1 s, one a second";
  EXPECT_EQ(History(id, "NumJobStarts"), "1");
  auto log = ReadFileOr(d + "/periodic.log");
  EXPECT_NE(log.find("003 ("), std::string::npos) << log;

  int c2 = env_->Submit("universe = standard\nexecutable = counter\narguments = " + d +
                        "/again.txt 200\noutput = out2\nlog = refused.log\nqueue\n");
  std::string id2 = std::to_string(c2) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(d + "/again.txt").size() > 100; }, 30));
  ASSERT_TRUE(BuildCounter(*env_, kMemoryCounter, "-O2"));
  ASSERT_EQ(env_->Kite({"vacate", id2}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return env_->JobStatus(id2) == 5; }, 30))
      << env_->Kite({"q", "-nobatch"}).out;
  EXPECT_EQ(Q(id2, "NumCheckpoints"), "1");
  EXPECT_NE(Q(id2, "HoldReason")
                .find("cannot restore the checkpoint: not the executable or "
                      "library of the checkpoint"),
            std::string::npos)
      << Q(id2, "HoldReason");
  env_->Kite({"rm", id2});
}

// The startd's PERIODIC_CHECKPOINT, as HTCondor's (LastPeriodicCheckpoint in the slot ad): a job
// with transparent checkpoints takes one each time it is true, and goes on.
TEST_F(Pool, AStartdsPeriodicCheckpointExpressionCheckpointsTransparentJobs) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildCounter(*env_));
  pid_t sd = SpawnStartd(env_->home(), "p", d + "/wp",
                         {"--periodic-checkpoint", "time() - LastPeriodicCheckpoint >= 1"});
  ASSERT_TRUE(WaitSlots(1));
  int c = env_->Submit("universe = standard\nexecutable = counter\narguments = " + d +
                       "/steps.txt 60\nlog = p.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  // Six seconds of work: at least two periodic checkpoints even on a loaded machine (with three
  // and a half, a slow restore under parallel tests left room for only one).
  WaitDone(c, 60);
  EXPECT_EQ(ReadFileOr(d + "/steps.txt"), CounterSteps(60));
  EXPECT_GE(std::stoi(History(id, "NumCheckpoints")), 2);
  EXPECT_NE(ReadFileOr(d + "/wp.log")
                .find("checkpoint (the owner's policy (PERIODICCHECKPOINT = "
                      "time() - LastPeriodicCheckpoint >= 1))"),
            std::string::npos)
      << ReadFileOr(d + "/wp.log");
  ::kill(sd, SIGTERM);
  WaitExit(sd, 20);
}

// kill -9 of the starter while a transparent checkpoint (256 MiB of the program's memory) is on
// its way home: the checkpoint before it stays the one the job resumes from, and the program's
// result is still that of a run never interrupted.
TEST_F(Pool, AStarterKilledDuringATransparentCheckpointLeavesThePreviousOne) {
  Start("[pool]\nlocal_slots = 1\nlocal_start = true\n");
  ASSERT_TRUE(WaitSlots(1));
  const std::string d = env_->dir();
  std::string source = kMemoryCounter;
  source.replace(source.find("calloc(1 << 16"), 14, "calloc(1 << 25");
  ASSERT_TRUE(BuildCounter(*env_, source));
  int c = env_->Submit("universe = standard\nexecutable = counter\narguments = " + d +
                       "/steps.txt 60\noutput = out\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  auto lines = [&] {
    auto t = ReadFileOr(d + "/steps.txt");
    return std::count(t.begin(), t.end(), '\n');
  };
  ASSERT_TRUE(WaitUntil([&] { return lines() >= 5; }, 30));
  ASSERT_EQ(env_->Kite({"checkpoint", id}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return Q(id, "NumCheckpoints") == "1"; }, 60));
  auto at = lines();
  ASSERT_TRUE(WaitUntil([&] { return lines() >= at + 5; }, 60));
  std::string store = env_->home() + "/spool/checkpoints/" + id;
  ASSERT_EQ(env_->Kite({"checkpoint", id}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return OnItsWay(store, "kite_ckpt.img"); }, 60));
  pid_t startd = StartdPid();
  ASSERT_GT(startd, 0);
  pid_t starter = ChildNamed(startd, "kite-starter");
  ASSERT_GT(starter, 0);
  ASSERT_EQ(::kill(starter, SIGKILL), 0);
  EXPECT_EQ(Q(id, "NumCheckpoints"), "1");
  WaitDone(c, 120);
  EXPECT_EQ(ReadFileOr(d + "/steps.txt"), CounterSteps(60));
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
  EXPECT_EQ(History(id, "ExitCode"), "0");
}

// kite hold of a running job with transparent checkpoints takes one as it stops it (as the
// standard universe did), so `kite release` goes on from there; kite rm of one ends at once.
TEST_F(Pool, AHeldTransparentJobGoesOnFromItsCheckpointWhenReleasedAndARemovedOneEnds) {
  Start();
  ASSERT_TRUE(WaitSlots(2));
  const std::string d = env_->dir();
  ASSERT_TRUE(BuildCounter(*env_));
  int c = env_->Submit("universe = standard\nexecutable = counter\narguments = " + d +
                       "/held.txt 40\nqueue\n");
  int r = env_->Submit("universe = standard\nexecutable = counter\narguments = " + d +
                       "/removed.txt 400\nqueue\n");
  std::string id = std::to_string(c) + ".0", rid = std::to_string(r) + ".0";
  auto lines = [&](const std::string& f) {
    auto t = ReadFileOr(d + "/" + f);
    return std::count(t.begin(), t.end(), '\n');
  };
  ASSERT_TRUE(WaitUntil([&] { return lines("held.txt") >= 10 && lines("removed.txt") >= 5; }, 30));
  ASSERT_EQ(env_->Kite({"hold", id}).exit_code, 0);
  ASSERT_EQ(env_->Kite({"rm", rid}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return Q(id, "NumCheckpoints") == "1"; }, 30))
      << env_->Kite({"q", "-nobatch"}).out;
  EXPECT_EQ(env_->JobStatus(id), 5);
  // The removed one leaves the queue (its slot free again), its checkpoint never stored.
  ASSERT_TRUE(WaitUntil([&] { return History(rid, "JobStatus") == "3"; }, 30))
      << env_->Kite({"q", "-nobatch"}).out;
  auto held_at = lines("held.txt");
  ::usleep(500 * 1000);
  EXPECT_EQ(lines("held.txt"), held_at) << "a held job does not run";
  ASSERT_TRUE(WaitUntil([&] { return env_->Kite({"release", id}).exit_code == 0; }, 20));
  WaitDone(c, 60);
  EXPECT_EQ(ReadFileOr(d + "/held.txt"), CounterSteps(40));
  EXPECT_EQ(History(id, "NumJobStarts"), "2");
}

// checkpoint_exit_code across startds: a counting job that saves its state every fourth step is
// vacated three times, each time going on at the next startd (each one's START takes the job only
// from the one before), and finishes with the output of a run never interrupted, having
// redone at most one checkpoint interval (four steps) per vacate.
TEST_F(Pool, AnApplicationCheckpointingJobVacatedThreeTimesOnFourStartdsRedoesAtMostAnInterval) {
  Start("[pool]\nlocal_slots = 0\n");
  const std::string d = env_->dir();
  std::vector<pid_t> startds;
  for (int i = 0; i < 4; ++i) {
    // (NumJobStarts would not do: it counts the start being made by the time the startd looks.)
    std::string start = i == 0
                            ? "TARGET.LastRemoteHost =?= undefined"
                            : "TARGET.LastRemoteHost =?= \"slot1@a" + std::to_string(i - 1) + "\"";
    startds.push_back(SpawnStartd(env_->home(), "a" + std::to_string(i),
                                  d + "/w" + std::to_string(i), {"--start", start}));
  }
  ASSERT_TRUE(WaitSlots(4));
  // 16 steps of 0.2 s; every fourth saves `n` and exits 85. Each step done is also noted on the
  // desktop ($1), checkpoints or not: that count is the work done.
  env_->Write(
      "count16.sh",
      "#!/bin/sh\nn=0\n[ -f state ] && n=$(cat state)\n"
      "while [ \"$n\" -lt 16 ]; do\n  n=$((n + 1))\n  echo \"step $n\" >> steps.txt\n"
      "  echo \"did $n\" >> \"$1\"\n  sleep 0.2\n"
      "  if [ $((n % 4)) -eq 0 ] && [ \"$n\" -lt 16 ]; then echo \"$n\" > state; exit 85; fi\n"
      "done\necho \"counted to $n\"\n",
      0755);
  int c = env_->Submit("universe = vanilla\nexecutable = count16.sh\narguments = " + d +
                       "/did\ncheckpoint_exit_code = 85\ntransfer_checkpoint_files = state, "
                       "steps.txt\ntransfer_output_files = steps.txt\noutput = out\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  auto did = [&] {
    auto t = ReadFileOr(d + "/did");
    return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
  };
  for (int hop = 1; hop <= 3; ++hop) {
    int at = did();
    // A few steps into this start (past a checkpoint or not), vacated; it goes on at the next.
    ASSERT_TRUE(WaitUntil([&] { return did() >= at + 3; }, 30)) << ReadFileOr(d + "/did");
    ASSERT_EQ(env_->Kite({"vacate", id}).exit_code, 0);
    ASSERT_TRUE(
        WaitUntil([&] { return Q(id, "RemoteHost") == "slot1@a" + std::to_string(hop); }, 30))
        << Q(id, "RemoteHost") << " " << Q(id, "NumCheckpoints");
  }
  WaitDone(c, 90);
  std::string steps;
  for (int i = 1; i <= 16; ++i) steps += "step " + std::to_string(i) + "\n";
  EXPECT_EQ(ReadFileOr(d + "/steps.txt"), steps);
  EXPECT_EQ(ReadFileOr(d + "/out"), "counted to 16\n");
  EXPECT_EQ(History(id, "NumJobStarts"), "4");
  EXPECT_EQ(History(id, "LastRemoteHost"), "slot1@a3");
  EXPECT_GE(did(), 16);
  EXPECT_LE(did(), 16 + 3 * 4) << ReadFileOr(d + "/did");
  for (pid_t p : startds) ::kill(p, SIGTERM);
  for (pid_t p : startds) WaitExit(p, 20);
}

}  // namespace
}  // namespace kite::testing
