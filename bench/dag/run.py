#!/usr/bin/python3
"""DAG benchmarks (issue 17): a 10,000-node DAG of /bin/true local-universe nodes (one root, 100
chains of 99 fanning out from it, a sink they fan into, 98 leaves after it), submit to done in
nodes/s, beside Kite's own local-universe rate for as many /bin/true jobs in one cluster, measured
in the same run; and the agent's restart after kill -9 with the same DAG half done, until
`kite dag status` answers with every node.

DAGMan's default (100 submits per 5-second scan, DAGMAN_MAX_SUBMITS_PER_INTERVAL and
DAGMAN_USER_LOG_SCAN_INTERVAL) bounds it at 20 nodes/s; HTCondor is not packaged for Debian 12, so
that figure is quoted from HTCondor's documented defaults, not re-run here.

Usage: bench/dag/run.py [BIN] [--quick]
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
import run as agent_bench  # noqa: E402  (Env, machine)

ROOT = agent_bench.ROOT
QUICK = agent_bench.QUICK
RUNS = 1 if QUICK else 3
CHAINS, CHAIN = (20, 49) if QUICK else (100, 99)


def dag_text():
    lines = ["JOB root n.sub", "JOB sink n.sub"]
    for c in range(CHAINS):
        for i in range(CHAIN):
            name = "c%d_%d" % (c, i)
            lines.append("JOB %s n.sub" % name)
            parent = "root" if i == 0 else "c%d_%d" % (c, i - 1)
            lines.append("PARENT %s CHILD %s" % (parent, name))
        lines.append("PARENT c%d_%d CHILD sink" % (c, CHAIN - 1))
    for i in range(CHAINS - 2):
        lines.append("JOB leaf%d n.sub" % i)
        lines.append("PARENT sink CHILD leaf%d" % i)
    return "\n".join(lines) + "\n", 2 + CHAINS * CHAIN + CHAINS - 2


NODE_SUB = "universe = local\nexecutable = /bin/true\nqueue\n"


def dag_job_ad(e, cluster):
    p = e.kite("q", "%d.0" % cluster, "-json", check=False)
    try:
        ads = json.loads(p.stdout.decode())
    except ValueError:
        return None
    return ads[0] if ads else None


def wait_done(e, cluster, timeout=3600):
    e.kite("wait", "%d.0" % cluster, "--timeout", str(timeout))


def dag_rate():
    text, nodes = dag_text()
    rates = []
    for _ in range(RUNS):
        e = agent_bench.Env("dag")
        try:
            e.kite("agent", "start")
            e.write("n.sub", NODE_SUB)
            e.write("big.dag", text)
            t0 = time.perf_counter()
            out = e.kite("dag", "submit", "big.dag").stdout.decode()
            cluster = int(out.split("submitted to cluster ")[1].split(".")[0])
            wait_done(e, cluster)
            rates.append(nodes / (time.perf_counter() - t0))
            h = e.kite("history", "%d.0" % cluster, "-af", "ExitCode").stdout.decode().strip()
            if h != "0":
                raise RuntimeError("the DAG ended with ExitCode %r" % h)
        finally:
            e.close()
    return nodes, rates


def local_rate(jobs):
    rates = []
    for _ in range(RUNS):
        e = agent_bench.Env("dag-local")
        try:
            e.kite("agent", "start")
            e.write("t.sub", "universe = local\nexecutable = /bin/true\nqueue %d\n" % jobs)
            t0 = time.perf_counter()
            e.kite("submit", "t.sub")
            e.kite("wait", "1", "--timeout", "3600")
            rates.append(jobs / (time.perf_counter() - t0))
        finally:
            e.close()
    return rates


def restart_half_done():
    text, nodes = dag_text()
    e = agent_bench.Env("dag-restart")
    try:
        e.kite("agent", "start")
        e.write("n.sub", NODE_SUB)
        e.write("big.dag", text)
        out = e.kite("dag", "submit", "big.dag").stdout.decode()
        cluster = int(out.split("submitted to cluster ")[1].split(".")[0])
        while True:
            ad = dag_job_ad(e, cluster)
            if ad and ad.get("DAG_NodesDone", 0) >= nodes // 2:
                break
            time.sleep(0.05)
        done_before = ad.get("DAG_NodesDone", 0)
        pid = agent_bench.agent_pid(e.home)
        os.kill(pid, 9)
        while True:
            try:
                os.kill(pid, 0)
                time.sleep(0.01)
            except ProcessLookupError:
                break
        t0 = time.perf_counter()
        e.kite("agent", "start")
        while True:
            p = e.kite("dag", "status", str(cluster), check=False)
            if p.returncode == 0 and p.stdout.decode().count("\n") >= nodes + 2:
                break
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        wait_done(e, cluster)
        h = e.kite("history", "%d.0" % cluster, "-af", "ExitCode").stdout.decode().strip()
        runs = e.kite("history", "-constraint", "DAGManJobId == %d" % cluster, "-af",
                      "DAGNodeName").stdout.decode().split()
        return {"seconds": seconds, "done_before": done_before, "nodes": nodes, "exit": h,
                "node_runs": len(runs), "distinct": len(set(runs))}
    finally:
        e.close()


def main():
    nodes, dag_rates = dag_rate()
    local_rates = local_rate(nodes)
    restart = restart_half_done()
    load = os.getloadavg()
    dag = statistics.median(dag_rates)
    local = statistics.median(local_rates)
    lines = [
        "# DAG benchmarks (bench/dag/run.py)",
        "",
        "- Machine: %s" % agent_bench.machine(),
        "- Date: %s" % time.strftime("%Y-%m-%d %H:%M %Z"),
        "- Load average when done: %.2f %.2f %.2f (a shared machine; other work may have run)" % load,
        "- Runs per figure: %d (median)%s" % (RUNS, "; --quick" if QUICK else ""),
        "",
        "| figure | Kite | beside it (same run) |",
        "| --- | --- | --- |",
        "| %d-node DAG of /bin/true local nodes (%d chains of %d, fan-out and fan-in), submit to "
        "done | **%.0f nodes/s** (runs: %s) | %d /bin/true local jobs in one cluster: %.0f jobs/s "
        "(runs: %s), so the DAG runs at %.0f %% of the local universe; DAGMan's defaults: at most "
        "20 nodes/s (100 submits per 5 s scan) |"
        % (nodes, CHAINS, CHAIN, dag, ", ".join("%.0f" % r for r in dag_rates), nodes, local,
           ", ".join("%.0f" % r for r in local_rates), 100.0 * dag / local),
        "| kill -9 of the agent with the DAG half done (%d of %d nodes), `kite agent start` until "
        "`kite dag status` lists every node | **%.2f s** | the DAG then ended with ExitCode %s; "
        "%d node jobs ran for %d nodes (%d distinct; nodes done before the kill are in the "
        "history once) |"
        % (restart["done_before"], restart["nodes"], restart["seconds"], restart["exit"],
           restart["node_runs"], restart["nodes"], restart["distinct"]),
        "",
        "Issue 17's target is at least 500 nodes/s.",
        "",
    ]
    path = os.path.join(ROOT, "bench", "results", "dag.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
