#!/usr/bin/env bash
# `leaselab judge` at scale, one row per history shape (BENCHMARKS.md, "Judging recorded
# histories at scale"): bench_judge generates each history (line by line) and times the JSON
# floor, the reading and the checkers in one process; then `leaselab judge` on the same file is
# timed whole, with its peak memory. Usage: bash scripts/bench-judge.sh [EVENTS] [SHAPE…]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1000000}"
shift || true
shapes=("$@")
[ "${#shapes[@]}" -gt 0 ] || shapes=(default read-heavy many-parts many-unknowns many-leases settled-then-unknown mix)
cargo build --release -q -p leaselab --bin leaselab --example bench_judge
echo "events=$n machine: $(nproc) cores, $(uname -m)"
for s in "${shapes[@]}"; do
  echo "== $s"
  target/release/examples/bench_judge "$n" "$s" 2>/dev/null | tail -1
  /usr/bin/time -f "leaselab judge: %e s wall, %U s user, %M KiB peak" \
    target/release/leaselab judge "target/bench-judge/$s-$n.jsonl" >/dev/null 2>/tmp/bench-judge-time.$$ || true
  tail -1 /tmp/bench-judge-time.$$
  rm -f /tmp/bench-judge-time.$$
done
