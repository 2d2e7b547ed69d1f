#!/usr/bin/python3
"""Grid jobs end to end: Kite beside Globus GRAM5, measured in the same run on this machine.

Kite: `kite testgrid up` (gatekeeper + job manager with the fork adapter on loopback, real TLS),
`kite agent start`, then N trivial grid jobs (/bin/true) submitted as one cluster with
`kite submit` until `kite wait` sees them all Completed -- through agent, gridmanager,
gatekeeper, job manager and kite-exec, with delegation, two-phase commit, callbacks and
commit-end. Then the latency of single jobs: `kite submit` of one job until `kite wait` returns,
one after another, median.

GRAM5: bench/gram5/run.sh (the real globus-gatekeeper and fork job manager from Debian, driven
with two-phase commit) with the same N, in the same run. Figures go to bench/results/grid.md.

Usage: bench/grid/run.py BIN_DIR [--quick] [--jobs N] [--no-gram5]
"""
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Linux {platform.release()}"


class Kite:
    def __init__(self, bindir, tmp):
        self.bindir = bindir
        self.dir = tmp
        self.env = dict(os.environ)
        self.env.update({
            "KITE_HOME": os.path.join(tmp, "home"),
            "X509_USER_PROXY": os.path.join(tmp, "x509up"),
            "X509_CERT_DIR": os.path.join(tmp, "home", "ca", "certificates"),
        })

    def run(self, *args, check=True):
        r = subprocess.run([os.path.join(self.bindir, "kite"), *args], cwd=self.dir, env=self.env,
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise SystemExit(f"kite {' '.join(args)} failed: {r.stdout}{r.stderr}")
        return r.stdout

    def submit(self, text):
        path = os.path.join(self.dir, "job.sub")
        with open(path, "w") as f:
            f.write(text)
        out = self.run("submit", path)
        return int(re.search(r"cluster (\d+)", out).group(1))

    def wait(self, cluster, timeout=3600):
        self.run("wait", "--timeout", str(timeout), str(cluster))


def kite_figures(bindir, jobs, singles):
    tmp = tempfile.mkdtemp(prefix="kite-grid-bench-")
    k = Kite(bindir, tmp)
    try:
        up = k.run("testgrid", "up")
        resource = re.search(r"grid_resource = kite \S+", up).group(0)
        k.run("agent", "start")
        sub = f"universe = grid\n{resource}\nexecutable = /bin/true\ntransfer_executable = false\n"
        k.wait(k.submit(sub + "queue\n"))  # warm: delegation made, connections open
        latencies = []
        for _ in range(singles):
            t0 = time.perf_counter()
            k.wait(k.submit(sub + "queue\n"))
            latencies.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        cluster = k.submit(sub + f"queue {jobs}\n")
        k.wait(cluster)
        seconds = time.perf_counter() - t0
        hist = k.run("history", "-constraint", f"ClusterId == {cluster} && JobStatus == 4",
                     "-limit", str(jobs + 1))
        done = sum(1 for line in hist.splitlines() if re.match(r"\s*\d+\.\d+\s", line))
        if done != jobs:
            raise SystemExit(f"only {done} of {jobs} grid jobs completed")
        return {"jobs": jobs, "seconds": seconds, "rate": jobs / seconds,
                "latency_ms": statistics.median(latencies), "latencies": latencies}
    finally:
        k.run("agent", "stop", "--stop-startd", check=False)
        k.run("testgrid", "down", check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def gram5_figures(jobs, quick):
    script = os.path.join(ROOT, "bench", "gram5", "run.sh")
    args = [script, "--jobs", str(jobs)] + (["--latency-runs", "5"] if quick else [])
    r = subprocess.run(args, capture_output=True, text=True)
    m = re.search(r"GRAM5 jobs=(\d+) seconds=([\d.]+) jobs_per_s=([\d.]+) "
                  r"median_latency_ms=([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        tail = (r.stdout + r.stderr)[-2000:]
        return {"error": f"bench/gram5/run.sh failed (exit {r.returncode}):\n{tail}"}
    return {"jobs": int(m.group(1)), "seconds": float(m.group(2)), "rate": float(m.group(3)),
            "latency_ms": float(m.group(4))}


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    bindir = os.path.abspath(sys.argv[1])
    quick = "--quick" in sys.argv
    jobs = 100 if quick else 1000
    if "--jobs" in sys.argv:
        jobs = int(sys.argv[sys.argv.index("--jobs") + 1])
    singles = 5 if quick else 10
    kite = kite_figures(bindir, jobs, singles)
    print(f"Kite: {jobs} grid jobs in {kite['seconds']:.2f} s = {kite['rate']:.1f} jobs/s; "
          f"single-job median {kite['latency_ms']:.0f} ms")
    gram5 = None if "--no-gram5" in sys.argv else gram5_figures(jobs, quick)
    lines = [
        "# Grid jobs end to end: Kite beside Globus GRAM5",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- machine: {machine()}; load average before: {os.getloadavg()[0]:.1f}",
        f"- run: `bench/grid/run.py {os.path.relpath(bindir, ROOT)}"
        f"{' --quick' if quick else ''}`",
        "",
        f"Workload: {jobs} trivial grid jobs (`/bin/true`) on loopback, fork batch system, "
        "two-phase commit, delegation once per site, callbacks; then single jobs one after "
        "another (median of the submit-to-Completed time).",
        "",
        "| | jobs | wall time | jobs/s | single-job latency (median) |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| Kite (kite submit → Completed, via agent, gridmanager, gatekeeper, job manager) | "
        f"{jobs} | {kite['seconds']:.2f} s | {kite['rate']:.1f} | {kite['latency_ms']:.0f} ms |",
    ]
    if gram5 and "error" not in gram5:
        lines.append(f"| Globus GRAM5 (globus-gatekeeper, fork job manager, C client with "
                     f"two-phase commit; bench/gram5/run.sh) | {gram5['jobs']} | "
                     f"{gram5['seconds']:.1f} s | {gram5['rate']:.2f} | "
                     f"{gram5['latency_ms']:.0f} ms |")
        lines += ["",
                  f"Kite / GRAM5 throughput: **{kite['rate'] / gram5['rate']:.1f}×** "
                  "(target ≥ 20×); single-job latency: "
                  f"**{kite['latency_ms']:.0f} ms** (target < 200 ms; GRAM5 "
                  f"{gram5['latency_ms']:.0f} ms, {gram5['latency_ms'] / kite['latency_ms']:.0f}× "
                  "slower).",
                  "",
                  "GRAM5's latency comes in steps of about a second: its fork job manager polls "
                  "for job ends about once a second (see bench/results/gram5.md)."]
    elif gram5:
        lines += ["", "GRAM5 could not be measured in this run:", "", "```", gram5["error"], "```"]
    else:
        lines += ["", "GRAM5 not run (--no-gram5); see bench/results/gram5.md for its last run."]
    lines += ["", "Kite single-job latencies (ms): " +
              ", ".join(f"{x:.0f}" for x in kite["latencies"]), ""]
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "grid.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
