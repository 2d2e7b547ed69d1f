#!/usr/bin/env bash
# Runs gass_bench and `openssl speed -evp aes-128-gcm` on this machine and writes
# bench/results/gass.md: GASS GET/PUT throughput beside memcpy, loopback TCP and raw TLS.
# Usage: bench/gass/run.sh [path/to/gass_bench]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bench="${1:-$root/build/bin/gass_bench}"
out="$root/bench/results/gass.md"
[ -x "$bench" ] || { echo "no benchmark binary at $bench (build target gass_bench)" >&2; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" --benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json > "$tmp/bench.json"
openssl speed -seconds 2 -bytes 16384 -evp aes-128-gcm > "$tmp/speed.txt" 2>/dev/null

mkdir -p "$(dirname "$out")"
{
  echo "# GASS benchmark — $(date -u +%Y-%m-%d)"
  echo
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
       "$(openssl version). Load average before the run: $load_before (a shared machine)."
  echo "Loopback, one server thread and one client thread, EC P-256 certificates, TLS 1.3,"
  echo "64 MiB file on the temporary directory's disk. Medians of 3 repetitions, MB = 10^6 bytes."
  echo
  echo "| benchmark | MB/s | ms/op |"
  echo "| --- | ---: | ---: |"
  python3 - "$tmp/bench.json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name = b["run_name"].replace("/real_time", "")
    mbs = b.get("bytes_per_second", 0) / 1e6
    print(f"| {name} | {mbs:,.0f} | {b['real_time']:,.3f} |")
PY
  echo
  echo "## \`openssl speed -seconds 2 -bytes 16384 -evp aes-128-gcm\` (one core)"
  echo
  echo '```'
  grep -E "^(type|AES-128-GCM|aes-128-gcm)" "$tmp/speed.txt" || tail -3 "$tmp/speed.txt"
  echo '```'
  echo
  echo "Reading: a large ranged GET into memory runs at about the raw TLS loopback rate (the same"
  echo "mutual-TLS contexts, no HTTP, no file), so Beast, libcurl and the 256 KiB file pieces add"
  echo "little; TLS itself (AES-GCM plus copies through the kernel) costs 3-4x against plain loopback"
  echo "TCP. Small requests are bound by the per-request round trip on the kept-alive connection"
  echo "(~0.1-0.2 ms). With sync=1 the server fdatasyncs before acknowledging a PUT (DESIGN rule 4);"
  echo "on this disk that costs ~4 ms when the write extends the file, which dominates small PUTs,"
  echo "so OutputStreamer sends chunks of up to 4 MiB. GetToFile includes writing and fsyncing the"
  echo "64 MiB copy on the local disk."
} > "$out"
echo "wrote $out"
