#!/usr/bin/python3
"""Personal-pool benchmarks (issue 15): vanilla throughput over 8 slots (local, and of two
glide-ins through the test grid), a startd's start to its slots in `kite status`, an idle claimed
slot to its next job running, and the agent with 1,000 slots advertised and 10,000 idle jobs
(memory, negotiation time).

Runs against the programs in BIN (default build-release/bin) in temporary KITE_HOMEs and writes
bench/results/pool.md with the machine, the date, each figure and, measured in the same run, the
limit beside it: posix_spawn+wait of /bin/true (bench/agent's agent_limits) and the same jobs in
the local universe. HTCondor 25's vanilla figure is quoted from shared/notes/htcondor-reference.md.

Usage: bench/pool/run.py [BIN] [--quick]
"""
import json
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402  (Env, timed, rss_mib, machine, percentile)

ROOT = agent_bench.ROOT
BIN = agent_bench.BIN
QUICK = agent_bench.QUICK
RUNS = 2 if QUICK else 3
JOBS = 300 if QUICK else 1000


def pool_env(tag, slots, extra=""):
    e = agent_bench.Env(tag)
    os.makedirs(e.home)
    with open(os.path.join(e.home, "config.toml"), "w") as f:
        f.write("[pool]\nlocal_slots = %d\nlocal_start = true\n%s" % (slots, extra))
    e.kite("agent", "start")
    return e


def slot_count(e):
    p = e.kite("status", "-json", check=False)
    try:
        return len(json.loads(p.stdout))
    except ValueError:
        return -1


def wait_for(cond, seconds, step=0.005):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return False


def throughput(universe):
    """Jobs/s from submit to all completed, for JOBS /bin/true jobs over 8 slots (vanilla) or the
    local universe; HTCondor's default file transfer (the executable is sent)."""
    rates = []
    for _ in range(RUNS):
        e = pool_env("pool-tp", 8 if universe == "vanilla" else 0)
        try:
            if universe == "vanilla" and not wait_for(lambda: slot_count(e) == 8, 30):
                raise RuntimeError("the local startd's 8 slots did not appear")
            e.write("t.sub", "universe = %s\nexecutable = /bin/true\nqueue %d\n" % (universe, JOBS))
            t0 = time.perf_counter()
            e.kite("submit", "t.sub")
            e.kite("wait", "1", "--timeout", "600")
            rates.append(JOBS / (time.perf_counter() - t0))
            if universe == "vanilla":
                reuse = claim_reuse(os.path.join(e.home, "startd.log"))
        finally:
            e.close()
    out = {"rate": statistics.median(rates), "rates": rates}
    if universe == "vanilla":
        out["reuse"] = reuse
    return out


def glidein_slots(e, resource):
    p = e.kite("status", "-constraint", 'GlideinResource == "%s"' % resource, "-af", "Name",
               check=False)
    return p.stdout.decode().count("\n") if p.returncode == 0 else -1


def glidein_throughput():
    """Jobs/s for the same jobs over 8 slots of two glide-ins (4 CPUs each) submitted through the
    embedded test grid, each glide-in's startd talking to the agent over mutual TLS (the user's
    proxy) as at a real site; the agent has no local slots."""
    rates = []
    for _ in range(RUNS):
        e = agent_bench.Env("pool-glidein")
        e.env["X509_USER_PROXY"] = os.path.join(e.dir, "x509up")
        e.env["X509_CERT_DIR"] = os.path.join(e.home, "ca", "certificates")
        os.makedirs(e.home)
        try:
            up = e.kite("testgrid", "up").stdout.decode()
            m = re.search(r"grid_resource = (kite [^\n]+)", up)
            if not m:
                raise RuntimeError("kite testgrid up named no grid_resource: %s" % up)
            resource = m.group(1)
            with open(os.path.join(e.home, "config.toml"), "w") as f:
                f.write("[pool]\nlocal_slots = 0\n")
            e.kite("agent", "start")
            address = os.path.join(e.home, "pool.address")
            if not wait_for(lambda: os.path.exists(address) and open(address).read().strip(), 30):
                raise RuntimeError("the agent's glide-in listener did not start")
            e.kite("glidein", "submit", "--resource", resource, "--count", "2", "--cpus", "4",
                   "--idle-timeout", "120s")
            if not wait_for(lambda: glidein_slots(e, resource) == 8, 120, 0.2):
                raise RuntimeError("the glide-ins' 8 slots did not appear")
            e.write("t.sub", "universe = vanilla\nexecutable = /bin/true\nqueue %d\n" % JOBS)
            t0 = time.perf_counter()
            out = e.kite("submit", "t.sub").stdout.decode()
            cluster = re.search(r"cluster (\d+)", out).group(1)  # the glide-ins are cluster 1
            e.kite("wait", cluster, "--timeout", "600")
            rates.append(JOBS / (time.perf_counter() - t0))
        finally:
            e.kite("glidein", "rm", "-all", check=False)
            e.kite("testgrid", "down", check=False)
            e.close()
    return {"rate": statistics.median(rates), "rates": rates}


STAMP = re.compile(r"^(\d+-\d+-\d+ \d+:\d+:\d+\.\d+) .*job (\S+) run \S+ (started on (\S+)|ended)")


def claim_reuse(log):
    """Per slot, from the startd's log: a job's end to the next job running on the same slot."""
    def secs(stamp):
        return time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + float(stamp[19:])
    slot_of, ended, gaps = {}, {}, []
    with open(log) as f:
        for line in f:
            m = STAMP.match(line)
            if not m:
                continue
            t, job = secs(m.group(1)), m.group(2)
            if m.group(4):
                slot = m.group(4)
                slot_of[job] = slot
                if slot in ended:
                    gaps.append(t - ended.pop(slot))
            elif job in slot_of:
                ended[slot_of[job]] = t
    return {"median_ms": 1000 * statistics.median(gaps), "p90_ms": 1000 * agent_bench.percentile(gaps, 0.9),
            "n": len(gaps)} if gaps else {}


def startd_start():
    """A kite-startd's exec to its slot in `kite status` (polled every 5 ms)."""
    e = pool_env("pool-start", 0)
    times = []
    try:
        for i in range(RUNS * 2):
            work = os.path.join(e.dir, "work%d" % i)
            credential = work + ".credential"
            e.kite("pool", "credential", "create", "--name", "b%d" % i, "-o", credential)
            t0 = time.perf_counter()
            p = subprocess.Popen([os.path.join(BIN, "kite-startd"), "--agent",
                                  "unix:" + os.path.join(e.home, "pool.sock"), "--name",
                                  "b%d" % i, "--slots", "1", "--credential", credential,
                                  "--work", work],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ok = wait_for(lambda: slot_count(e) == 1, 20)
            times.append(time.perf_counter() - t0)
            p.terminate()
            p.wait()
            wait_for(lambda: slot_count(e) == 0, 20)
            if not ok:
                raise RuntimeError("the startd's slot did not appear")
    finally:
        e.close()
    return {"median_ms": 1000 * statistics.median(times), "max_ms": 1000 * max(times)}


def frame(header):
    h = json.dumps(header).encode()
    return struct.pack(">II", len(h), 0) + h


def many_slots(alike, slots=1000, jobs=10000):
    """1,000 slots from one fake startd (ads as kite-startd makes them; START false, so no job
    matches), then 10,000 idle jobs: all alike (one kind: the negotiator tries one and skips the
    rest) or each of its own kind (the requirements differ: every job is tried against every
    slot, the worst case)."""
    if QUICK:
        slots, jobs = 200, 2000
    e = pool_env("pool-many", 0, "[agent]\nlog_level = \"debug\"\n")
    try:
        ad = ('[ MyType = "Machine"; Name = "slot%d@fake"; State = "Unclaimed"; Activity = "Idle"; '
              'Cpus = 1; Memory = 2048; Disk = 1000000; OpSys = "LINUX"; Arch = "X86_64"; '
              'HasFileTransfer = true; TimeToLive = 3600; Start = false; Requirements = Start ]')
        credential = os.path.join(e.dir, "fake.credential")
        e.kite("pool", "credential", "create", "--name", "fake", "--slots", str(slots), "-o",
               credential)
        with open(credential) as f:
            text = f.read().strip()
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.path.join(e.home, "pool.sock"))
        s.sendall(frame({"type": "hello", "version": 1, "name": "fake", "credential": text,
                         "slots": [{"name": "slot%d@fake" % i, "ad": ad % i}
                                   for i in range(1, slots + 1)]}))
        if not wait_for(lambda: slot_count(e) == slots, 30, 0.05):
            raise RuntimeError("the fake startd's slots did not appear")
        pid = agent_bench.agent_pid(e.home)
        rss_slots = agent_bench.rss_mib(pid)
        need = "1" if alike else "$(Process)"
        e.write("idle.sub", "universe = vanilla\nexecutable = /bin/true\n"
                "requirements = TARGET.Memory > %s\nqueue %d\n" % (need, jobs))
        e.kite("submit", "idle.sub")
        time.sleep(1)
        t, _ = agent_bench.timed([agent_bench.KITE, "q", "-totals"], e.env, e.dir)
        rss = agent_bench.rss_mib(pid)
        took, wall = [], []

        def passes():
            with open(os.path.join(e.home, "agent.log")) as f:
                return [line for line in f if "negotiation took" in line]
        # A pass over every job is logged when it ends (at info: it saw 1,000 jobs or more).
        wait_for(lambda: any("(%d idle job" % jobs in line or "; %d skipped" % (jobs - 1) in line
                             for line in passes()), 120, 0.1)
        for line in passes():
            m = re.search(r"negotiation took ([\d.]+) ms \((\d+) idle job", line)
            if m:
                took.append(float(m.group(1)))
                w = re.search(r"(\d+) slice\(s\) over ([\d.]+) ms", line)
                wall.append((float(w.group(2)), int(w.group(1))) if w else (0, 0))
        s.close()
        return {"slots": slots, "jobs": jobs, "rss_slots_mib": rss_slots, "rss_mib": rss,
                "negotiation_ms": max(took) if took else 0,
                "negotiation_wall": max(wall) if wall else (0, 0), "q_after_s": t}
    finally:
        e.close()


def main():
    limits = json.loads(agent_bench.run([os.path.join(BIN, "agent_limits"), tempfile.gettempdir()],
                                        os.environ).stdout)
    res = {"limits": limits, "vanilla": throughput("vanilla"), "local": throughput("local"),
           "glidein": glidein_throughput(), "start": startd_start(), "many": many_slots(True),
           "distinct": many_slots(False)}
    write_report(res)
    print(json.dumps(res, indent=1))


def write_report(r):
    L, v, loc, st, m, d = (r["limits"], r["vanilla"], r["local"], r["start"], r["many"],
                           r["distinct"])
    g = r["glidein"]
    load = open("/proc/loadavg").read().split()[0]
    rows = [
        ("%d `/bin/true` vanilla jobs over 8 local slots, submit to all Completed (executable "
         "transferred, as HTCondor does by default)" % JOBS,
         "%.0f jobs/s" % v["rate"], "≥ 200 jobs/s",
         "HTCondor 25: 28.6 jobs/s over 16 slots",
         "posix_spawn+wait %.0f/s; local universe here %.0f jobs/s" % (L["posix_spawn_per_s"], loc["rate"]),
         "%.2f of the local universe" % (v["rate"] / loc["rate"])),
        ("the same jobs over 8 slots of two glide-ins reached through the test grid (each "
         "startd's messages over mutual TLS to the agent)", "%.0f jobs/s" % g["rate"],
         "≥ 300 jobs/s", "", "the 8 local slots above, same run: %.0f jobs/s" % v["rate"],
         "%.2f of the local slots" % (g["rate"] / v["rate"])),
        ("idle claimed slot → next job running (median, p90; %d gaps)" % v["reuse"].get("n", 0),
         "%.1f ms, %.1f ms" % (v["reuse"].get("median_ms", 0), v["reuse"].get("p90_ms", 0)),
         "< 20 ms median", "glideinWMS / HTCondor: a negotiation cycle (60 s by default)", "", ""),
        ("kite-startd exec → its slot in `kite status` (median, max)",
         "%.0f ms, %.0f ms" % (st["median_ms"], st["max_ms"]), "< 1 s", "", "", ""),
        ("agent resident memory, %d slots advertised, then %d idle jobs" % (m["slots"], m["jobs"]),
         "%.1f MiB, %.1f MiB" % (m["rss_slots_mib"], m["rss_mib"]), "", "", "", ""),
        ("the longest negotiation over those (no job matches; the jobs alike: one kind)",
         "%.1f ms" % m["negotiation_ms"], "", "", "", ""),
        ("the same with each job of its own kind (every job tried against every slot): "
         "matchmaking time; its slices and their wall time",
         "%.0f ms; %d slices over %.0f ms" % (d["negotiation_ms"], d["negotiation_wall"][1],
                                             d["negotiation_wall"][0]), "", "", "", ""),
        ("`kite q -totals` 1 s after that submit (during the negotiation); alike jobs",
         "%.0f ms; %.0f ms" % (1000 * d["q_after_s"], 1000 * m["q_after_s"]), "", "", "", ""),
    ]
    path = os.path.join(ROOT, "bench", "results", "pool.md")
    # Sections written by hand below the table (comparisons of two builds) are kept.
    kept = ""
    if os.path.exists(path):
        old = open(path).read()
        kept = old[old.find("\n## "):] if "\n## " in old else ""
    with open(path, "w") as f:
        f.write("# Personal pool benchmarks\n\n")
        f.write("Machine: %s. Date: %s. Load average at the end: %s (the machine is shared; other "
                "builds may have run).\n\n" % (agent_bench.machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load))
        f.write("| measure | Kite | target | peer | limit (same run) | ratio |\n")
        f.write("| --- | --- | --- | --- | --- | --- |\n")
        for row in rows:
            f.write("| " + " | ".join(row) + " |\n")
        f.write("\nThroughput runs: %s jobs/s (vanilla), %s (local), %s (glide-ins). "
                "`bench/pool/run.py`.\n" %
                (", ".join("%.0f" % x for x in v["rates"]), ", ".join("%.0f" % x for x in loc["rates"]),
                 ", ".join("%.0f" % x for x in g["rates"])))
        f.write(kept)


if __name__ == "__main__":
    main()
