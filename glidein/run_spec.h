// How a run's program is started in its sandbox: the kite-exec launch built from the job's ad
// (Cmd, Arguments/Args, Environment/Env, In), with stdout and stderr to the sandbox's
// _kite_stdout and _kite_stderr.
#pragma once

#include <string>
#include <vector>

#include "classad/classad.h"
#include "common/error.h"
#include "common/exec_launch.h"
#include "glidein/sandbox.h"

namespace kite::glidein {

struct RunPlace {
  std::string exec_path;         // kite-exec
  std::string slot;              // "slot1@name", for _CONDOR_SLOT
  int cpus = 1;                  // OMP_NUM_THREADS, as HTCondor sets it
  std::vector<std::string> env;  // the base environment (PATH=...), before the job's own
  // The job's Iwd when it runs in place (pool::Message::in_place): its working directory, where a
  // relative Cmd, In, Out and Err are; the sandbox is then only its scratch directory.
  std::string in_place;
};

// The base environment of every job: this process's PATH (or a plain one), nothing else of its.
std::vector<std::string> JobBaseEnv();

// The launch for `job` in `box`. Cmd: absolute as is, relative inside the sandbox (the shadow
// sends a transferred executable under its base name). In: a relative In that was transferred,
// else /dev/null. In place: the program runs in the Iwd, reading and writing the job's own In,
// Out and Err there. Fails (kInvalidInput) when Cmd is missing or Arguments/Environment do not
// parse.
Result<ExecLaunch> BuildRunLaunch(const classad::ClassAd& job, const Sandbox& box,
                                  const RunPlace& place);

}  // namespace kite::glidein
