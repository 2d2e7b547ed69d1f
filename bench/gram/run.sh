#!/usr/bin/env bash
# Runs gram_bench (1,000 jobs by default) and writes bench/results/gram.md.
# Usage: bench/gram/run.sh [path/to/gram_bench] [jobs]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bench="${1:-$root/build/bin/gram_bench}"
[ -x "$bench" ] || { echo "no benchmark binary at $bench (build target gram_bench)" >&2; exit 1; }
mkdir -p "$root/bench/results"
"$bench" --jobs "${2:-1000}" --out "$root/bench/results/gram.md"
