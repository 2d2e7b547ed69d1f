#!/usr/bin/env bash
# bench/gram5/run.sh - the real Globus GRAM5 stack (Debian's Grid Community Toolkit packages) on
# this machine, measured with the workload of bench/gram: N jobs of /bin/true through a
# gatekeeper and the fork job manager, each with two-phase commit (two_phase in the RSL,
# COMMIT_REQUEST, DONE callback, COMMIT_END), from 8 client threads on libglobus-gram-client
# (bench/gram5/gram5_client.c), plus the median submit-to-DONE time of single jobs.
#
# Usage (as root, Debian 12):  bench/gram5/run.sh [--jobs N | --quick] [--threads T] [--latency-runs M]
#   --jobs N          jobs in the throughput run (default 1000)
#   --quick           same as --jobs 100
#   --threads T       client threads submitting and ending jobs (default 8)
#   --latency-runs M  single jobs run one after the other for the median latency (default 10)
#
# Writes bench/results/gram5.md (overwritten) and ends with one line for other scripts:
#   GRAM5 jobs=N seconds=S jobs_per_s=R median_latency_ms=L
#
# What it changes on the machine, and for how long:
# - apt-get installs the packages below if they are missing (they stay installed);
# - everything else lives in one temporary directory: test CA, host and user certificates, proxy,
#   grid-mapfile, gatekeeper and job manager configuration, state files, logs. Nothing is written
#   to /etc/grid-security or /etc/grid-services;
# - the gatekeeper runs each request (and the job manager) as the local account the grid-mapfile
#   names; as at a real site that is an ordinary account, so a throwaway system account (home in
#   the temporary directory) is created with useradd and removed with userdel on exit;
# - the gatekeeper listens on every interface and cannot be bound to one address, so it runs in a
#   private network namespace that has only loopback (unshare --net); without one it falls back
#   to the host's namespace on a free port and says so.
# On exit (also on error or Ctrl-C) it stops, by PID, the gatekeeper, the job manager and any
# other process of the throwaway account, then the namespace holder, and removes the directory.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/bench/results/gram5.md"

jobs=1000
threads=8
latency_runs=10

die() { echo "gram5: error: $*" >&2; exit 1; }
say() { echo "gram5: $*" >&2; }
# count OPTION ARGS...: prints the option's value if it is a positive whole number, else dies
count() { if [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]]; then echo "$2"; else die "$1 needs a positive number"; fi; }

while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$(count "$@")"; shift 2 ;;
    --quick) jobs=100; shift ;;
    --threads) threads="$(count "$@")"; shift 2 ;;
    --latency-runs) latency_runs="$(count "$@")"; shift 2 ;;
    */gram5_bench) shift ;;   # scripts/bench hands every run.sh a binary path; this one needs none
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
done

[ "$(id -u)" = 0 ] || die "run as root: it installs packages, creates a throwaway account and starts a gatekeeper that switches to it"
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  die "needs a Debian system (apt-get, dpkg-query)"
fi
[ -r "$here/gram5_client.c" ] || die "missing $here/gram5_client.c"

# ---------------------------------------------------------------------------------------------
# 1. Packages. The gatekeeper, the job manager and its fork back end (+ the polling set-up the
# reference used; its /etc/grid-services entry is not used, we write our own services directory),
# the command line clients (globusrun for the readiness check, globus-job-run for one sanity job),
# grid-proxy-init, and the GRAM client library headers plus a C compiler for gram5_client.c.
packages=(globus-gatekeeper globus-gram-job-manager globus-gram-job-manager-fork
          globus-gram-job-manager-fork-setup-poll globus-gram-client-tools globus-proxy-utils
          libglobus-gram-client-dev gcc libc6-dev pkg-config openssl iproute2 procps util-linux passwd)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing: ${missing[*]}"
  apt-get update >/dev/null || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi
for cmd in globus-gatekeeper globus-job-manager globusrun globus-job-run grid-proxy-init grid-proxy-info \
           gcc pkg-config openssl ip ss useradd userdel pgrep; do
  command -v "$cmd" >/dev/null || die "$cmd not found after installing packages"
done

# ---------------------------------------------------------------------------------------------
# 2. Temporary directory, throwaway account, and the clean-up that undoes both.
tmp="$(mktemp -d /tmp/kite-gram5.XXXXXX)"
chmod 755 "$tmp"   # the mapped account must reach its home, the CA directory and the configuration
account=""
gatekeeper_pid=""
holder_pid=""
client_pid=""

stop_pid() {   # stop_pid PID: TERM, wait up to 3 s, then KILL
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for _ in 1 2 3 4 5 6; do
    kill -0 "$pid" 2>/dev/null || return 0
    [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] && return 0
    sleep 0.5
  done
  kill -9 "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$? pid
  set +e
  trap - EXIT INT TERM
  [ -n "$client_pid" ] && stop_pid "$client_pid"
  [ -n "$gatekeeper_pid" ] && stop_pid "$gatekeeper_pid"
  if [ -n "$account" ] && id "$account" >/dev/null 2>&1; then
    # The resident job manager (its PID file is under the account's home) and anything else the
    # gatekeeper started as this account, which exists only for this run.
    for pid in $(cat "$tmp"/home/.globus/job/*/*.pid 2>/dev/null) $(pgrep -u "$account"); do
      stop_pid "$pid"
    done
    # -f: finished gatekeeper children can linger as zombies owned by the account (nothing reaps
    # them on some machines); they hold no resources but would make a plain userdel refuse.
    userdel -f "$account" 2>/dev/null || say "warning: could not remove account $account"
  fi
  [ -n "$holder_pid" ] && stop_pid "$holder_pid"
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

account="kgram5_$$"
useradd --system --no-create-home --home-dir "$tmp/home" --shell /bin/sh \
  --comment "Kite GRAM5 benchmark, temporary" --user-group "$account" \
  || { account=""; die "useradd $account failed"; }
mkdir -p "$tmp"/{ca,host,user,certificates,services,log,home,state}
chown "$account:$account" "$tmp/home" "$tmp/state" "$tmp/log"

# ---------------------------------------------------------------------------------------------
# 3. Test CA, host certificate (CN=localhost with a matching subjectAltName: Globus checks host
# names the RFC 2818 way), user certificate, and a trust directory in Globus' layout: the CA
# certificate under its subject hash plus a signing policy that lets it sign our names.
cat > "$tmp/ca/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
[dn]
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[host_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[user_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment, dataEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
ca_dn="/O=Kite-Bench/OU=GRAM5/CN=Kite GRAM5 test CA"
host_dn="/O=Kite-Bench/OU=GRAM5/CN=localhost"
user_dn="/O=Kite-Bench/OU=GRAM5/CN=Kite GRAM5 bench user"
cnf="$tmp/ca/openssl.cnf"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "$ca_dn" -config "$cnf" -extensions ca_ext \
  -keyout "$tmp/ca/key.pem" -out "$tmp/ca/cert.pem" 2>"$tmp/log/openssl.err" \
  || { cat "$tmp/log/openssl.err" >&2; die "openssl could not make the test CA"; }
serial=1
for who in host user; do
  if [ "$who" = host ]; then dn="$host_dn"; else dn="$user_dn"; fi
  if ! openssl req -new -newkey rsa:2048 -nodes -subj "$dn" -config "$cnf" \
         -keyout "$tmp/$who/key.pem" -out "$tmp/$who/req.pem" 2>"$tmp/log/openssl.err" \
     || ! openssl x509 -req -in "$tmp/$who/req.pem" -CA "$tmp/ca/cert.pem" -CAkey "$tmp/ca/key.pem" \
         -set_serial "$serial" -days 2 -extfile "$cnf" -extensions "${who}_ext" \
         -out "$tmp/$who/cert.pem" 2>"$tmp/log/openssl.err"; then
    cat "$tmp/log/openssl.err" >&2
    die "openssl could not make the $who certificate"
  fi
  serial=$((serial + 1))
done
chmod 400 "$tmp"/host/key.pem "$tmp"/user/key.pem
hash="$(openssl x509 -noout -hash -in "$tmp/ca/cert.pem")"
cp "$tmp/ca/cert.pem" "$tmp/certificates/$hash.0"
cat > "$tmp/certificates/$hash.signing_policy" <<EOF
access_id_CA   X509    '$ca_dn'
pos_rights     globus  CA:sign
cond_subjects  globus  '"/O=Kite-Bench/*"'
EOF
chmod 644 "$tmp"/certificates/*

export X509_CERT_DIR="$tmp/certificates"
export X509_USER_PROXY="$tmp/user/proxy.pem"
unset X509_USER_CERT X509_USER_KEY GLOBUS_LOCATION

# A 12 h proxy: globus-job-run refuses proxies with less than about 3 h left.
grid-proxy-init -q -cert "$tmp/user/cert.pem" -key "$tmp/user/key.pem" -out "$X509_USER_PROXY" \
  -hours 12 </dev/null >"$tmp/log/proxy-init.out" 2>&1 \
  || { cat "$tmp/log/proxy-init.out" >&2; die "grid-proxy-init failed"; }
identity="$(grid-proxy-info -identity -file "$X509_USER_PROXY")" || die "grid-proxy-info failed"
printf '"%s" %s\n' "$identity" "$account" > "$tmp/grid-mapfile"

# ---------------------------------------------------------------------------------------------
# 4. Network namespace, port, gatekeeper and job manager configuration.
ns=()
if unshare --net true 2>/dev/null; then
  unshare --net sleep 86400 &
  holder_pid=$!
  # unshare switches namespace just before exec'ing sleep: wait for that before entering it.
  for _ in $(seq 100); do
    [ "$(readlink "/proc/$holder_pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.05
  done
  [ "$(readlink "/proc/$holder_pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] \
    || die "the private network namespace did not come up"
  ns=(nsenter -t "$holder_pid" -n)
  "${ns[@]}" ip link set lo up || die "cannot bring up loopback in the private network namespace"
  where="a private network namespace with only loopback"
else
  say "warning: unshare --net is not available; the gatekeeper will listen on all interfaces of this host"
  where="the host's network namespace (no private namespace available)"
fi
port=2119
while "${ns[@]}" ss -ltnH | awk '{print $4}' | grep -q ":$port\$"; do
  port=$((port + 1))
  [ "$port" -lt 2300 ] || die "no free port in 2119-2299"
done
contact="localhost:$port/jobmanager-fork"

cat > "$tmp/jobmanager.conf" <<EOF
-home /usr
-type fork
-state-file-dir $tmp/state
-log-pattern $tmp/log/gram_\$(LOGNAME).log
-x509-cert-dir $tmp/certificates
-globus-gatekeeper-host localhost
-globus-gatekeeper-port $port
-globus-gatekeeper-subject "$host_dn"
-service-tag kitebench
EOF
printf 'stderr_log,local_cred - /usr/sbin/globus-job-manager globus-job-manager -conf %s\n' \
  "$tmp/jobmanager.conf" > "$tmp/services/jobmanager-fork"
ln -s jobmanager-fork "$tmp/services/jobmanager"
cat > "$tmp/gatekeeper.conf" <<EOF
-f
-port $port
-pidfile $tmp/gatekeeper.pid
-logfile $tmp/log/gatekeeper.log
-home /usr
-e /usr/sbin
-grid_services $tmp/services
-gridmap $tmp/grid-mapfile
-x509_cert_dir $tmp/certificates
-x509_user_cert $tmp/host/cert.pem
-x509_user_key $tmp/host/key.pem
EOF
chmod -R go+rX "$tmp/services" "$tmp/jobmanager.conf" "$tmp/gatekeeper.conf" "$tmp/grid-mapfile"

globus-gatekeeper -conf "$tmp/gatekeeper.conf" -test >"$tmp/log/gatekeeper-test.out" 2>&1 \
  || { cat "$tmp/log/gatekeeper-test.out" >&2; die "globus-gatekeeper -test rejected the configuration"; }

"${ns[@]}" globus-gatekeeper -conf "$tmp/gatekeeper.conf" >"$tmp/log/gatekeeper.out" 2>&1 &
gatekeeper_pid=$!

# Ready when a GSI authentication against it succeeds (globusrun -a: authenticate only).
ready=""
for _ in $(seq 60); do
  kill -0 "$gatekeeper_pid" 2>/dev/null || break
  if "${ns[@]}" globusrun -a -r "$contact" >"$tmp/log/auth.out" 2>&1; then ready=1; break; fi
  sleep 0.5
done
if [ -z "$ready" ]; then
  cat "$tmp/log/gatekeeper.out" "$tmp/log/auth.out" >&2 2>/dev/null
  tail -n 30 "$tmp/log/gatekeeper.log" >&2 2>/dev/null
  die "the gatekeeper did not accept an authenticated connection on port $port"
fi
say "gatekeeper (pid $gatekeeper_pid) up at $contact in $where"

# ---------------------------------------------------------------------------------------------
# 5. The workload.
client="$tmp/gram5_client"
# shellcheck disable=SC2046  # pkg-config prints several flags on purpose
gcc -O2 -o "$client" "$here/gram5_client.c" $(pkg-config --cflags --libs globus-gram-client globus-common) \
  -lpthread 2>"$tmp/log/gcc.out" || { cat "$tmp/log/gcc.out" >&2; die "cannot compile gram5_client.c"; }

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1;
  if (NR % 2) printf "%.1f", v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# run_client OUT ERR COMMAND...: runs a long client step in the background and waits for it, so
# that a TERM sent to this script reaches the clean-up at once rather than after the step.
run_client() {
  local out=$1 err=$2 rc=0
  shift 2
  "$@" >"$out" 2>"$err" &
  client_pid=$!
  wait "$client_pid" || rc=$?
  client_pid=""
  return "$rc"
}
show_logs() {
  tail -n 20 "$tmp/log/gatekeeper.log" >&2 2>/dev/null
  tail -n 20 "$tmp"/log/gram_*.log >&2 2>/dev/null
  true
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

# Authentication only, five times.
auth_ms=""
for _ in 1 2 3 4 5; do
  t0=$(date +%s%N)
  "${ns[@]}" globusrun -a -r "$contact" >/dev/null 2>&1 || die "globusrun -a failed"
  auth_ms+="$(( ($(date +%s%N) - t0) / 1000000 ))"$'\n'
done
auth_median="$(printf '%s' "$auth_ms" | median)"

# Warm-up: the first job starts the resident job manager for this account; not measured.
"${ns[@]}" "$client" latency "$contact" 1 >"$tmp/log/warmup.out" 2>"$tmp/log/warmup.err" \
  || { cat "$tmp/log/warmup.err" >&2; show_logs; die "the warm-up job did not complete"; }

# One job through the command line client (no two-phase commit), as a cross-check.
t0=$(date +%s%N)
"${ns[@]}" globus-job-run "$contact" /bin/true >"$tmp/log/job-run.out" 2>&1 \
  || { cat "$tmp/log/job-run.out" >&2; show_logs; die "globus-job-run /bin/true failed"; }
jobrun_ms=$(( ($(date +%s%N) - t0) / 1000000 ))

say "latency: $latency_runs single jobs, one after the other"
run_client "$tmp/log/latency.out" "$tmp/log/latency.err" \
  "${ns[@]}" timeout $((latency_runs * 200 + 60)) "$client" latency "$contact" "$latency_runs" \
  || { cat "$tmp/log/latency.err" >&2; show_logs; die "the latency run failed"; }
latencies="$(sed -n 's/^latency_ms=//p' "$tmp/log/latency.out")"
[ "$(printf '%s\n' "$latencies" | grep -c .)" = "$latency_runs" ] || die "latency run printed the wrong number of results"
median_latency="$(printf '%s\n' "$latencies" | median)"
min_latency="$(printf '%s\n' "$latencies" | sort -n | head -1)"
max_latency="$(printf '%s\n' "$latencies" | sort -n | tail -1)"

say "throughput: $jobs jobs from $threads threads"
run_client "$tmp/log/throughput.out" "$tmp/log/throughput.err" \
  "${ns[@]}" timeout $((jobs * 5 + 300)) "$client" throughput "$contact" "$jobs" "$threads" \
  || { cat "$tmp/log/throughput.out" "$tmp/log/throughput.err" >&2; show_logs; die "the throughput run failed"; }
line="$(grep '^seconds=' "$tmp/log/throughput.out")" || die "the throughput run printed no result"
# line: seconds=S done=D failed=F errors=E
read -r seconds done_jobs _ <<<"$line"
seconds="${seconds#seconds=}"
done_jobs="${done_jobs#done=}"
[ "$done_jobs" = "$jobs" ] || die "only $done_jobs of $jobs jobs completed"
jobs_per_s="$(awk -v n="$jobs" -v s="$seconds" 'BEGIN { printf "%.2f", n / s }')"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------------------------
# 6. Report.
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs || true)"
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
mkdir -p "$(dirname "$out")"
{
  echo "# GRAM5 reference benchmark (bench/gram5/run.sh) — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Machine: $(nproc) cores (nproc), ${cpu:-unknown CPU}, kernel $(uname -r)," \
       "Debian $(cat /etc/debian_version 2>/dev/null || echo '?'). Load average before/after: $load_before / $load_after."
  echo
  echo "Software: Debian's Grid Community Toolkit packages — globus-gatekeeper $(ver globus-gatekeeper)," \
       "globus-gram-job-manager $(ver globus-gram-job-manager), globus-gram-job-manager-fork $(ver globus-gram-job-manager-fork)" \
       "(polling, no SEG), libglobus-gram-client3 $(ver libglobus-gram-client3); $(openssl version | cut -d' ' -f1-2)."
  echo
  echo "Set-up: gatekeeper on $contact in $where; throwaway CA, RSA-2048 host and user certificates," \
       "12 h RFC 3820 proxy, grid-mapfile to a throwaway local account. Job = \`/bin/true\`." \
       "Every job: job request with \`two_phase=600\` (reply WAITING_FOR_COMMIT), COMMIT_REQUEST signal," \
       "DONE callback (mask DONE|FAILED), COMMIT_END signal; a job counts once COMMIT_END is acknowledged." \
       "Client: bench/gram5/gram5_client.c on libglobus-gram-client, blocking calls, one callback listener."
  echo
  echo "| measure | GRAM5 |"
  echo "| --- | ---: |"
  echo "| $jobs jobs, $threads client threads: submit + commit, DONE callback, commit-end | $jobs_per_s jobs/s ($seconds s) |"
  echo "| single job, submit to DONE callback, median of $latency_runs (min–max) | $median_latency ms ($min_latency–$max_latency ms) |"
  echo "| authentication only (\`globusrun -a\`), median of 5 | $auth_median ms |"
  echo "| one \`globus-job-run $contact /bin/true\` (no two-phase commit), job manager warm | $jobrun_ms ms |"
  echo
  echo "Reading: each submission is a new TCP connection with a full mutual TLS handshake to the" \
       "gatekeeper, which forks, maps the user, and has the client delegate a proxy for a freshly" \
       "generated RSA key; each signal and callback is one more connection. The fork job manager" \
       "polls for finished processes about once a second, so single-job latencies come in steps of" \
       "about 1 s (~1.9 s idle, ~2.9 s when the machine is busy). The machine may be shared with other" \
       "work: compare figures taken in the same run."
} > "$out"
say "wrote $out"

echo "GRAM5 jobs=$jobs seconds=$seconds jobs_per_s=$jobs_per_s median_latency_ms=$median_latency"
