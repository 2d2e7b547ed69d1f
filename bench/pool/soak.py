#!/usr/bin/python3
"""Restart soak (issue 27): a 200-job vanilla cluster on the local startd while the agent is
restarted 20 times in a row, alternating a clean `kite agent stop` / `kite agent start` and a
kill -9 of the agent, each while jobs run. Every job appends its number to one file in the
submit folder (the jobs run in place: IF_NEEDED on the desktop's own slots), so the file counts
executions. Nothing may be lost or run twice: 200 lines, each job once, NumJobStarts 1 for all.

Writes bench/results/pool-soak.md with the machine, the date, the outcome and the wall time
beside the same cluster with no restart, measured in the same run.

Usage: bench/pool/soak.py [BIN] [--quick]   (--quick: 60 jobs, 8 restarts)
"""
import collections
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402

QUICK = agent_bench.QUICK
JOBS = 60 if QUICK else 200
RESTARTS = 8 if QUICK else 20
SLOTS = 4


def env_with_pool():
    e = agent_bench.Env("pool-soak")
    os.makedirs(e.home)
    with open(os.path.join(e.home, "config.toml"), "w") as f:
        f.write("[pool]\nlocal_slots = %d\nlocal_start = true\n" % SLOTS)
    e.kite("agent", "start")
    return e


def agent_pid(e):
    try:
        with open(os.path.join(e.home, "agent.pid")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def kill9(e):
    pid = agent_pid(e)
    if pid:
        os.kill(pid, signal.SIGKILL)
        for _ in range(500):  # its pid file lock goes with it
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)


def lines(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def cluster(e, restarts):
    """Runs the cluster with `restarts` restarts while it runs; returns (seconds, facts)."""
    ran = os.path.join(e.dir, "ran.txt")
    e.write("job.sh", "#!/bin/sh\necho \"$1\" >> ran.txt\nsleep 0.$2\n")
    os.chmod(os.path.join(e.dir, "job.sh"), 0o755)
    e.write("c.sub", "universe = vanilla\nexecutable = job.sh\n"
            "arguments = $(Process) $(Process)\nqueue %d\n" % JOBS)
    t0 = time.perf_counter()
    e.kite("submit", "c.sub")
    done_at = []
    for k in range(restarts):
        time.sleep(1.0)
        done_at.append(len(lines(ran)))
        if k % 2 == 0:
            e.kite("agent", "stop")
        else:
            kill9(e)
        e.kite("agent", "start")
    e.kite("wait", "1", "--timeout", "900")
    seconds = time.perf_counter() - t0
    counts = collections.Counter(lines(ran))
    rows = e.kite("history", "1", "-af", "ProcId", "NumJobStarts").stdout.split(b"\n")
    starts = [r.split()[1] for r in rows if len(r.split()) == 2]
    started_again = [int(r.split()[0]) for r in rows if len(r.split()) == 2 and r.split()[1] != b"1"]
    facts = {
        "lines": sum(counts.values()),
        "distinct": len(counts),
        "twice": sorted((int(j) for j, n in counts.items() if n > 1)),
        "starts_not_1": sum(1 for s in starts if s != b"1"),
        "started_again": started_again,
        "in_history": len(starts),
        "mid_cluster": sum(1 for d in done_at if d < JOBS),
        "done_at": done_at,
    }
    return seconds, facts


def main():
    base = env_with_pool()
    try:
        quiet, quiet_facts = cluster(base, 0)
    finally:
        base.close()
    e = env_with_pool()
    ok = False
    try:
        soak, facts = cluster(e, RESTARTS)
        ok = (facts["lines"] == JOBS and facts["distinct"] == JOBS and not facts["twice"] and
              facts["starts_not_1"] == 0 and facts["in_history"] == JOBS)
    finally:
        if ok:
            e.close()
        else:  # kept for a post-mortem
            e.kite("agent", "stop", "--stop-startd", check=False)
            print("kept %s" % e.dir, file=sys.stderr)
    out = os.path.join(agent_bench.ROOT, "bench", "results", "pool-soak.md")
    with open(out, "w") as f:
        f.write("# Pool restart soak (bench/pool/soak.py)\n\n")
        f.write("- machine: %s\n" % agent_bench.machine())
        f.write("- date: %s\n" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        f.write("- programs: %s\n" % agent_bench.BIN)
        f.write("- load: the machine is shared; other work may have run\n\n")
        f.write("%d vanilla jobs (each sleeps under 1 s) on %d local slots, run in place; %d "
                "agent restarts, alternating a clean stop/start and kill -9, a second apart.\n\n" %
                (JOBS, SLOTS, RESTARTS))
        f.write("| | wall time | lines in ran.txt | jobs run twice | NumJobStarts != 1 |\n")
        f.write("|---|---|---|---|---|\n")
        f.write("| no restart (same run) | %.1f s | %d | %d | %d |\n" %
                (quiet, quiet_facts["lines"], len(quiet_facts["twice"]),
                 quiet_facts["starts_not_1"]))
        f.write("| %d restarts | %.1f s | %d | %d | %d |\n\n" %
                (RESTARTS, soak, facts["lines"], len(facts["twice"]), facts["starts_not_1"]))
        f.write("Restarts that came while jobs were left: %d of %d (lines written at each: %s). "
                "Outcome: %s.\n" % (facts["mid_cluster"], RESTARTS,
                                    " ".join(str(d) for d in facts["done_at"]),
                                    "nothing lost, nothing run twice" if ok else
                                    "FAILED: %r" % facts))
    print(open(out).read())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
