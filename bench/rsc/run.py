#!/usr/bin/python3
"""Remote I/O benchmarks (docs/remote-io.md): a vanilla job in the personal pool with
want_remote_io reads and writes a file of its Iwd through the shadow, timed by the job itself
with dd; beside it, in the same run, the same dd on a file of the job's sandbox (what the program
gets with no remote I/O at all), so the figure is a ratio to the machine's own speed.

Each figure runs dd inside one job on a local slot (real agent, startd, starter, the library
preloaded): large blocks (1 MiB), small blocks (512 bytes: one round trip per 64 KiB block thanks
to read-ahead, where one per call would be 128 times as many), and writes.

And transparent checkpoints (docs/checkpoints.md): a program holding CKPT_MIB of written memory
is asked for one with `kite checkpoint`; the figure is the time from the request until the
checkpoint is committed in the agent's spool (image written and synced in the sandbox, sent over
the pool connection, synced and renamed at home), beside writing and syncing the same number of
bytes to a file with dd in the same run, and the time until the restored program writes again.

Usage: bench/rsc/run.py [BIN] [--quick]; writes bench/results/rsc.md.
"""
import subprocess
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402

pool_bench = agent_bench.load_bench("pool")

ROOT = agent_bench.ROOT
QUICK = agent_bench.QUICK
RUNS = 2 if QUICK else 3
MIB = 64 if QUICK else 1024
CALLS = 2000 if QUICK else 5000  # random 4 KiB reads and stats

# The job: dd over the remote file and over a copy in the sandbox, printing "name seconds" lines.
JOB = r"""#!/bin/sh
set -e
D=$1
t() { s=$(date +%%s.%%N); "$@" >/dev/null 2>&1; e=$(date +%%s.%%N); echo "$s $e"; }
echo "remote_read_1m $(t dd if=$D/big.dat of=/dev/null bs=1M)"
echo "local_read_1m $(t dd if=big.local of=/dev/null bs=1M)"
echo "remote_read_512 $(t dd if=$D/big.dat of=/dev/null bs=512)"
echo "local_read_512 $(t dd if=big.local of=/dev/null bs=512)"
echo "remote_write_1m $(t dd if=/dev/zero of=$D/out.dat bs=1M count=%(mib)d)"
echo "local_write_1m $(t dd if=/dev/zero of=out.local bs=1M count=%(mib)d)"
rm -f out.local
echo "remote_sha256 $(t sha256sum $D/big.dat)"
echo "local_sha256 $(t sha256sum big.local)"
echo "remote_random4k $(t python3 random4k.py $D/big.dat %(calls)d)"
echo "local_random4k $(t python3 random4k.py big.local %(calls)d)"
echo "remote_stat $(t python3 stats.py $D/big.dat %(calls)d)"
"""

# CALLS reads of 4 KiB at random offsets (each one a round trip: read-ahead does not help).
RANDOM4K = """import os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
rng = random.Random(7)
for _ in range(int(sys.argv[2])):
    os.pread(fd, 4096, rng.randrange(0, size - 4096) & ~4095)
"""
STATS = """import os, sys
for _ in range(int(sys.argv[2])):
    os.stat(sys.argv[1])
"""


def raw_connection():
    """What one Unix-socket hop of this machine does, measured here: round trips of a small
    message between two processes, and MIB MiB streamed through it."""
    import socket
    a, b = socket.socketpair()
    n = CALLS * 4
    pid = os.fork()
    if pid == 0:
        a.close()
        for _ in range(n):  # the ping-pong: 16 bytes each way
            got = b""
            while len(got) < 16:
                got += b.recv(16 - len(got))
            b.sendall(got)
        left = MIB << 20  # then the stream
        while left > 0:
            left -= len(b.recv(min(left, 1 << 20)))
        b.sendall(b"done")
        os._exit(0)
    b.close()
    t0 = time.time()
    for _ in range(n):
        a.sendall(b"x" * 16)
        got = b""
        while len(got) < 16:
            got += a.recv(16 - len(got))
    rtt = (time.time() - t0) / n
    chunk = b"\0" * (1 << 20)
    t0 = time.time()
    for _ in range(MIB):
        a.sendall(chunk)
    got = b""
    while len(got) < 4:
        got += a.recv(4)
    stream = time.time() - t0
    a.close()
    os.waitpid(pid, 0)
    return rtt, stream


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
        e.write("job.sh", JOB % {"mib": MIB, "calls": CALLS})
        e.write("random4k.py", RANDOM4K)
        e.write("stats.py", STATS)
        os.chmod(os.path.join(e.dir, "job.sh"), 0o755)
        e.write("j.sub", "universe = vanilla\nexecutable = job.sh\narguments = %s\n"
                         "transfer_input_files = big.local, random4k.py, stats.py\nwant_remote_io = true\n"
                         "output = out.txt\nerror = err.txt\nqueue\n" % e.dir)
        e.kite("submit", "j.sub")
        e.kite("wait", "1", "--timeout", "600")
        out = open(os.path.join(e.dir, "out.txt")).read()
        got = {m.group(1): float(m.group(3)) - float(m.group(2))
               for m in re.finditer(r"^(\S+) ([0-9.]+) ([0-9.]+)$", out, re.M)}
        if len(got) != 11:
            raise RuntimeError("the job said: %r %r" % (out, open(os.path.join(e.dir, "err.txt")).read()))
        calls = e.kite("history", "1.0", "-af", "RemoteIOCalls").stdout.strip()
        got["calls"] = int(calls) if calls.isdigit() else -1
        if os.path.getsize(os.path.join(e.dir, "out.dat")) != MIB << 20:
            raise RuntimeError("the remote write is not whole on the desktop")
        return got
    finally:
        e.close()


CKPT_MIB = 256 if QUICK else 1024

# Holds CKPT_MIB of memory it has written, then appends a line per 20 ms to $1 (a remote file).
HOLDER = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char** argv) {
  size_t n = (size_t)atol(argv[2]) << 20;
  char* m = malloc(n);
  for (size_t i = 0; i < n; i += 4096) m[i] = (char)(i >> 12);
  FILE* f = fopen(argv[1], "a");
  for (long i = 0; i < 100000; ++i) {
    fprintf(f, "%ld %d\n", i, m[(i * 4096) % n]);
    fflush(f);
    usleep(20000);
  }
  return 0;
}
"""


def checkpoint_once():
    e = pool_bench.pool_env("ckpt", 1)
    try:
        if not pool_bench.wait_for(lambda: pool_bench.slot_count(e) == 1, 30):
            raise RuntimeError("the local slot did not appear")
        e.write("holder.c", HOLDER)
        subprocess.run(["cc", "-O1", "-o", os.path.join(e.dir, "holder"),
                        os.path.join(e.dir, "holder.c")], check=True)
        ticks = os.path.join(e.dir, "ticks.txt")
        e.write("j.sub", "universe = vanilla\ncheckpoint = transparent\nwant_remote_io = true\n"
                         "executable = holder\narguments = %s %d\nerror = err.txt\nqueue\n"
                % (ticks, CKPT_MIB))
        e.kite("submit", "j.sub")
        size = lambda: os.path.getsize(ticks) if os.path.exists(ticks) else 0  # noqa: E731
        if not pool_bench.wait_for(lambda: size() > 0, 120, 0.05):
            raise RuntimeError("the program never ran")
        committed = os.path.join(e.home, "spool", "checkpoints", "1.0", "ckpt.1")
        t0 = time.time()
        e.kite("checkpoint", "1.0")
        if not pool_bench.wait_for(lambda: os.path.isdir(committed), 300, 0.002):
            raise RuntimeError("no checkpoint committed: %r" %
                               open(os.path.join(e.dir, "err.txt")).read())
        t1 = time.time()
        at = size()
        if not pool_bench.wait_for(lambda: size() > at, 120, 0.002):
            raise RuntimeError("the restored program did not go on")
        t2 = time.time()
        image = sum(os.path.getsize(os.path.join(committed, n)) for n in os.listdir(committed))
        # The same bytes to this disk, synced: the limit a checkpoint of that memory works against.
        raw = os.path.join(e.dir, "raw.dat")
        d0 = time.time()
        subprocess.run(["dd", "if=/dev/zero", "of=" + raw, "bs=1M", "count=%d" % CKPT_MIB,
                        "conv=fsync"], check=True, capture_output=True)
        d1 = time.time()
        os.unlink(raw)
        e.kite("rm", "1.0")
        return {"commit": t1 - t0, "resume": t2 - t1, "dd": d1 - d0, "image": image}
    finally:
        e.close()


def main():
    ckpts = [checkpoint_once() for _ in range(RUNS)]
    ck = {k: statistics.median(r[k] for r in ckpts) for k in ckpts[0]}
    runs = [once() for _ in range(RUNS)]
    raws = [raw_connection() for _ in range(RUNS)]
    rtt = statistics.median(x[0] for x in raws)
    stream = statistics.median(x[1] for x in raws)
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
        ("sha256sum of %d MiB (an unmodified read-heavy program; target: remote ≤ 1.5× local "
         "time)" % MIB, "%.2f s" % med["remote_sha256"], "%.2f s" % med["local_sha256"],
         "%.2f (time ratio remote/local: %.2f×)" % (med["local_sha256"] / med["remote_sha256"],
                                                   med["remote_sha256"] / med["local_sha256"])),
        ("%d reads of 4 KiB at random offsets (python3)" % CALLS,
         "%.0f calls/s" % (CALLS / med["remote_random4k"]),
         "%.0f calls/s" % (CALLS / med["local_random4k"]),
         "%.2f" % (med["local_random4k"] / med["remote_random4k"])),
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
        f.write("\n### Against the connection itself\n\n"
                "Measured in the same run by this script: one Unix-socket hop between two "
                "processes (a remote call crosses three: library → starter → startd → agent, and "
                "back).\n\n| figure | remote I/O | the raw connection | fraction |\n"
                "| --- | --- | --- | --- |\n"
                "| round trips/s (remote: `stat` of a remote file, python3; raw: 16-byte "
                "ping-pong) | %.0f/s | %.0f/s | %.2f |\n"
                "| random 4 KiB reads/s vs raw round trips/s | %.0f/s | %.0f/s | %.2f |\n"
                "| %d MiB sequential read (1 MiB blocks) vs streamed raw | %.0f MiB/s | %.0f MiB/s "
                "| %.2f |\n"
                "| %d MiB sequential write (1 MiB blocks) vs streamed raw | %.0f MiB/s | %.0f "
                "MiB/s | %.2f |\n" %
                (CALLS / med["remote_stat"], 1 / rtt, (CALLS / med["remote_stat"]) * rtt,
                 CALLS / med["remote_random4k"], 1 / rtt, (CALLS / med["remote_random4k"]) * rtt,
                 MIB, mb(med["remote_read_1m"]), mb(stream), stream / med["remote_read_1m"],
                 MIB, mb(med["remote_write_1m"]), mb(stream), stream / med["remote_write_1m"]))
        f.write("\n## Transparent checkpoints\n\n"
                "A program holding %d MiB of written memory (malloc'd, every page touched), on a "
                "local slot with `checkpoint = transparent`; `kite checkpoint` until the "
                "checkpoint is committed in the agent's spool (the image written and synced in "
                "the sandbox, sent through starter → startd → agent, synced and renamed there); "
                "beside it, in the same run, dd writing the same number of bytes to a file on this "
                "disk with fsync — the limit, since the image is written once and synced once "
                "more at home.\n\n"
                "| figure | value |\n| --- | --- |\n"
                "| image size | %.0f MiB |\n"
                "| request → checkpoint committed at home | %.2f s |\n"
                "| dd of %d MiB with fsync (same run) | %.2f s |\n"
                "| checkpoint time / dd time | %.2f |\n"
                "| committed → the restored program writes again | %.2f s |\n\n"
                "Runs: %s.\n" %
                (CKPT_MIB, ck["image"] / (1 << 20), ck["commit"], CKPT_MIB, ck["dd"],
                 ck["commit"] / ck["dd"], ck["resume"],
                 "; ".join("commit %.2f s, resume %.2f s, dd %.2f s" %
                           (r["commit"], r["resume"], r["dd"]) for r in ckpts)))
    print(open(os.path.join(ROOT, "bench", "results", "rsc.md")).read())


if __name__ == "__main__":
    main()
