#!/usr/bin/env bash
# REST endpoint benchmark (issue 7): GET /api/v1/jobs over 100,000 queued jobs, and one job's
# status under 32 concurrent wrk clients while `kite q` keeps being served. Writes
# bench/results/rest.md. Usage: bench/rest/run.sh [BIN or BIN/rest_bench] [--quick]
# (scripts/bench passes build-release/bin/rest_bench; only its directory is used.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/build-release/bin}"
[ -d "$bin" ] || bin="$(dirname "$bin")"
[ -x "$bin/kite" ] || { echo "no kite in $bin (build kite, kite-agent, kite-exec)" >&2; exit 1; }
if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wrk >/dev/null
  else
    echo "wrk is needed (apt-get install wrk)" >&2; exit 1
  fi
fi
shift || true
exec /usr/bin/python3 "$here/run.py" "$bin" "$@"
