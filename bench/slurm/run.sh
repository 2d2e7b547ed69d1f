#!/usr/bin/env bash
# bench/slurm/run.sh - Kite's overhead in front of a real Slurm: N trivial jobs (/bin/true)
# submitted by a plain shell loop of `sbatch`, timed until Slurm has finished them all, against the
# same N through Kite (`kite submit` of one N-job grid cluster to `kite testgrid up --batch slurm`:
# agent, gridmanager, gatekeeper, job manager, sbatch, squeue), timed until `kite wait` sees them all
# Completed. Each run gets a fresh private single-node Slurm from tests/fixtures/slurm/ (the
# fixture's fast scheduler settings, CPUS CPUs on its node), so neither sees the other's jobs.
#
# Usage: bench/slurm/run.sh [BIN_DIR | BIN_DIR/slurm_bench] [--quick | --jobs N] [--cpus C]
#   BIN_DIR   where kite, kite-agent, kite-gatekeeper, ... are (default: build-release/bin, else
#             build/bin); scripts/bench passes BIN_DIR/slurm_bench, which need not exist
#   --jobs N  jobs in each run (default 1000); --quick: 100
#   --cpus C  CPUs of the Slurm node (default 16: trivial jobs, more of them at once)
#
# Writes bench/results/slurm.md (overwritten) and ends with one line for other scripts:
#   SLURM jobs=N sbatch_seconds=S kite_seconds=K ratio=R
# Stops what it started (agent, test grid, Slurm daemons, by PID) and removes its temporary
# directory on exit, also on error or Ctrl-C.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/bench/results/slurm.md"
fixture="$root/tests/fixtures/slurm"

jobs=1000
cpus=16
bindir=""
quick=""

die() { echo "slurm-bench: error: $*" >&2; exit 1; }
say() { echo "slurm-bench: $*" >&2; }
count() { if [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]]; then echo "$2"; else die "$1 needs a positive number"; fi; }

while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$(count "$@")"; shift 2 ;;
    --quick) jobs=100; quick=" --quick"; shift ;;
    --cpus) cpus="$(count "$@")"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) bindir="$1"; shift ;;
  esac
done
if [ -n "$bindir" ] && [ ! -d "$bindir" ]; then bindir="$(dirname "$bindir")"; fi
if [ -z "$bindir" ]; then
  for d in "$root/build-release/bin" "$root/build/bin"; do
    if [ -x "$d/kite" ]; then bindir="$d"; break; fi
  done
fi
bindir="$(cd "${bindir:-.}" && pwd)"
for prog in kite kite-agent kite-gridmanager kite-gatekeeper kite-jobmanager kite-exec; do
  [ -x "$bindir/$prog" ] || die "no $prog in $bindir (build Kite first, or pass BIN_DIR)"
done

tmp="$(mktemp -d /tmp/kite-slurm-bench-XXXXXX)"
chmod 0755 "$tmp"
cluster=""
kite_env=()
cleanup() {
  if [ ${#kite_env[@]} -gt 0 ]; then
    env "${kite_env[@]}" "$bindir/kite" agent stop --stop-startd >/dev/null 2>&1 || true
    env "${kite_env[@]}" "$bindir/kite" testgrid down >/dev/null 2>&1 || true
  fi
  if [ -n "$cluster" ]; then "$fixture/stop-slurm.sh" "$cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_cluster NAME: a fresh cluster under $tmp/NAME; sets $cluster and exports SLURM_CONF.
start_cluster() {
  cluster="$tmp/$1"
  local conf
  conf="$("$fixture/start-slurm.sh" "$cluster" "$cpus")" || die "could not start Slurm (see above)"
  export SLURM_CONF="$conf"
}
stop_cluster() {
  "$fixture/stop-slurm.sh" "$cluster" >/dev/null 2>&1 || true
  cluster=""
}
now() { date +%s.%N; }
# calc EXPR: floating-point arithmetic (awk: bc is not everywhere).
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
# Jobs of this cluster that have not finished yet.
unfinished() { squeue --noheader --states=PENDING,CONFIGURING,RUNNING,COMPLETING --format=%i | wc -l; }
# Jobs of this cluster in state $1 (squeue keeps finished jobs for MinJobAge, an hour here).
in_state() { squeue --noheader --states="$1" --format=%i | wc -l; }

load_before="$(cut -d' ' -f1 /proc/loadavg)"

# 1. sbatch from a shell loop.
start_cluster direct
mkdir -p "$tmp/direct-out"
printf '#!/bin/sh\nexec /bin/true\n' >"$tmp/true.sh"
chmod 0755 "$tmp/true.sh"
say "sbatch: $jobs jobs from a shell loop"
t0="$(now)"
for i in $(seq 1 "$jobs"); do
  sbatch --parsable --job-name="direct-$i" --output="$tmp/direct-out/%j.out" --no-requeue \
    --ntasks=1 "$tmp/true.sh" >/dev/null || die "sbatch of job $i failed"
done
t_submitted="$(now)"
while [ "$(unfinished)" -gt 0 ]; do sleep 0.2; done
t1="$(now)"
direct_done="$(in_state COMPLETED)"
[ "$direct_done" = "$jobs" ] || die "sbatch run: $direct_done of $jobs jobs COMPLETED"
sbatch_s="$(calc "$t1 - $t0")"
sbatch_submit_s="$(calc "$t_submitted - $t0")"
stop_cluster
say "sbatch: $(printf '%.2f' "$sbatch_s") s (submitting: $(printf '%.2f' "$sbatch_submit_s") s)"

# 2. The same through Kite.
start_cluster kite
home="$tmp/home"
mkdir -p "$home" "$tmp/work"
kite_env=("KITE_HOME=$home" "X509_USER_PROXY=$tmp/x509up" "X509_CERT_DIR=$home/ca/certificates"
          "SLURM_CONF=$SLURM_CONF")
k() { env "${kite_env[@]}" "$bindir/kite" "$@"; }
up="$(cd "$tmp/work" && k testgrid up --batch slurm)" || die "kite testgrid up --batch slurm failed"
resource="$(grep -o 'grid_resource = kite [^ ]*' <<<"$up")" || die "no grid_resource in: $up"
k agent start >/dev/null || die "kite agent start failed"
sub() {
  printf 'universe = grid\n%s\nexecutable = /bin/true\ntransfer_executable = false\nqueue %s\n' \
    "$resource" "$1" >"$tmp/work/job.sub"
  (cd "$tmp/work" && k submit job.sub) | grep -o 'cluster [0-9]*' | cut -d' ' -f2
}
# One job first: the gridmanager starts and delegates, the job manager starts (as in bench/grid).
warm="$(sub 1)"
k wait --timeout 300 "$warm" >/dev/null || die "the warm-up job did not finish"
say "kite: $jobs jobs in one cluster through $resource"
t0="$(now)"
c="$(sub "$jobs")"
[ -n "$c" ] || die "kite submit failed"
k wait --timeout 3600 "$c" >/dev/null || die "kite wait $c failed"
t1="$(now)"
kite_s="$(calc "$t1 - $t0")"
kite_done="$(k history -constraint "ClusterId == $c && JobStatus == 4 && ExitCode == 0" \
  -limit "$((jobs + 1))" | grep -cE '^\s*[0-9]+\.[0-9]+\s')" || true
[ "$kite_done" = "$jobs" ] || die "kite run: $kite_done of $jobs jobs Completed with exit code 0"
slurm_done="$(in_state COMPLETED)"
[ "$slurm_done" = "$((jobs + 1))" ] || die "kite run: Slurm has $slurm_done COMPLETED jobs, not $((jobs + 1))"
say "kite: $(printf '%.2f' "$kite_s") s"

ratio="$(calc "$kite_s / $sbatch_s")"
model="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
slurm_version="$(sbatch --version | head -n 1)"
mkdir -p "$(dirname "$out")"
cat >"$out" <<EOF
# Slurm: Kite in front of sbatch

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- machine: $(nproc) cores, ${model:-unknown CPU}, Linux $(uname -r); load average before: $load_before
- Slurm: $slurm_version, private single-node cluster from tests/fixtures/slurm/start-slurm.sh
  ($cpus CPUs on the node, \`batch_sched_delay=0,sched_min_interval=0\`), a fresh one for each run
- run: \`bench/slurm/run.sh$quick\` (jobs: $jobs), Kite from \`${bindir#"$root"/}\`

Workload: $jobs trivial jobs (\`/bin/true\`), timed from the first submission until all have
finished.

| | jobs | wall time | jobs/s |
| --- | ---: | ---: | ---: |
| \`sbatch\` from a shell loop, until squeue shows none unfinished (submitting alone: $(printf '%.1f' "$sbatch_submit_s") s) | $jobs | $(printf '%.2f' "$sbatch_s") s | $(printf '%.1f' "$(calc "$jobs / $sbatch_s")") |
| Kite: \`kite submit\` of one $jobs-job grid cluster to \`kite testgrid up --batch slurm\`, until \`kite wait\` returns (agent, gridmanager, gatekeeper, job manager, sbatch, one squeue a second) | $jobs | $(printf '%.2f' "$kite_s") s | $(printf '%.1f' "$(calc "$jobs / $kite_s")") |

Kite / sbatch wall time: **$(printf '%.2f' "$ratio")×**.

Both runs end when Slurm has run every job; Kite's also includes two-phase commit, delegation of
the proxy (once), the job manager's own sbatch per job, its squeue once per poll interval (1 s) to
see the ends, the callbacks to the gridmanager, commit-end and the agent's queue updates.
EOF
cat "$out"
echo "SLURM jobs=$jobs sbatch_seconds=$(printf '%.2f' "$sbatch_s") kite_seconds=$(printf '%.2f' "$kite_s") ratio=$(printf '%.2f' "$ratio")"
