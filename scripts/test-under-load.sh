#!/usr/bin/env bash
# The test command on a busy machine: runs `bash scripts/test.sh` RUNS times in a row (default
# 3) while two simulation sweeps (`leaselab sim --seeds 0..`, one per core of a 2-core machine)
# keep every core busy; each run must pass. Prints each run's wall time and the load average
# seen during it, for BENCHMARKS.md ("The suite under load"). Each run's output is in
# target/under-load-N.log (not target/test-*.log: the test command removes those first). The
# load is stopped whatever ends the script.
# Usage: bash scripts/test-under-load.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
cargo build --release -q -p leaselab --bin leaselab
load_dir=$(mktemp -d "${TMPDIR:-/tmp}/leaselab-load.XXXXXX")
load=()
stop_load() {
  for p in "${load[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$load_dir"
}
trap stop_load EXIT
# The load binary is a copy: the suite rebuilds target/release/leaselab under it.
cp target/release/leaselab "$load_dir/leaselab"
for i in 1 2; do
  (cd "$load_dir" && exec ./leaselab sim --seeds "$((i * 1000000000))".. --fence scope --jobs 1 \
    --out "sweep-$i" >/dev/null 2>&1) &
  load+=("$!")
done
echo "load: two sweeps (pids ${load[*]}) on $(nproc) cores"
for r in $(seq 1 "$runs"); do
  start=$(date +%s)
  if ! bash scripts/test.sh > "target/under-load-$r.log" 2>&1; then
    echo "run $r FAILED after $(( $(date +%s) - start )) s (load $(cut -d' ' -f1-3 /proc/loadavg)); its last lines:"
    tail -n 30 "target/under-load-$r.log"
    exit 1
  fi
  echo "run $r passed in $(( $(date +%s) - start )) s (load $(cut -d' ' -f1-3 /proc/loadavg)); $(tail -n 1 "target/under-load-$r.log")"
done
