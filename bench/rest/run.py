#!/usr/bin/python3
"""REST endpoint benchmark; see run.sh. Usage: run.py BIN [--quick]"""
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(sys.argv[1])
QUICK = "--quick" in sys.argv
KITE = os.path.join(BIN, "kite")
JOBS = 100000
RUNS = 3 if QUICK else 5
WRK_SECONDS = 5 if QUICK else 10


def run(args, env, cwd=None):
    p = subprocess.run(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), p.stderr.decode()))
    return p


def fetch(url, token, first_byte=None):
    """Seconds to the whole answer, and the body; `first_byte` gets the seconds to its headers
    (the agent sends them once the whole listing is formatted)."""
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        if first_byte is not None:
            first_byte.append(time.perf_counter() - t0)
        body = r.read()
    return time.perf_counter() - t0, body


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return "%d cores, %s, %s" % (os.cpu_count(), cpu, platform.platform())


def kite_q_loop(env, cwd, stop, out):
    while not stop.is_set():
        t0 = time.perf_counter()
        run([KITE, "q", "1.0"], env, cwd)
        out.append(time.perf_counter() - t0)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main():
    tmp = tempfile.mkdtemp(prefix="kite-bench-rest-")
    home = os.path.join(tmp, "home")
    env = dict(os.environ, KITE_HOME=home)
    try:
        run([KITE, "agent", "start", "--rest", "127.0.0.1:0"], env, tmp)
        url = open(os.path.join(home, "rest.address")).read().strip()
        token = open(os.path.join(home, "rest.token")).read().strip()
        with open(os.path.join(tmp, "jobs.sub"), "w") as f:
            f.write("universe = local\nexecutable = /bin/true\narguments = one two\n"
                    "hold = true\nqueue %d\n" % JOBS)
        t0 = time.perf_counter()
        run([KITE, "submit", "jobs.sub"], env, tmp)
        submit_s = time.perf_counter() - t0

        # (a) the whole queue as JSON, beside `kite q -json` over the same queue.
        rest_times, headers_at, size = [], [], 0
        for _ in range(RUNS):
            dt, body = fetch(url + "api/v1/jobs", token, headers_at)
            rest_times.append(dt)
            size = len(body)
        assert body.count(b'"ProcId"') == JOBS, "not every job was listed"
        cli_times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            run([KITE, "q", "-json"], env, tmp)
            cli_times.append(time.perf_counter() - t0)
        held_times = []
        for _ in range(RUNS):
            dt, _ = fetch(url + "api/v1/jobs?status=held&constraint=ProcId%20%3C%2010", token)
            held_times.append(dt)

        # (b) one job's status, 32 connections, while a loop of `kite q 1.0` runs.
        quiet = []
        for _ in range(20):
            t0 = time.perf_counter()
            run([KITE, "q", "1.0"], env, tmp)
            quiet.append(time.perf_counter() - t0)
        stop, loaded = threading.Event(), []
        loop = threading.Thread(target=kite_q_loop, args=(env, tmp, stop, loaded))
        loop.start()
        w = subprocess.run(["wrk", "-t", "2", "-c", "32", "-d", "%ds" % WRK_SECONDS,
                            "--latency", "-H", "Authorization: Bearer " + token,
                            url + "api/v1/jobs/1.50000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stop.set()
        loop.join()
        rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", w.stdout).group(1))
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", w.stdout)
        errors = re.search(r"Socket errors: (.*)", w.stdout)
        p99 = re.search(r"99%\s+(\S+)", w.stdout)
        # The endpoint's own count of what it answered.
        _, metrics = fetch(url + "metrics", token)
        ok = re.search(rb'kite_rest_requests_total\{code="200"\} (\d+)', metrics)
        run([KITE, "agent", "stop", "--stop-startd"], env, tmp)
    finally:
        subprocess.run([KITE, "agent", "stop", "--stop-startd"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)

    med = statistics.median
    out = os.path.join(ROOT, "bench", "results", "rest.md")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    lines = [
        "# REST endpoint benchmark (issue 7) — %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "",
        "Machine: %s. Programs: %s. Medians of %d runs; %d jobs queued (one cluster, "
        "`hold = true`, submitted in %.2f s)." % (machine(), BIN, RUNS, JOBS, submit_s),
        "",
        "| measure | Kite | target | beside it |",
        "| --- | ---: | ---: | --- |",
        "| `GET /api/v1/jobs`, all %d jobs (%.0f MB of JSON), until the last byte is read | %.3f s | < 1 s | `kite q -json` over the same queue: %.3f s |"
        % (JOBS, size / 1e6, med(rest_times), med(cli_times)),
        "| the same, until the headers arrive (the listing formatted) | %.3f s | — | |"
        % med(headers_at),
        "| `GET /api/v1/jobs?status=held&constraint=ProcId < 10` | %.3f s | — | a constraint evaluated on every job |"
        % med(held_times),
        "| one job's status (`/api/v1/jobs/1.50000`), wrk 32 connections, %d s | %.0f req/s | ≥ 2,000 req/s | p99 latency %s; non-2xx: %s; socket errors: %s; endpoint counted %s 200s |"
        % (WRK_SECONDS, rps, p99.group(1) if p99 else "?", non2xx.group(1) if non2xx else "0",
           errors.group(1) if errors else "none", ok.group(1).decode() if ok else "?"),
        "| `kite q 1.0` during that load | median %.3f s, p95 %.3f s, max %.3f s (%d runs) | keeps working | without load: median %.3f s, max %.3f s |"
        % (med(loaded), pct(loaded, 0.95), max(loaded), len(loaded), med(quiet), max(quiet)),
        "",
        "The agent is one thread: wrk's requests and the CLI's share it, so `kite q` waits behind "
        "the REST requests queued before it; each REST request is a map lookup and one job's JSON.",
        "The machine is shared (2 cores; wrk, the agent and the `kite q` loop all run on it).",
        "Profiled with perf (issue 7): the full listing first spent over half its time looking "
        "cluster attributes up by name in each job's ad (tolower and the name-intern table); with "
        "interned keys it went from 0.58 s to 0.28 s (curl, same machine).",
    ]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print("wrote", out)


if __name__ == "__main__":
    main()
