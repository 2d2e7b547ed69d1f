#!/usr/bin/python3
"""Kite agent benchmarks (issue 2): submit, q, q -json, local throughput, memory, restart.

Runs against the programs in BIN (default build-release/bin), in a temporary KITE_HOME, and writes
bench/results/agent.md with the machine, the date, each figure, the limit measured in the same run
and HTCondor 25's figure from shared/notes/htcondor-reference.md (HTCondor is not packaged for
Debian 12, so it is quoted, not re-run here).

Usage: bench/agent/run.py [BIN] [--quick]
"""
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
QUICK = "--quick" in sys.argv
BIN = os.path.abspath(ARGS[0]) if ARGS else os.path.join(ROOT, "build-release", "bin")
KITE = os.path.join(BIN, "kite")
RUNS = 2 if QUICK else 5
BURSTS = 2 if QUICK else 8  # bursts of 1,000 local jobs with the CLI timed during each


def load_bench(folder):
    """Another bench's run.py (bench/FOLDER/run.py) as a module: by path, since every bench's
    module is named `run`."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        folder + "_bench", os.path.join(ROOT, "bench", folder, "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(args, env, cwd=None, check=True):
    p = subprocess.run(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), p.stderr.decode()))
    return p


def timed(args, env, cwd=None):
    t0 = time.perf_counter()
    p = run(args, env, cwd)
    return time.perf_counter() - t0, p


def agent_pid(home):
    with open(os.path.join(home, "agent.pid")) as f:
        return int(f.read().strip())


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return "%d cores, %s, %s" % (os.cpu_count(), cpu, platform.platform())


class Env:
    def __init__(self, tag):
        self.dir = tempfile.mkdtemp(prefix="kite-bench-%s-" % tag)
        self.home = os.path.join(self.dir, "home")
        self.env = dict(os.environ, KITE_HOME=self.home)

    def kite(self, *args, check=True):
        return run([KITE] + list(args), self.env, self.dir, check)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def close(self):
        self.kite("agent", "stop", "--stop-startd", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def ping_during(env, fn):
    """Runs fn() while timing `kite agent status` in a loop; returns (fn's result, worst ping)."""
    worst = [0.0]
    done = threading.Event()

    def pinger():
        while not done.is_set():
            t, _ = timed([KITE, "agent", "status"], env.env)
            worst[0] = max(worst[0], t)

    th = threading.Thread(target=pinger)
    th.start()
    try:
        result = fn()
    finally:
        done.set()
        th.join()
    return result, worst[0]


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def answer_times(env, stop):
    """Times `kite q`, a one-job submit (held) and, once released, `kite hold` of that job, round
    after round until stop(rounds) is true; returns {command: [seconds...]}."""
    times = {"q": [], "submit": [], "hold": []}
    rounds = 0
    while not stop(rounds):
        t, _ = timed([KITE, "q"], env.env, env.dir)
        times["q"].append(t)
        t, p = timed([KITE, "submit", "one.sub"], env.env, env.dir)
        times["submit"].append(t)
        job = p.stdout.split()[-1].rstrip(b".").decode()
        env.kite("release", job)
        t, _ = timed([KITE, "hold", job], env.env, env.dir)
        times["hold"].append(t)
        rounds += 1
    return times


def main():
    if not os.path.exists(KITE):
        sys.exit("no kite at %s: build first (scripts/bench does)" % KITE)
    limits = json.loads(run([os.path.join(BIN, "agent_limits"), tempfile.gettempdir()],
                            os.environ).stdout)
    res = {"limits": limits}

    # --- a 10,000-job cluster, then 100,000 queued jobs -------------------------------------
    e = Env("queue")
    try:
        e.kite("agent", "start")
        e.write("big.sub", "executable = /bin/true\nhold = true\nqueue 10000\n")
        submits = []
        for _ in range(10):
            t, p = timed([KITE, "submit", "big.sub"], e.env, e.dir)
            assert b"10000 job(s) submitted" in p.stdout, p.stdout
            submits.append(t)
        res["submit_10k_s"] = statistics.median(submits)
        res["submit_10k_all"] = submits
        pid = agent_pid(e.home)
        res["rss_100k_mib"] = rss_mib(pid)

        def q_runs(args):
            ts = []
            for _ in range(RUNS):
                t, p = timed([KITE] + args, e.env, e.dir)
                ts.append(t)
            return ts, p

        (q_times, p), q_ping = ping_during(e, lambda: q_runs(["q"]))
        assert b"Total for query: 100000 jobs" in p.stdout, p.stdout[-300:]
        res["q_100k_s"] = statistics.median(q_times)
        res["q_100k_worst_ping_s"] = q_ping
        (qn_times, p), _ = ping_during(e, lambda: q_runs(["q", "-nobatch"]))
        res["q_nobatch_100k_s"] = statistics.median(qn_times)
        (qj_times, p), qj_ping = ping_during(e, lambda: q_runs(["q", "-json"]))
        res["q_json_100k_s"] = statistics.median(qj_times)
        res["q_json_100k_bytes"] = len(p.stdout)
        res["q_json_100k_worst_ping_s"] = qj_ping
        assert json.loads(p.stdout)[99999]["ProcId"] == 9999

        # Restart: from `kite agent start` to a `kite q` that shows all 100,000 jobs.
        restarts = []
        for _ in range(3):
            e.kite("agent", "stop")
            t0 = time.perf_counter()
            e.kite("agent", "start")
            while b"Total for query: 100000 jobs" not in e.kite("q", check=False).stdout:
                time.sleep(0.01)
            restarts.append(time.perf_counter() - t0)
        res["restart_100k_s"] = statistics.median(restarts)
        res["rss_100k_after_restart_mib"] = rss_mib(agent_pid(e.home))
    finally:
        e.close()

    # --- 1,000 local-universe /bin/true jobs ----------------------------------------------------
    rates = []
    for _ in range(3):
        e = Env("local")
        try:
            e.kite("agent", "start")
            e.write("local.sub", "universe = local\nexecutable = /bin/true\nqueue 1000\n")
            t0 = time.perf_counter()
            p = e.kite("submit", "local.sub")
            cluster = p.stdout.split()[-1].rstrip(b".").decode()
            e.kite("wait", cluster, "--timeout", "300")
            rates.append(1000 / (time.perf_counter() - t0))
        finally:
            e.close()
    res["local_1000_jobs_per_s"] = statistics.median(rates)

    # --- answers while 1,000 local jobs run, beside the same on a quiet queue -------------------
    e = Env("burst")
    try:
        e.kite("agent", "start")
        e.write("local.sub", "universe = local\nexecutable = /bin/true\nqueue 1000\n")
        e.write("one.sub", "universe = local\nexecutable = /bin/sleep\narguments = 3600\n"
                "hold = true\nqueue\n")
        res["quiet_answers"] = answer_times(e, lambda n: n >= 30)
        # A burst of 1,000 jobs ends in about a second now: BURSTS of them give the percentiles
        # enough samples (every answer timed while one of them runs).
        busy = {"q": [], "submit": [], "hold": []}
        for _ in range(BURSTS):
            p = e.kite("submit", "local.sub")
            cluster = p.stdout.split()[-1].rstrip(b".").decode()
            done = threading.Event()
            waiter = threading.Thread(target=lambda: (e.kite("wait", cluster, "--timeout", "300"),
                                                      done.set()))
            waiter.start()
            for cmd, ts in answer_times(e, lambda n: done.is_set()).items():
                busy[cmd] += ts
            waiter.join()
        res["burst_answers"] = busy
    finally:
        e.close()

    # --- ClassAd evaluation ----------------------------------------------------------------------
    cb = os.path.join(BIN, "classad_bench")
    if os.path.exists(cb):
        out = run([cb, "--benchmark_filter=BM_EvaluateRequirements|BM_ParseRequirements",
                   "--benchmark_format=json"], os.environ).stdout
        for b in json.loads(out)["benchmarks"]:
            res[b["name"]] = 1e9 / b["cpu_time"] if b.get("time_unit") == "ns" else None

    write_report(res)
    print(json.dumps(res, indent=2))


def write_report(r):
    L = r["limits"]
    sql_10k = 10000 / L["sqlite_rows_per_s"]
    rows = [
        ("`kite submit` of a `queue 10000` cluster, durable", "%.3f s" % r["submit_10k_s"],
         "≤ 0.5 s", "2.63 s", "raw SQLite: 10,000 rows in %.3f s" % sql_10k,
         "%.1f×" % (2.63 / r["submit_10k_s"])),
        ("`kite q` over 100,000 jobs", "%.3f s" % r["q_100k_s"], "≤ 1 s", "4.65 s",
         "agent answered others within %.3f s meanwhile" % r["q_100k_worst_ping_s"],
         "%.1f×" % (4.65 / r["q_100k_s"])),
        ("`kite q -nobatch` over 100,000 jobs", "%.3f s" % r["q_nobatch_100k_s"], "—", "—", "",
         ""),
        ("`kite q -json` over 100,000 jobs (%.0f MB)" % (r["q_json_100k_bytes"] / 1e6),
         "%.3f s" % r["q_json_100k_s"], "≤ 3 s", "14.25 s",
         "agent answered others within %.3f s meanwhile" % r["q_json_100k_worst_ping_s"],
         "%.1f×" % (14.25 / r["q_json_100k_s"])),
        ("1,000 local `/bin/true` jobs, submit to all Completed",
         "%.0f jobs/s" % r["local_1000_jobs_per_s"], "≥ 300 jobs/s", "44 jobs/s",
         "posix_spawn+wait: %.0f/s" % L["posix_spawn_per_s"],
         "%.1f×" % (r["local_1000_jobs_per_s"] / 44)),
        ("agent resident memory, 100,000 jobs queued", "%.1f MiB" % r["rss_100k_mib"],
         "≤ 100 MB", "97.8 MiB", "after a restart: %.1f MiB" % r["rss_100k_after_restart_mib"],
         "%.1f×" % (97.8 / r["rss_100k_mib"])),
        ("agent restart until `kite q` shows all 100,000 jobs", "%.3f s" % r["restart_100k_s"],
         "≤ 1 s", "1.22 s", "", "%.1f×" % (1.22 / r["restart_100k_s"])),
    ]
    for cmd, label in (("q", "`kite q`"), ("submit", "a one-job `kite submit`"),
                       ("hold", "`kite hold` of one job")):
        busy, quiet = r["burst_answers"][cmd], r["quiet_answers"][cmd]
        rows.append(("%s while 1,000 local jobs run: p50 / p99 (%d samples, %d bursts)" %
                     (label, len(busy), BURSTS),
                     "%.0f / %.0f ms" % (1e3 * percentile(busy, 0.5), 1e3 * percentile(busy, 0.99)),
                     "p99 < 100 ms", "—",
                     "quiet queue: %.0f / %.0f ms" % (1e3 * percentile(quiet, 0.5),
                                                      1e3 * percentile(quiet, 0.99)), ""))
    ev = r.get("BM_EvaluateRequirements")
    if ev:
        rows.append(("ClassAd: evaluate a typical Requirements expression",
                     "%.2f M/s" % (ev / 1e6), "≥ 1 M/s", "—",
                     "parse: %.0f k/s" % (r.get("BM_ParseRequirements", 0) / 1e3), ""))
    out = os.path.join(ROOT, "bench", "results", "agent.md")
    with open(out, "w") as f:
        f.write("# Agent benchmarks (issue 2) — %s\n\n" % time.strftime("%Y-%m-%d %H:%M UTC",
                                                                       time.gmtime()))
        f.write("Machine: %s. Release build. Medians of %d runs (restart: 3, local: 3).\n" %
                (machine(), RUNS))
        f.write("Limits measured in the same run: SQLite WAL+FULL %.0f rows/s in one "
                "transaction; posix_spawn+wait of /bin/true %.0f/s.\n" %
                (L["sqlite_rows_per_s"], L["posix_spawn_per_s"]))
        f.write("HTCondor 25.0 figures are from `shared/notes/htcondor-reference.md` (measured on a "
                "machine of this kind; HTCondor is not packaged for Debian 12 and is not re-run "
                "here).\n\n")
        f.write("| measure | Kite | target | HTCondor 25 | beside it | Kite vs HTCondor |\n")
        f.write("| --- | ---: | ---: | ---: | --- | ---: |\n")
        for row in rows:
            f.write("| %s |\n" % " | ".join(row))
    print("wrote", out)


if __name__ == "__main__":
    main()
