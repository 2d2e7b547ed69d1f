#!/usr/bin/python3
"""Remote I/O with the programs scientists run (docs/remote-io.md): the same workload script --
sha256sum of a large file, tar x of many small files, cp -a of that tree, a bash loop appending
lines with >>, sqlite3 inserting rows, git commit of many files, make of a small C project -- timed
step by step on four places, all in the same run:

- local: a folder on this machine's disk, run by this script (no Kite, no FUSE);
- passthrough: the same disk through libfuse3's own passthrough_ll example (compiled here from
  Debian's libfuse3-dev, `cache=always`, writeback): what FUSE itself costs on this kernel;
- sandbox: a folder of a pool job's sandbox (what the job gets with no remote I/O);
- kernel: the job's remote folder through Kite's file system (remote_io_method = fuse): every
  request through kite-rsc-fuse -> starter -> startd -> agent's shadow;
and, for the read-heavy step only, the preloaded library (remote_io_method = preload; the other
steps are not right through it: docs/remote-io.md, "Known to be wrong today").

Usage: bench/rsc/workloads.py [BIN] [--quick]; writes bench/results/rsc-workloads.md.
"""
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402

pool_bench = agent_bench.load_bench("pool")

ROOT = agent_bench.ROOT
QUICK = agent_bench.QUICK
RUNS = 1 if QUICK else 3
BIG_MIB = 64 if QUICK else 512
# Not the 10,000 files of issue 27's list: passthrough_ll keeps a descriptor open for every file it
# has seen (two trees of FILES, plus git's), and this machine allows a process 20,000.
FILES = 2000 if QUICK else 6000
LINES = 4000 if QUICK else 20000
ROWS = 20000 if QUICK else 100000
GIT_FILES = 200 if QUICK else 1000
STEPS = ["sha256sum", "tar_x", "cp_a", "bash_append", "sqlite3", "git_commit", "make"]

# Run in the folder $1, which holds big.dat, tree.tar and src/ (a small C project); prints
# "STEP START END" lines.
WORKLOAD = r"""#!/bin/bash
set -e
cd "$1"
t() { local n=$1; shift; local s=$(date +%%s.%%N); "$@" >/dev/null 2>&1; echo "$n $s $(date +%%s.%%N)"; }
append() { for ((i = 0; i < %(lines)d; i++)); do echo "line $i" >> lines.txt; done; }
rows() { { echo "begin;"; echo "create table t(a, b);";
           for ((i = 0; i < %(rows)d; i++)); do echo "insert into t values($i, 'row $i');"; done;
           echo "commit;"; } > rows.sql; sqlite3 db.sqlite < rows.sql; }
commit() ( mkdir g && cd g && git init -q && git config user.email b@example.org &&
           git config user.name bench && for ((i = 0; i < %(git)d; i++)); do echo $i > f$i; done &&
           git add . && git commit -q -m files )
t sha256sum sha256sum big.dat
t tar_x tar xf tree.tar
t cp_a cp -a tree tree2
t bash_append append
t sqlite3 rows
t git_commit commit
t make make -s -C src -j1
"""

SHA_ONLY = r"""#!/bin/bash
cd "$1"
s=$(date +%s.%N); sha256sum big.dat >/dev/null; echo "sha256sum $s $(date +%s.%N)"
"""


def prepare(folder):
    """big.dat, tree.tar (FILES small files in 100 folders, a few links) and a small C project."""
    os.makedirs(folder, exist_ok=True)
    block = os.urandom(1 << 20)
    with open(os.path.join(folder, "big.dat"), "wb") as f:
        for _ in range(BIG_MIB):
            f.write(block)
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "tree")
        for i in range(FILES):
            d = os.path.join(tree, "d%02d" % (i % 100))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
                f.write("file %d\n" % i * (1 + i % 7))
        for i in range(20):
            os.symlink("f%05d.txt" % (i * 100), os.path.join(tree, "d00", "l%02d" % i))
        subprocess.run(["tar", "cf", os.path.join(folder, "tree.tar"), "-C", tmp, "tree"],
                       check=True)
    src = os.path.join(folder, "src")
    os.makedirs(src, exist_ok=True)
    objs = []
    for i in range(20):
        with open(os.path.join(src, "m%02d.c" % i), "w") as f:
            f.write("int f%02d(int x) { int s = 0; for (int i = 0; i < x; ++i) s += i * %d; "
                    "return s; }\n" % (i, i + 1))
        objs.append("m%02d.o" % i)
    with open(os.path.join(src, "main.c"), "w") as f:
        f.write("int f00(int);\nint main(void) { return f00(3) == 3 ? 0 : 1; }\n")
    with open(os.path.join(src, "Makefile"), "w") as f:
        f.write("prog: main.o %s\n\tcc -o prog main.o %s\n%%.o: %%.c\n\tcc -O1 -c $<\n" %
                (" ".join(objs), " ".join(objs)))


def parse(text, want):
    got = {m.group(1): float(m.group(3)) - float(m.group(2))
           for m in re.finditer(r"^(\S+) ([0-9.]+) ([0-9.]+)$", text, re.M)}
    if set(got) != set(want):
        raise RuntimeError("the workload said: %r" % text)
    return got


def run_here(folder, script):
    out = subprocess.run(["bash", script, folder], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("the workload failed in %s: %s" % (folder, out.stderr[-2000:]))
    return parse(out.stdout, STEPS)


def passthrough_once(script):
    """The workload on this disk through libfuse3's passthrough_ll (compiled here)."""
    example = "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        prog = os.path.join(tmp, "passthrough_ll")
        subprocess.run(["cc", "-O2", "-o", prog, example] +
                       subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                                      capture_output=True, text=True).stdout.split(),
                       check=True, capture_output=True)
        source, mnt = os.path.join(tmp, "disk"), os.path.join(tmp, "mnt")
        prepare(source)
        os.makedirs(mnt)
        # It keeps a descriptor for every file it has seen (two trees of FILES here): as many as
        # the kernel allows a process (root may raise its own limit that far).
        def more_files():
            most = int(open("/proc/sys/fs/nr_open").read())
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
            except (ValueError, OSError):
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        server = subprocess.Popen([prog, "-f", "-o", "source=%s,cache=always,writeback" % source,
                                   mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  preexec_fn=more_files)
        try:
            if not pool_bench.wait_for(lambda: os.path.exists(os.path.join(mnt, "big.dat")), 10):
                raise RuntimeError("passthrough_ll did not mount")
            return run_here(mnt, script)
        finally:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
            server.kill()
            server.wait()


def job_once(method, script_text, steps):
    """The workload in a pool job: on a folder of its sandbox and on its remote folder."""
    e = pool_bench.pool_env("rscw", 1)
    try:
        if not pool_bench.wait_for(lambda: pool_bench.slot_count(e) == 1, 30):
            raise RuntimeError("the local slot did not appear")
        remote = os.path.join(e.dir, "w")
        prepare(remote)
        e.write("work.sh", script_text)
        os.chmod(os.path.join(e.dir, "work.sh"), 0o755)
        both = ("#!/bin/bash\nset -e\ncp -a %s local\n./work.sh $PWD/local | sed 's/^/local_/'\n"
                "./work.sh %s | sed 's/^/remote_/'\n" % (remote, remote))
        e.write("job.sh", both)
        os.chmod(os.path.join(e.dir, "job.sh"), 0o755)
        e.write("j.sub", "universe = vanilla\nexecutable = job.sh\ntransfer_input_files = work.sh\n"
                         "want_remote_io = true\nremote_io_method = %s\n"
                         "output = out.txt\nerror = err.txt\nqueue\n" % method)
        e.kite("submit", "j.sub")
        e.kite("wait", "1", "--timeout", "1800")
        out = open(os.path.join(e.dir, "out.txt")).read()
        got = parse(out, ["local_" + s for s in steps] + ["remote_" + s for s in steps])
        how = e.kite("history", "1.0", "-af", "RemoteIOMethod").stdout
        how = (how.decode() if isinstance(how, bytes) else how).strip()
        if how != method:
            raise RuntimeError("the job ran with remote I/O %r, not %s: %r" %
                               (how, method, open(os.path.join(e.dir, "err.txt")).read()))
        return got
    finally:
        e.close()


def main():
    script_text = WORKLOAD % {"lines": LINES, "rows": ROWS, "git": GIT_FILES}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        script = os.path.join(tmp, "work.sh")
        with open(script, "w") as f:
            f.write(script_text)
        local, through = [], []
        for _ in range(RUNS):
            folder = os.path.join(tmp, "local")
            prepare(folder)
            local.append(run_here(folder, script))
            shutil.rmtree(folder)
            try:
                through.append(passthrough_once(script))
            except RuntimeError as e:  # said in the results, not taken for a figure
                print("bench: passthrough_ll: %s" % e, file=sys.stderr)
    kernel = [job_once("fuse", script_text, STEPS) for _ in range(RUNS)]
    preload = [job_once("preload", SHA_ONLY, ["sha256sum"]) for _ in range(RUNS)]
    med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
    load = open("/proc/loadavg").read().split()
    what = {
        "sha256sum": "sha256sum of %d MiB" % BIG_MIB,
        "tar_x": "tar x of %d small files (100 folders, 20 links)" % FILES,
        "cp_a": "cp -a of that tree",
        "bash_append": "bash loop appending %d lines with >>" % LINES,
        "sqlite3": "sqlite3 inserting %d rows (one transaction)" % ROWS,
        "git_commit": "git init, add and commit of %d files" % GIT_FILES,
        "make": "make of a 21-file C project",
    }
    path = os.path.join(ROOT, "bench", "results", "rsc-workloads.md")
    with open(path, "w") as f:
        f.write("# Remote I/O with ordinary programs (bench/rsc/workloads.py)\n\n")
        f.write("- Machine: %s\n- Date: %s\n- Load average when done: %s (a shared machine; other "
                "work may have run)\n- Runs per figure: %d (median)\n\n" %
                (agent_bench.machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 " ".join(load[:3]), RUNS))
        f.write("Seconds per step; ratios are time over the time on a plain disk measured in the "
                "same run (the passthrough beside this script's own run, Kite's file system "
                "beside the same job's sandbox).\n\n"
                "| step | local disk | libfuse3 passthrough_ll | ratio | job's sandbox | Kite, "
                "through the kernel | ratio | its ratio over passthrough's |\n"
                "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for s in STEPS:
            lo = med(local, s)
            sb, kr = med(kernel, "local_" + s), med(kernel, "remote_" + s)
            if through:
                pt = med(through, s)
                f.write("| %s | %.2f | %.2f | %.1f× | %.2f | %.2f | %.1f× | %.1f |\n" %
                        (what[s], lo, pt, pt / lo, sb, kr, kr / sb, (kr / sb) / (pt / lo)))
            else:
                f.write("| %s | %.2f | did not run | | %.2f | %.2f | %.1f× | |\n" %
                        (what[s], lo, sb, kr, kr / sb))
        sb, pl = med(preload, "local_sha256sum"), med(preload, "remote_sha256sum")
        f.write("\nThrough the preloaded library (remote_io_method = preload), the read-heavy "
                "step only: %s: sandbox %.2f s, remote %.2f s, %.1f×.\n" %
                (what["sha256sum"], sb, pl, pl / sb))
        f.write("\nRuns: %s.\n" % "; ".join(
            ", ".join("%s %.2f" % (k, v) for k, v in sorted(r.items())) for r in kernel))
    print(open(path).read())


if __name__ == "__main__":
    main()
