#!/usr/bin/python3
"""Periodic transparent checkpoints of a large process through the pool (issue 28): a C program
holding GIB GiB of written memory runs for about MINUTES minutes on the desktop's local slot with
`checkpoint = transparent` and `checkpoint_interval = 60`. Each pass it changes the whole array
and adds to a checksum, then sleeps; at the end it prints the checksum. Checked: the job ends
with the answer of the same program run uninterrupted (measured in the same run, without sleeps),
it was checkpointed about once a minute, and the desktop's checkpoint store never held more than
two checkpoints at once (sampled every 0.2 s: the committed one and the one arriving).

Writes bench/results/checkpoint-soak.md with the machine, the date, the outcome, the number of
checkpoints, the largest store seen, and each checkpoint's LastCheckpointDuration.

Usage: bench/checkpoint/soak.py [BIN] [--quick]   (--quick: 256 MiB for 3 minutes)
"""
import datetime
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402

pool_bench = agent_bench.load_bench("pool")

ROOT = agent_bench.ROOT
QUICK = agent_bench.QUICK
MIB = 256 if QUICK else 1024
MINUTES = 3 if QUICK else 10
PAUSE_S = 5

PROGRAM = r"""#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  size_t n = (size_t)atol(argv[1]) << 20 >> 3;
  int passes = atoi(argv[2]), pause_s = atoi(argv[3]);
  unsigned long* a = malloc(n * sizeof *a);
  if (!a) return 2;
  for (size_t i = 0; i < n; ++i) a[i] = i * 2654435761u;
  unsigned long sum = 0;
  for (int p = 1; p <= passes; ++p) {
    for (size_t i = 0; i < n; ++i) a[i] = a[i] * 6364136223846793005ul + p;
    for (size_t i = 0; i < n; i += 4093) sum += a[i];
    fprintf(stderr, "pass %d\n", p);
    if (pause_s) sleep(pause_s);
  }
  printf("passes %d sum %lu\n", passes, sum);
  return 0;
}
"""


def text(p):
    return p.stdout.decode() if isinstance(p.stdout, bytes) else p.stdout


def store_count(home):
    d = os.path.join(home, "spool", "checkpoints", "1.0")
    try:
        return sum(1 for n in os.listdir(d) if n.startswith("ckpt.") or n.startswith("incoming."))
    except OSError:
        return 0


def main():
    e = pool_bench.pool_env("ckpt-soak", 1)
    try:
        if not pool_bench.wait_for(lambda: pool_bench.slot_count(e) == 1, 30):
            raise RuntimeError("the local slot did not appear")
        e.write("big.c", PROGRAM)
        prog = os.path.join(e.dir, "big")
        subprocess.run(["cc", "-O2", "-o", prog, os.path.join(e.dir, "big.c")], check=True)
        # How many passes fill MINUTES with the pauses, from one timed pass.
        t0 = time.time()
        subprocess.run([prog, str(MIB), "1", "0"], check=True, capture_output=True)
        one = time.time() - t0
        passes = max(3, int(MINUTES * 60 / (one + PAUSE_S)))
        reference = subprocess.run([prog, str(MIB), str(passes), "0"], check=True,
                                   capture_output=True, text=True).stdout
        e.write("j.sub", "universe = vanilla\ncheckpoint = transparent\ncheckpoint_interval = 60\n"
                         "executable = big\narguments = %d %d %d\noutput = out.txt\n"
                         "error = err.txt\nqueue\n" % (MIB, passes, PAUSE_S))
        start = time.time()
        e.kite("submit", "j.sub")
        most, durations, last_n = 0, [], 0
        while True:
            most = max(most, store_count(e.home))
            q = text(e.kite("q", "1.0", "-af", "JobStatus", "NumCheckpoints",
                            "LastCheckpointDuration", check=False)).split()
            if len(q) >= 3 and q[1].isdigit() and int(q[1]) > last_n:
                last_n = int(q[1])
                durations.append("%.2f" % float(q[2]))
            if not q:  # gone from the queue: ended
                break
            if time.time() - start > MINUTES * 60 * 3:
                raise RuntimeError("the job did not end in three times its length")
            time.sleep(0.2)
        wall = time.time() - start
        h = text(e.kite("history", "1.0", "-af", "ExitCode", "NumCheckpoints", "NumJobStarts"))
        out = open(os.path.join(e.dir, "out.txt")).read()
        right = out == reference
        lines = [
            "# Transparent checkpoints every minute of a %d MiB process (bench/checkpoint/soak.py)"
            % MIB,
            "",
            "Machine: %s. Date: %s. Run alone on the machine (no build or test beside it)."
            % (agent_bench.machine(), datetime.date.today().isoformat()),
            "",
            "| | |",
            "|---|---|",
            "| program | %d MiB written, %d passes over all of it, %d s pause after each |"
            % (MIB, passes, PAUSE_S),
            "| wall time through the pool | %.0f s |" % wall,
            "| ExitCode NumCheckpoints NumJobStarts | %s |" % " ".join(h.split()),
            "| answer | %s (uninterrupted: %s) |" % (out.strip(), reference.strip()),
            "| the same as uninterrupted | %s |" % ("yes" if right else "NO"),
            "| most checkpoints in the store at once | %d (limit: 2) |" % most,
            "| LastCheckpointDuration seen (s) | %s |" % ", ".join(durations),
            "",
        ]
        path = os.path.join(ROOT, "bench", "results", "checkpoint-soak.md")
        with open(path, "w") as f:
            f.write("\n".join(lines))
        print("\n".join(lines))
        if not right or most > 2:
            sys.exit(1)
    finally:
        e.close()


if __name__ == "__main__":
    main()
