// The starter's side of a process tree's checkpoint (docs/checkpoints.md): a job whose executable
// is a script runs as a shell and its children, each under libkite_rsc.so. The starter stops the
// job's process group, checks that the tree is one it can take, asks each process for its image
// (IMAGE.PID, written by the process itself, which then stops), and puts the images together
// into one file, IMAGE, in the tree layout of rsc/ckpt_image.h.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace kite::rsc::ckpt {

struct TreeProcess {
  pid_t pid = 0, ppid = 0;
  char state = '?';  // as /proc/PID/stat says ('T': stopped)
  std::string name;  // its command's name
};

// The processes of process group `group` but its leader (the job's wrapper), from /proc.
std::vector<TreeProcess> GroupProcesses(pid_t group);

// The checkpoint signal, which the library's handler takes.
constexpr int kSignal = SIGUSR2;

// Why the tree `procs` (the processes under `leader`) cannot be checkpointed; "" when it can: one
// first process (the leader's child) and its children, no deeper, each with `library` (the
// preloaded library's file name) mapped and the checkpoint signal caught, not blocked.
std::string TreeRefusal(pid_t leader, const std::vector<TreeProcess>& procs,
                        const std::string& library);

// Why the checkpoint signal must not be sent to `p`; "" when it may: its handler is there (not
// while the process starts or restores) and the signal is not blocked.
std::string SignalRefusal(const TreeProcess& p);

// IMAGE.PID of each process of `procs` put together into `image` (written beside it and renamed
// over it, synced); "" or why not.
std::string ComposeTree(const std::string& image, const std::vector<TreeProcess>& procs);

// Where process `pid` writes its image (IMAGE.PID), and the note of its refusal (+ ".refused").
std::string PartOf(const std::string& image, pid_t pid);
// Removes each process's image and refusal, if there.
void RemoveParts(const std::string& image, const std::vector<TreeProcess>& procs);

// "PID (NAME)" of a process, for messages.
std::string Describe(const TreeProcess& p);

}  // namespace kite::rsc::ckpt
