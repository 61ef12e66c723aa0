#!/usr/bin/env bash
# Everything a restructuring must leave byte-identical, written under OUT and hashed:
#   lab under every fence (stdout, exit status, every trace it writes), every committed trace
#   replayed, drawn and explained, 2,000-seed sweeps under `scope` and `off` and 100-seed ones
#   on the turmoil driver (each with every file it writes), `check` counterexamples with their
#   state counts, and `--help` of every command. Run it before and after a change and compare
#   the two SUMS files:
#     bash scripts/same-output.sh /tmp/before && (change, build) &&
#     bash scripts/same-output.sh /tmp/after && diff /tmp/before/SUMS /tmp/after/SUMS
# The binary is LEASELAB_BIN, else target/release/leaselab (built if missing). Timings vary from
# run to run, so lines that report them are dropped before hashing (see `steady`).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: same-output.sh OUTDIR}
BIN=${LEASELAB_BIN:-target/release/leaselab}
[ -x "$BIN" ] || cargo build --release -q -p leaselab
BIN=$(realpath "$BIN")
rm -rf "$OUT" && mkdir -p "$OUT"
OUT=$(realpath "$OUT")

# Drops what changes from run to run: wall times, rates, memory, where OUT is.
steady() {
  sed -E -e "s#$OUT#OUT#g" -e 's/[0-9]+(\.[0-9]+)? ?(ms|s|µs|MiB|states\/s)\b/<t>/g' -e '/elapsed|took|wall/d'
}
run() { # run NAME ARGS… — stdout and exit status of one command
  local name=$1
  shift
  set +e
  "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  echo "exit $?" >>"$OUT/$name.out"
  set -e
  steady <"$OUT/$name.out" >"$OUT/$name.steady" && rm "$OUT/$name.out" "$OUT/$name.err"
}

for cmd in "" lab sim diff audit holder diagram judge export explain envelope check replay; do
  run "help-${cmd:-main}" $cmd --help
done
for fence in scope strict scope-upsert row check-then-write off; do
  mkdir -p "$OUT/lab-$fence"
  run "lab-$fence" lab --fence "$fence" --table --trace-out "$OUT/lab-$fence"
done
run replay replay traces/*.trace
for t in traces/*.trace; do
  n=$(basename "$t" .trace)
  run "diagram-$n" diagram "$t"
  run "mermaid-$n" diagram --mermaid "$t"
  run "explain-$n" explain "$t"
done
for fence in scope off; do
  mkdir -p "$OUT/sweep-$fence"
  run "sweep-$fence" sim --seeds 0..2000 --fence "$fence" --out "$OUT/sweep-$fence" --max-failures 2000
done
for fence in scope off; do # the turmoil driver too: both drivers must keep their traces
  mkdir -p "$OUT/turmoil-$fence"
  run "turmoil-$fence" sim --seeds 0..100 --driver turmoil --fence "$fence" --out "$OUT/turmoil-$fence" --max-failures 100
done
run check-off check --fence off --max-ticks 16 --trace-out "$OUT/check-off.trace"
run check-strict check --fence strict --parts 2 --max-ticks 12 --trace-out "$OUT/check-strict.trace"
run check-unlogged check --lease-table unlogged --crash --trace-out "$OUT/check-unlogged.trace"
run check-scope check --max-ticks 12 --all
run check-skew check --fence off --skew 1/2 --max-ticks 16 --trace-out "$OUT/check-skew.trace"

# Wall times in summaries and JSON files vary too; hash each file's steady text.
(cd "$OUT" && find . -type f ! -name SUMS | LC_ALL=C sort | while read -r f; do
  printf '%s  %s\n' "$(steady <"$f" | sha256sum | cut -c1-16)" "$f"
done) >"$OUT/SUMS"
echo "$(wc -l <"$OUT/SUMS") files hashed in $OUT/SUMS"
