#!/usr/bin/python3
"""Remote I/O benchmarks (docs/remote-io.md): a vanilla job in the personal pool with
want_remote_io reads and writes a file of its Iwd through the shadow, timed by the job itself
with dd; beside it, in the same run, the same dd on a file of the job's sandbox (what the program
gets with no remote I/O at all), so the figure is a ratio to the machine's own speed.

Each figure runs dd inside one job on a local slot (real agent, startd, starter, the library
preloaded): large blocks (1 MiB), small blocks (512 bytes: one round trip per 64 KiB block thanks
to read-ahead, where one per call would be 128 times as many), and writes.

Usage: bench/rsc/run.py [BIN] [--quick]; writes bench/results/rsc.md.
"""
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "pool_bench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pool", "run.py"))
pool_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pool_bench)

ROOT = agent_bench.ROOT
QUICK = agent_bench.QUICK
RUNS = 2 if QUICK else 3
MIB = 16 if QUICK else 64

# The job: dd over the remote file and over a copy in the sandbox, printing "name seconds" lines.
JOB = r"""#!/bin/sh
set -e
D=$1
t() { s=$(date +%%s.%%N); "$@" 2>/dev/null; e=$(date +%%s.%%N); echo "$s $e"; }
echo "remote_read_1m $(t dd if=$D/big.dat of=/dev/null bs=1M)"
echo "local_read_1m $(t dd if=big.local of=/dev/null bs=1M)"
echo "remote_read_512 $(t dd if=$D/big.dat of=/dev/null bs=512)"
echo "local_read_512 $(t dd if=big.local of=/dev/null bs=512)"
echo "remote_write_1m $(t dd if=/dev/zero of=$D/out.dat bs=1M count=%(mib)d)"
echo "local_write_1m $(t dd if=/dev/zero of=out.local bs=1M count=%(mib)d)"
rm -f out.local
"""


def once():
    e = pool_bench.pool_env("rsc", 1)
    try:
        if not pool_bench.wait_for(lambda: pool_bench.slot_count(e) == 1, 30):
            raise RuntimeError("the local slot did not appear")
        block = os.urandom(1 << 20)
        for name in ("big.dat", "big.local"):
            with open(os.path.join(e.dir, name), "wb") as f:
                for _ in range(MIB):
                    f.write(block)
        e.write("job.sh", JOB % {"mib": MIB})
        os.chmod(os.path.join(e.dir, "job.sh"), 0o755)
        e.write("j.sub", "universe = vanilla\nexecutable = job.sh\narguments = %s\n"
                         "transfer_input_files = big.local\nwant_remote_io = true\n"
                         "output = out.txt\nerror = err.txt\nqueue\n" % e.dir)
        e.kite("submit", "j.sub")
        e.kite("wait", "1", "--timeout", "600")
        out = open(os.path.join(e.dir, "out.txt")).read()
        got = {m.group(1): float(m.group(3)) - float(m.group(2))
               for m in re.finditer(r"^(\S+) ([0-9.]+) ([0-9.]+)$", out, re.M)}
        if len(got) != 6:
            raise RuntimeError("the job said: %r %r" % (out, open(os.path.join(e.dir, "err.txt")).read()))
        calls = e.kite("history", "1.0", "-af", "RemoteIOCalls").stdout.strip()
        got["calls"] = int(calls) if calls.isdigit() else -1
        if os.path.getsize(os.path.join(e.dir, "out.dat")) != MIB << 20:
            raise RuntimeError("the remote write is not whole on the desktop")
        return got
    finally:
        e.close()


def main():
    runs = [once() for _ in range(RUNS)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    mb = lambda s: MIB / s if s > 0 else float("inf")  # noqa: E731
    rows = [
        ("read %d MiB, 1 MiB blocks" % MIB, "%.0f MiB/s" % mb(med["remote_read_1m"]),
         "%.0f MiB/s" % mb(med["local_read_1m"]),
         "%.2f" % (med["local_read_1m"] / med["remote_read_1m"])),
        ("read %d MiB, 512-byte blocks (%d calls; read-ahead: one round trip per 64 KiB)" %
         (MIB, MIB * 2048), "%.0f MiB/s" % mb(med["remote_read_512"]),
         "%.0f MiB/s" % mb(med["local_read_512"]),
         "%.2f" % (med["local_read_512"] / med["remote_read_512"])),
        ("write %d MiB, 1 MiB blocks" % MIB, "%.0f MiB/s" % mb(med["remote_write_1m"]),
         "%.0f MiB/s" % mb(med["local_write_1m"]),
         "%.2f" % (med["local_write_1m"] / med["remote_write_1m"])),
    ]
    load = open("/proc/loadavg").read().split()
    with open(os.path.join(ROOT, "bench", "results", "rsc.md"), "w") as f:
        f.write("# Remote I/O benchmarks (bench/rsc/run.py)\n\n")
        f.write("- Machine: %s\n- Date: %s\n- Load average when done: %s (a shared machine; other "
                "work may have run)\n- Runs per figure: %d (median)\n\n" %
                (agent_bench.machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 " ".join(load[:3]), RUNS))
        f.write("One vanilla job on a local slot, dd timed inside it: through the shadow "
                "(want_remote_io: library → starter → startd → agent, on this machine), and the "
                "same dd on a file in its sandbox (no remote I/O) in the same job.\n\n")
        f.write("| figure | remote (through the shadow) | the sandbox's own disk (same run) | "
                "remote speed as a fraction of local |\n| --- | --- | --- | --- |\n")
        for r in rows:
            f.write("| " + " | ".join(r) + " |\n")
        f.write("\nRemote calls in the last run: %d. Runs: %s.\n" %
                (runs[-1]["calls"], "; ".join(
                    ", ".join("%s %.3f s" % (k, v) for k, v in sorted(r.items()) if k != "calls")
                    for r in runs)))
    print(open(os.path.join(ROOT, "bench", "results", "rsc.md")).read())


if __name__ == "__main__":
    main()
