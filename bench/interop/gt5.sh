#!/usr/bin/env bash
# bench/interop/gt5.sh - Kite's GRAM5 grid type beside Globus's own command line tools and beside
# Kite's own gatekeeper, in the same run on the same machine: a real globus-gatekeeper with
# globus-gram-job-manager and the fork LRM (Debian 12, tests/fixtures/gt5/start-gatekeeper.sh),
# inside a network namespace of its own (the gatekeeper listens on every address).
#   kite gt5:   `grid_resource = gt5 localhost:2119/jobmanager-fork`, kite submit / kite wait
#               (agent, gridmanager, kite-gt5-helper; two-phase commit, stdout and stderr staged
#               back to the helper's file server)
#   globus:     globus-job-submit of each job in sequence (what a GRAM user scripts; stdout and
#               stderr kept at the site), then globus-job-status of each until all are DONE
#   kite kite:  `grid_resource = kite ...` to Kite's own gatekeeper (`kite testgrid up`, fork)
# Every side runs /bin/true at the site, N jobs in one go (throughput: first submit until all are
# done) and M single jobs one after the other (latency: submit until done, median).
#
# Usage (as root, Debian 12):
#   bench/interop/gt5.sh [BIN_DIR] [--quick | --jobs N] [--latency-runs M]
#   BIN_DIR   kite, kite-agent, kite-gridmanager, kite-gt5-helper (default build-release/bin,
#             else build/bin)
#   --jobs N  jobs in each throughput run (default 100); --quick: 30
#   --keep    keep the temporary directory (logs of the gatekeeper, job managers and Kite)
#
# Writes bench/results/interop-gt5.md (overwritten) and ends with one line for other scripts:
#   INTEROP_GT5 jobs=N kite_seconds=K globus_seconds=G kite_own_seconds=O
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/bench/results/interop-gt5.md"
jobs=100
latency_runs=3
bindir=""
keep=""
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) jobs=30 ;;
    --jobs) jobs="$2"; shift ;;
    --latency-runs) latency_runs="$2"; shift ;;
    --keep) keep=1 ;;
    -*) echo "gt5.sh: ignoring option $1" >&2 ;;
    *) bindir="$1" ;;
  esac
  shift
done
[ -n "$bindir" ] || { [ -x "$root/build-release/bin/kite" ] && bindir="$root/build-release/bin" || bindir="$root/build/bin"; }
bindir="$(cd "$bindir" && pwd)"
[ -x "$bindir/kite-gt5-helper" ] || { echo "gt5.sh: no kite-gt5-helper in $bindir" >&2; exit 1; }

# Into a network namespace with only lo, once.
if [ -z "${KITE_GT5_BENCH_NETNS:-}" ]; then
  exec env KITE_GT5_BENCH_NETNS=1 unshare --net -- "$0" "${args[@]}"
fi
ip link set lo up

say() { echo "gt5.sh: $*" >&2; }
die() { say "$*"; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

tmp="$(mktemp -d /tmp/kite-gt5-bench.XXXXXX)"
chmod 0755 "$tmp"
cleanup() {
  for h in "$tmp"/kite-*/home; do [ -d "$h" ] && KITE_HOME="$h" "$bindir/kite" agent stop >/dev/null 2>&1 || true; done
  [ -d "$tmp/own/home" ] && KITE_HOME="$tmp/own/home" "$bindir/kite" testgrid down >/dev/null 2>&1 || true
  pkill -KILL -f "kite-gt5-helper $tmp" 2>/dev/null || true
  "$root/tests/fixtures/gt5/stop-gatekeeper.sh" "$tmp/gk" >/dev/null 2>&1 || true
  if [ -n "$keep" ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# Credentials: a test CA, a host certificate for localhost, an RSA proxy (GRAM5 takes no other).
export KITE_HOME="$tmp/ca-home"
mkdir -p "$KITE_HOME"
"$bindir/kite" ca init --ca "$tmp/ca" >/dev/null
"$bindir/kite" ca issue-host --ca "$tmp/ca" --out "$tmp/host" localhost >/dev/null
"$bindir/kite" ca issue-user --ca "$tmp/ca" --out "$tmp/user" "CN=Bench User" >/dev/null
export X509_CERT_DIR="$tmp/ca/certificates" X509_USER_PROXY="$tmp/x509up"
"$bindir/kite" proxy init -q --bits 2048 --cert "$tmp/user/usercert.pem" --key "$tmp/user/userkey.pem" --out "$X509_USER_PROXY"
subject="$(openssl x509 -in "$tmp/user/usercert.pem" -noout -subject -nameopt compat | sed 's/^subject=//')"
contact="$(GT5_ALLOW_DNS="$subject" "$root/tests/fixtures/gt5/start-gatekeeper.sh" "$tmp/gk" "$tmp/ca" "$tmp/host")" ||
  die "the gatekeeper did not start"

# kite_side NAME GRID_RESOURCE: prints "THROUGHPUT_SECONDS LATENCY_MEDIAN".
kite_side() {
  local name=$1 resource=$2 base="$tmp/kite-$1" c t0 t1 lat=() i
  mkdir -p "$base/home" "$base/work"
  printf '[grid]\nprobe_interval = 1\n' >"$base/home/config.toml"
  k() { (cd "$base/work" && KITE_HOME="$base/home" "$bindir/kite" "$@"); }
  k agent start >"$base/agent.out" 2>&1 || die "kite agent start failed: $(cat "$base/agent.out")"
  sub() {
    printf '%s\n' "universe = grid" "grid_resource = $resource" "executable = /bin/true" \
      "transfer_executable = false" "output = $2.\$(Process).out" "error = $2.\$(Process).err" \
      "queue $1" >"$base/work/$2.sub"
    k submit "$2.sub" | grep -o 'cluster [0-9]*' | cut -d' ' -f2
  }
  c="$(sub 1 warm)"; k wait --timeout 300 "$c" >/dev/null || die "$name: the warm-up job did not finish"
  for i in $(seq 1 "$latency_runs"); do
    t0="$(now)"; c="$(sub 1 "one$i")"; k wait --timeout 300 "$c" >/dev/null || die "$name: single job failed"
    lat+=("$(secs "$t0" "$(now)")")
  done
  t0="$(now)"; c="$(sub "$jobs" many)"
  k wait --timeout 3600 "$c" >/dev/null || die "$name: $jobs jobs did not finish: $(k q -nobatch | tail -2)"
  t1="$(now)"
  local ok
  ok="$(k history -constraint "ClusterId == $c && JobStatus == 4 && ExitCode == 0" -limit "$((jobs + 1))" |
    grep -cE '^\s*[0-9]+\.[0-9]+\s')" || true
  [ "$ok" = "$jobs" ] || die "$name: $ok of $jobs jobs completed with exit code 0 (cluster '$c')"
  k agent stop >/dev/null 2>&1 || true
  echo "$(secs "$t0" "$t1") $(echo "${lat[*]}" | median)"
}

# The Globus tools: globus-job-submit each job (in sequence), then globus-job-status until DONE.
globus_side() {
  local t0 t1 ids=() id left i lat=() st
  for i in $(seq 1 "$latency_runs"); do
    t0="$(now)"
    id="$(globus-job-submit "$contact" /bin/true)" || die "globus-job-submit failed"
    until [ "$(globus-job-status "$id" 2>/dev/null)" = "DONE" ]; do sleep 0.2; done
    lat+=("$(secs "$t0" "$(now)")")
    globus-job-clean -f "$id" >/dev/null 2>&1 || true
  done
  t0="$(now)"
  for i in $(seq 1 "$jobs"); do
    ids+=("$(globus-job-submit "$contact" /bin/true)") || die "globus-job-submit $i failed"
  done
  left=("${ids[@]}")
  while [ ${#left[@]} -gt 0 ]; do
    local next=()
    for id in "${left[@]}"; do
      st="$(globus-job-status "$id" 2>/dev/null || echo UNKNOWN)"
      [ "$st" = "DONE" ] || { [ "$st" = "FAILED" ] && die "a Globus job failed"; next+=("$id"); }
    done
    left=("${next[@]+"${next[@]}"}")
    [ ${#left[@]} -gt 0 ] && sleep 1
  done
  t1="$(now)"
  for id in "${ids[@]}"; do globus-job-clean -f "$id" >/dev/null 2>&1 || true; done
  echo "$(secs "$t0" "$t1") $(echo "${lat[*]}" | median)"
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
say "Kite, gt5: $jobs jobs"
read -r k_t k_l < <(kite_side gt5 "gt5 $contact")
say "Globus tools: $jobs jobs"
read -r g_t g_l < <(globus_side)
say "Kite, its own gatekeeper: $jobs jobs"
mkdir -p "$tmp/own/home"
# Its own test CA and proxy (`kite testgrid up` makes both).
own="$(KITE_HOME="$tmp/own/home" X509_USER_PROXY="$tmp/own/x509up" "$bindir/kite" testgrid up 2>/dev/null |
  grep -o 'kite [^ ]*' | head -1)" || die "kite testgrid up failed"
[ -n "$own" ] || die "kite testgrid up named no resource"
read -r o_t o_l < <(X509_CERT_DIR="$tmp/own/home/ca/certificates" X509_USER_PROXY="$tmp/own/x509up" \
  kite_side own "$own")
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

rate() { awk -v n="$jobs" -v t="$1" 'BEGIN { printf "%.2f", n / t }'; }
mkdir -p "$(dirname "$out")"
cat >"$out" <<EOF
# GRAM5 interop: Kite beside Globus's tools and beside Kite's own gatekeeper

$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r); load average before $load_before,
after $load_after (the machine is shared). \`bench/interop/gt5.sh\`: $jobs \`/bin/true\` jobs at once
(first submit until all are done), and $latency_runs single jobs one after the other (median).
One globus-gatekeeper with the fork LRM and its scheduler event generator, in a network namespace
of its own; an RSA-2048 proxy.

| side | $jobs jobs | jobs/s | one job (median) |
| --- | --- | --- | --- |
| Kite, \`gt5\` (helper, two-phase commit, stdout and stderr staged back) | $k_t s | $(rate "$k_t") | $k_l s |
| Globus tools (\`globus-job-submit\` in sequence, \`globus-job-status\` until DONE; output left at the site) | $g_t s | $(rate "$g_t") | $g_l s |
| Kite, its own gatekeeper (\`kite\`, fork) | $o_t s | $(rate "$o_t") | $o_l s |

Ratios: Kite's gt5 against the Globus tools $(awk -v a="$g_t" -v b="$k_t" 'BEGIN { printf "%.1f", a / b }')x in
throughput; Kite's own gatekeeper against Kite's gt5 $(awk -v a="$k_t" -v b="$o_t" 'BEGIN { printf "%.1f", a / b }')x.
Every GRAM5 submit makes the gatekeeper generate an RSA key for the delegated proxy (about
0.37 CPU-s here): that bounds both GRAM5 sides near 5 jobs/s on two cores.
EOF
say "wrote $out"
echo "INTEROP_GT5 jobs=$jobs kite_seconds=$k_t globus_seconds=$g_t kite_own_seconds=$o_t"
