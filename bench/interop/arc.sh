#!/usr/bin/env bash
# bench/interop/arc.sh - Kite beside ARC's own command line client, in the same run, on the same
# kind of CE: a real A-REX 6.17 (Debian's nordugrid-arc-arex, tests/fixtures/arex/start-arex.sh)
# on loopback with the fork LRM, driven through its REST interface by
#   Kite: `grid_resource = arc https://localhost:PORT/arex`, kite submit / kite wait (agent,
#         gridmanager, the ARC site link: delegation once, one bulk status request per batch);
#   ARC:  arcsub + arcstat + arcget from nordugrid-arc-client with its REST plugin
#         (nordugrid-arc-plugins-arcrest), scripted the way an ARC user scripts them.
# Both sides run the same job: /bin/true at the site (not staged: Kite's
# transfer_executable = false, xRSL executable="/bin/true"), its stdout and stderr kept at the CE
# and fetched to the desktop, the job cleaned at the CE afterwards (arcget cleans by default;
# Kite cleans once the output is in). Measured per side:
#   latency     one job at a time, submit until its output files are on the desktop; median of M.
#               ARC: arcsub, `arcstat -a` every POLL s until Finished, arcget -a.
#               Kite: kite submit (queue 1), kite wait (Completed = output fetched).
#   throughput  N jobs at once, first submit until every output is on the desktop.
#               ARC: one arcsub call with N xRSL files, `arcstat -a` every POLL s until all are
#               Finished, then one arcget -a. Kite: one kite submit of `queue N`, kite wait.
# One warm-up job per side first (not measured). Each side gets a fresh CE (its own directory,
# port and job database) so neither sees the other's jobs or leftovers. Order: Kite then ARC;
# with --rounds 2 a second round runs ARC then Kite, and so on alternating.
#
# Usage (as root, Debian 12):
#   bench/interop/arc.sh [BIN_DIR | BIN_DIR/interop_bench] [--quick | --jobs N]
#                        [--latency-runs M] [--rounds R] [--poll S]
#   BIN_DIR           kite, kite-agent, kite-gridmanager (default build-release/bin, else build/bin);
#                     scripts/bench passes build-release/bin
#   --jobs N          jobs in the throughput run of each side (default 300); --quick: 100
#   --latency-runs M  single jobs one after the other per side (default 5)
#   --rounds R        rounds of both sides, the order alternating (default 1)
#   --keep            keep the temporary directory (logs of the CEs, Kite and the ARC client)
#   --poll S          seconds between the ARC script's arcstat calls (default 1, as Kite's
#                     probe_interval = 1 below)
#
# The CE's settings that bound the latency (start-arex.sh's defaults unless set in the environment):
# AREX_SCAN_PERIOD (fork LRM's scan for ended jobs, 1 s), AREX_INFO_PERIOD (the information
# provider's run, which is what refreshes the job states REST reports, 3 s); A-REX's own job loop
# wakes up every 2 s (wakeupperiod in the fixture's arc.conf) or on a state change.
#
# Writes bench/results/interop.md (overwritten) and ends with one line for other scripts:
#   INTEROP jobs=N kite_seconds=K arc_seconds=A kite_latency_ms=L arc_latency_ms=M
# (medians over the rounds). Installs nordugrid-arc-client and nordugrid-arc-plugins-arcrest when
# missing (they stay installed; scripts/deps lists them in scripts/deps.d/arc.txt). Everything
# else lives in one temporary directory: test CA, host and user certificates, proxy, the CEs, a
# KITE_HOME per side, the ARC client's HOME, client.conf and job list. On exit (also on error or
# Ctrl-C) it stops the agents and CEs it started (kite agent stop, stop-arex.sh) and removes it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/bench/results/interop.md"
fixture="$root/tests/fixtures/arex"

jobs=300
latency_runs=5
rounds=1
poll=1
quick=""
keep=""
bindir=""

die() { echo "arc-bench: error: $*" >&2; exit 1; }
say() { echo "arc-bench: $*" >&2; }
count() { if [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]]; then echo "$2"; else die "$1 needs a positive number"; fi; }

while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$(count "$@")"; shift 2 ;;
    --quick) jobs=100; quick=" --quick"; shift ;;
    --latency-runs) latency_runs="$(count "$@")"; shift 2 ;;
    --rounds) rounds="$(count "$@")"; shift 2 ;;
    --keep) keep=1; shift ;;
    --poll)
      if [ $# -lt 2 ] || ! [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then die "--poll needs a number of seconds"; fi
      poll="$2"; shift 2 ;;
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
for prog in kite kite-agent kite-gridmanager; do
  [ -x "$bindir/$prog" ] || die "no $prog in $bindir (build Kite first, or pass BIN_DIR)"
done
[ -x "$fixture/start-arex.sh" ] || die "missing $fixture/start-arex.sh"

# ---------------------------------------------------------------------------------------------
# 1. ARC's client and its REST plugin (A-REX itself comes through start-arex.sh / scripts/deps).
packages=(nordugrid-arc-client nordugrid-arc-plugins-arcrest)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]} (apt-get install them, or run as root)"
  say "installing: ${missing[*]}"
  apt-get update >/dev/null || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi
for cmd in arcsub arcstat arcget; do
  command -v "$cmd" >/dev/null || die "$cmd not found after installing ${packages[*]}"
done
[ -f /usr/lib/arc/libaccARCREST.so ] || die "ARC's REST client plugin (libaccARCREST.so) is missing"

# ---------------------------------------------------------------------------------------------
# 2. Temporary directory, credentials, clean-up.
tmp="$(mktemp -d /tmp/kite-arc-bench.XXXXXX)"
chmod 0755 "$tmp"   # the CE's account reaches the session directories under it
ce=""               # directory of the CE running now
ce_url=""
kite_env=()         # environment of the Kite side running now
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  if [ ${#kite_env[@]} -gt 0 ]; then
    env "${kite_env[@]}" "$bindir/kite" agent stop --stop-startd >/dev/null 2>&1
  fi
  [ -n "$ce" ] && "$fixture/stop-arex.sh" "$ce" >/dev/null 2>&1
  if [ -n "$keep" ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export X509_CERT_DIR="$tmp/ca/certificates"
export X509_USER_PROXY="$tmp/x509up"
unset X509_USER_CERT X509_USER_KEY
kite() { "$bindir/kite" "$@"; }
if ! { KITE_HOME="$tmp/ca-home" kite ca init --ca "$tmp/ca" &&
        KITE_HOME="$tmp/ca-home" kite ca issue-host --ca "$tmp/ca" --out "$tmp/host" localhost &&
        KITE_HOME="$tmp/ca-home" kite ca issue-user --ca "$tmp/ca" --out "$tmp/user" "CN=Kite Bench User"
      } >"$tmp/ca.log" 2>&1; then
  cat "$tmp/ca.log" >&2
  die "kite ca could not make the test CA and certificates"
fi
KITE_HOME="$tmp/ca-home" kite proxy init -q --cert "$tmp/user/usercert.pem" --key "$tmp/user/userkey.pem" \
  --out "$X509_USER_PROXY" >"$tmp/proxy.log" 2>&1 || { cat "$tmp/proxy.log" >&2; die "kite proxy init failed"; }

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1;
  if (NR % 2) printf "%.6g", v[(NR + 1) / 2]; else printf "%.6g", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# start_ce NAME: a fresh CE under $tmp/NAME; sets $ce (its directory) and $ce_url.
start_ce() {
  ce="$tmp/$1"
  ce_url="$(AREX_PROBE_CRED="$X509_USER_PROXY" "$fixture/start-arex.sh" "$ce" "$tmp/ca" "$tmp/host" 2>"$tmp/$1.start.err")" \
    || { cat "$tmp/$1.start.err" >&2; die "the ARC CE did not start"; }
}
stop_ce() {
  [ -n "$ce" ] && "$fixture/stop-arex.sh" "$ce" >/dev/null 2>&1
  ce=""
}
# ce_span SKIP: from the CE's job log (whole seconds: A-REX writes them so), for the jobs after its
# first SKIP lines: "IN/DONE", seconds from the first job accepted to the last accepted / finished.
ce_span() {
  tail -n +"$(($1 + 1))" "$ce/log/arex-jobs.log" | awk '
    { t = $1 " " $2; gsub(/[-:]/, " ", t); s = mktime(t) }
    first == "" { first = s } / Started - / { lastin = s } / Finished - / { last = s }
    END { if (first != "" && last != "") print lastin - first "/" last - first; else print "?" }'
}
# ce_requests SKIP: the REST requests the CE served after the first SKIP lines of its log, by kind
# ("jobs?action=new=300;..."; ids become ID, a session file's name stays).
ce_requests() {
  tail -n +"$(($1 + 1))" "$ce/log/arex.log" | awk '/Operation on path "/ { print $NF }' |
    sed -E 's#^"/arex/rest/1\.0/##; s/"$//; s/[A-Za-z0-9]{12,}/ID/g' | sort | uniq -c |
    awk '{ printf "%s%s=%s", sep, $2, $1; sep = ";" } END { if (NR == 0) printf "none" }'
}
ce_log_lines() { if [ -f "$ce/log/arex.log" ]; then wc -l <"$ce/log/arex.log"; else echo 0; fi; }
ce_lines() { if [ -f "$ce/log/arex-jobs.log" ]; then wc -l <"$ce/log/arex-jobs.log"; else echo 0; fi; }

# Results, one line per measured side and round:
#   SIDE ROUND LAT_MEDIAN_MS LAT_LIST SECONDS SUBMIT_SECONDS CE_SPAN LOAD EXTRA
results="$tmp/results"
: >"$results"
# The CE's REST requests during each throughput run: SIDE ROUND KIND=COUNT;...
requests="$tmp/requests"
: >"$requests"

# ---------------------------------------------------------------------------------------------
# 3. Kite.
run_kite() {
  local round=$1 url base k_home work c t0 t1 tsub lat=() i n done_ok files skip skip_log span load
  start_ce "kite-ce-$round"
  url="$ce_url"
  base="$tmp/kite-$round"
  k_home="$base/home"
  work="$base/work"
  mkdir -p "$k_home" "$work"
  printf '[grid]\nprobe_interval = 1\n' >"$k_home/config.toml"
  kite_env=("KITE_HOME=$k_home" "X509_USER_PROXY=$X509_USER_PROXY" "X509_CERT_DIR=$X509_CERT_DIR")
  k() { (cd "$work" && env "${kite_env[@]}" "$bindir/kite" "$@"); }
  k agent start >"$base/agent.out" 2>&1 || { cat "$base/agent.out" >&2; die "kite agent start failed"; }
  # sub N TAG: submits N jobs whose outputs go to $work/TAG.<process>.out|err; prints the cluster.
  sub() {
    printf '%s\n' "universe = grid" "grid_resource = arc $url" "executable = /bin/true" \
      "transfer_executable = false" "output = $2.\$(Process).out" "error = $2.\$(Process).err" \
      "queue $1" >"$work/$2.sub"
    k submit "$2.sub" | grep -o 'cluster [0-9]*' | cut -d' ' -f2
  }
  # One job first: the gridmanager starts and delegates once to the CE.
  c="$(sub 1 warm)"
  [ -n "$c" ] || die "kite submit failed"
  k wait --timeout 300 "$c" >/dev/null || die "the Kite warm-up job did not finish: $(k q -nobatch 2>&1 | tail -3)"
  say "round $round, Kite: $latency_runs single jobs"
  for i in $(seq 1 "$latency_runs"); do
    t0="$(now)"
    c="$(sub 1 "single$i")"
    [ -n "$c" ] || die "kite submit failed"
    k wait --timeout 300 "$c" >/dev/null || die "Kite single job $i did not finish"
    t1="$(now)"
    if [ ! -f "$work/single$i.0.out" ] || [ ! -f "$work/single$i.0.err" ]; then
      die "Kite single job $i: output not on the desktop"
    fi
    lat+=("$(ms "$t0" "$t1")")
  done
  skip="$(ce_lines)"
  skip_log="$(ce_log_lines)"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  say "round $round, Kite: $jobs jobs in one cluster"
  t0="$(now)"
  c="$(sub "$jobs" many)"
  tsub="$(now)"
  [ -n "$c" ] || die "kite submit of $jobs jobs failed"
  k wait --timeout 3600 "$c" >/dev/null || die "kite wait $c failed: $(k q -nobatch 2>&1 | tail -3)"
  t1="$(now)"
  span="$(ce_span "$skip")"
  echo "kite $round $(ce_requests "$skip_log")" >>"$requests"
  done_ok="$(k history -constraint "ClusterId == $c && JobStatus == 4 && ExitCode == 0" \
    -limit "$((jobs + 1))" | grep -cE '^\s*[0-9]+\.[0-9]+\s')" || true
  [ "$done_ok" = "$jobs" ] || die "Kite: $done_ok of $jobs jobs Completed with exit code 0"
  files="$(find "$work" -maxdepth 1 \( -name 'many.*.out' -o -name 'many.*.err' \) | wc -l)"
  [ "$files" = "$((2 * jobs))" ] || die "Kite: $files of $((2 * jobs)) output files on the desktop"
  n="$(calc "$t1 - $t0")"
  say "round $round, Kite: $(printf '%.1f' "$n") s, single-job median $(printf '%s\n' "${lat[@]}" | median) ms"
  echo "kite $round $(printf '%s\n' "${lat[@]}" | median) $(IFS=,; echo "${lat[*]}") $n $(calc "$tsub - $t0") $span $load -" >>"$results"
  k agent stop --stop-startd >/dev/null 2>&1 || true
  kite_env=()
  stop_ce
}

# ---------------------------------------------------------------------------------------------
# 4. ARC's client. Its configuration: a client.conf naming the proxy, the CA directory and a job
# list under $tmp, and HOME under $tmp (it keeps ~/.arc); -C the CE's URL, -T arcrest.
run_arc() {
  local round=$1 url base conf t0 t1 tsub lat=() i files=() n got span skip skip_log stat polls load
  start_ce "arc-ce-$round"
  url="$ce_url"
  base="$tmp/arc-$round"
  mkdir -p "$base/home" "$base/xrsl" "$base/out"
  conf="$base/client.conf"
  printf '%s\n' "[common]" "proxypath=$X509_USER_PROXY" "cacertificatesdirectory=$X509_CERT_DIR" \
    "joblist=$base/jobs.dat" "timeout=60" >"$conf"
  printf '&(executable="/bin/true")(jobname="kite-bench")(stdout="out.txt")(stderr="err.txt")\n' \
    >"$base/job.xrsl"
  a() { local cmd=$1; shift; (cd "$base" && HOME="$base/home" "$cmd" -z "$conf" "$@"); }
  # wait_finished N: arcstat -a every $poll s until N jobs are Finished; dies on a failed one.
  # Prints the number of arcstat calls.
  wait_finished() {
    local want=$1 fin bad calls=0
    while true; do
      calls=$((calls + 1))
      stat="$(a arcstat -a 2>&1)" || true
      fin="$(grep -c '^ State: Finished' <<<"$stat")" || true
      bad="$(grep -cE '^ State: (Failed|Killed|Deleted)' <<<"$stat")" || true
      [ "$bad" = 0 ] || { grep -B2 -A3 -E 'State: (Failed|Killed|Deleted)' <<<"$stat" | head -20 >&2; die "ARC: $bad job(s) did not finish"; }
      [ "$fin" -ge "$want" ] && break
      sleep "$poll"
    done
    echo "$calls"
  }
  # get N: arcget -a into $base/out; dies unless N were retrieved and cleaned.
  get() {
    local r
    r="$(a arcget -a -D "$base/out" 2>&1)" || true
    grep -q "Jobs processed: $1, successfully retrieved: $1, successfully cleaned: $1" <<<"$r" \
      || { echo "$r" | tail -5 >&2; die "arcget did not retrieve and clean all $1 jobs"; }
  }
  # submit FILES...: one arcsub call; dies unless all were submitted.
  submit() {
    local r
    r="$(a arcsub -C "$url" -T arcrest "$@" 2>&1)" || true
    # One job: only its id is printed; several: a summary "N of N jobs were submitted" too.
    [ "$(grep -c '^Job submitted with jobid' <<<"$r")" = "$#" ] \
      || { echo "$r" | tail -8 >&2; die "arcsub of $# job(s) failed"; }
  }
  outputs() { find "$base/out" -mindepth 2 -maxdepth 2 \( -name out.txt -o -name err.txt \) | wc -l; }

  submit "$base/job.xrsl"   # warm-up
  wait_finished 1 >/dev/null
  get 1
  say "round $round, ARC: $latency_runs single jobs"
  for i in $(seq 1 "$latency_runs"); do
    rm -rf "$base/out"; mkdir -p "$base/out"
    t0="$(now)"
    submit "$base/job.xrsl"
    wait_finished 1 >/dev/null
    get 1
    t1="$(now)"
    [ "$(outputs)" = 2 ] || die "ARC single job $i: output not on the desktop"
    lat+=("$(ms "$t0" "$t1")")
  done
  rm -rf "$base/out"; mkdir -p "$base/out"
  for i in $(seq 1 "$jobs"); do
    cp "$base/job.xrsl" "$base/xrsl/job$i.xrsl"
    files+=("$base/xrsl/job$i.xrsl")
  done
  skip="$(ce_lines)"
  skip_log="$(ce_log_lines)"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  say "round $round, ARC: $jobs jobs in one arcsub"
  t0="$(now)"
  submit "${files[@]}"
  tsub="$(now)"
  polls="$(wait_finished "$jobs")"
  got="$(now)"
  get "$jobs"
  t1="$(now)"
  span="$(ce_span "$skip")"
  echo "arc $round $(ce_requests "$skip_log")" >>"$requests"
  [ "$(outputs)" = "$((2 * jobs))" ] || die "ARC: $(outputs) of $((2 * jobs)) output files on the desktop"
  n="$(calc "$t1 - $t0")"
  say "round $round, ARC: $(printf '%.1f' "$n") s, single-job median $(printf '%s\n' "${lat[@]}" | median) ms"
  echo "arc $round $(printf '%s\n' "${lat[@]}" | median) $(IFS=,; echo "${lat[*]}") $n $(calc "$tsub - $t0") $span $load arcstat_calls=$polls,arcget_s=$(calc "$t1 - $got")" >>"$results"
  stop_ce
}

# ---------------------------------------------------------------------------------------------
# 5. Report, rewritten after every round (report ROUNDS_DONE): a run stopped later keeps its figures.
# busy: processes using 5% of a CPU or more over one second (top's second frame), with their user.
busy() {
  top -b -n 2 -d 1 -w 200 | awk '/^top -/ { n++ }
    n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 { printf "%s%s (%s, %s%%)", sep, $12, $2, $9; sep = ", " }'
}
report() {
  local done_rounds=$1 side round lmed llist secs subs span load extra who calls rows="" model
  local load_after others_after
  load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
  others_after="$(busy)"
  field() { awk -v s="$1" -v f="$2" '$1 == s { print $f }' "$results"; }
  kite_s="$(field kite 5 | median)"
  arc_s="$(field arc 5 | median)"
  kite_lat="$(field kite 3 | median)"
  arc_lat="$(field arc 3 | median)"
  model="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
  while read -r side round lmed llist secs subs span load extra; do
    if [ "$side" = kite ]; then
      who="Kite: one \`kite submit\` (\`queue $jobs\`), \`kite wait\`"
    else
      calls="${extra#arcstat_calls=}"; calls="${calls%%,*}"
      who="ARC: one \`arcsub\` of $jobs xRSL files, \`arcstat -a\` every ${poll} s ($calls calls), \`arcget -a\` ($(printf '%.1f' "${extra##*arcget_s=}") s)"
    fi
    rows+="| $round | $who | $load | $(printf '%.1f' "$subs") s | ${span} s | $(printf '%.1f' "$secs") s | $(printf '%.2f' "$(calc "$jobs / $secs")") | $lmed ms (${llist//,/, }) |"$'\n'
  done <"$results"
  local reqrows="" kinds total
  while read -r side round kinds; do
    total="$(tr ';' '\n' <<<"$kinds" | awk -F= '{ n += $NF } END { print n + 0 }')"
    reqrows+="| $round | $side | $total ($(calc "$total / $jobs" | xargs printf '%.1f') per job) | ${kinds//;/, } |"$'\n'
  done <"$requests"
  mkdir -p "$(dirname "$out")"
cat >"$out" <<EOF
# Kite beside ARC's own client, on a local A-REX (bench/interop/arc.sh)

- date: $started
- machine: $(nproc) cores (\`nproc\`), ${model:-unknown CPU}, Linux $(uname -r), Debian $(cat /etc/debian_version 2>/dev/null || echo '?')
- load average before / after: $load_before / $load_after; processes using ≥ 5% of a CPU just before it started: ${others:-none}; just after the last round (its own CEs stopped): ${others_after:-none}; 1-minute load when each throughput run started: see the table
- run: \`bench/interop/arc.sh$quick --jobs $jobs --latency-runs $latency_runs --rounds $rounds --poll $poll\`, Kite from \`${bindir#"$root"/}\`; rounds done: $done_rounds of $rounds
- CE: A-REX $(ver nordugrid-arc-arex) (Debian's nordugrid-arc-arex), fork LRM, from tests/fixtures/arex/start-arex.sh
  on loopback, a fresh one for each side of each round; AREX_SCAN_PERIOD=${AREX_SCAN_PERIOD:-1} s (fork LRM's
  scan for ended jobs), AREX_INFO_PERIOD=${AREX_INFO_PERIOD:-3} s (information provider: refreshes the job
  states REST reports), A-REX job loop wakeupperiod 2 s
- ARC client: nordugrid-arc-client $(ver nordugrid-arc-client) with nordugrid-arc-plugins-arcrest $(ver nordugrid-arc-plugins-arcrest);
  \`-C https://localhost:PORT/arex -T arcrest\`, client.conf with proxypath, cacertificatesdirectory, joblist, timeout=60, HOME in the bench's directory
- Kite: KITE_HOME with \`[grid] probe_interval = 1\` (a job not heard of for 1 s is probed; probes that gather go as one bulk status request)
- credentials: \`kite ca\` test CA, host certificate for localhost, one RFC 3820 proxy (\`kite proxy init\`) used by both sides

Job on both sides: \`/bin/true\` at the site (not staged), stdout and stderr kept at the CE and
fetched to the desktop (two empty files per job), the job cleaned at the CE afterwards. Latency:
one job at a time, from submit until its output files are on the desktop, after one warm-up job.
Throughput: $jobs jobs at once, from the first submit until every output is on the desktop.

| round | side | 1-min load at start | submit command returned after | CE's job log: last job in / last finished, s after the first was in | wall time, $jobs jobs | jobs/s | single-job latency, median (each) |
| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |
${rows%$'\n'}

Medians over the rounds: Kite $(printf '%.1f' "$kite_s") s = **$(printf '%.2f' "$(calc "$jobs / $kite_s")") jobs/s**, ARC's client $(printf '%.1f' "$arc_s") s = **$(printf '%.2f' "$(calc "$jobs / $arc_s")") jobs/s**:
Kite / ARC throughput **$(printf '%.2f' "$(calc "$arc_s / $kite_s")")×**. Single-job latency: Kite **$kite_lat ms**, ARC's client **$arc_lat ms**
(ARC / Kite $(printf '%.2f' "$(calc "$arc_lat / $kite_lat")")×).

REST requests the CE served during each throughput run (its log, \`Operation on path\`; ID is a
job or delegation id; \`session/F\` a GET of output file F, \`jobs/ID/session\` ARC's PROPFIND
listing):

| round | side | requests | by kind |
| ---: | --- | ---: | --- |
${reqrows%$'\n'}

Reading. The single-job latency is the CE's on both sides: A-REX takes a new job into its loop,
hands it to the fork LRM, whose scan sees it end within AREX_SCAN_PERIOD; the state the REST
interface reports changes only when the information provider next rewrites the job's record
(every AREX_INFO_PERIOD, plus its own run, longer when the machine is busy); a client sees the end
at its next status request after that (Kite: a probe of a job not heard of for 1 s; the script:
\`arcstat -a\` every ${poll} s), then fetches the output. \`/bin/true\` itself takes no time, so
a few seconds is the floor on this CE whatever the client. Throughput differs in the client's
requests (table above): \`arcsub\` delegates afresh for every job (\`delegations?action=new\`,
for which A-REX makes a new key pair, then a PUT of the signed proxy) and sends the job on a new
TLS connection, one job after another, so the CE accepts about one job per \`arcsub\` round trip
of three requests and two handshakes; Kite delegates once per CE and sends each job with one
\`jobs?action=new\` over kept-alive connections. \`arcstat -a\` is one bulk \`action=info\`
per call; Kite sends the probes that gather as one bulk \`action=status\`. At the end \`arcget\`
lists each job's session twice (PROPFIND), GETs each file and cleans each job, one job after
another; Kite reads each job's diag (its exit code), GETs each file and cleans it, also one job
after another, which is what Kite's wall time beyond the CE's "last finished" is. The CE's own
fork LRM (a shell script per job submission) loads both cores while hundreds of jobs arrive; the
machine may be shared with other work (see the load column): compare figures of the same run.
EOF
}

# ---------------------------------------------------------------------------------------------
# 6. The rounds, the order alternating.
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
others="$(busy)"
started="$(date -u '+%Y-%m-%d %H:%M UTC')"
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then run_kite "$round"; run_arc "$round"; else run_arc "$round"; run_kite "$round"; fi
  report "$round"
done
cat "$out"
echo "INTEROP jobs=$jobs kite_seconds=$(printf '%.2f' "$kite_s") arc_seconds=$(printf '%.2f' "$arc_s") kite_latency_ms=$kite_lat arc_latency_ms=$arc_lat"
