#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
#   1. every crate's tests: unit, traces/ replay, lab, proptest properties, simulation,
#      the differential against PostgreSQL (throwaway clusters under target/);
#      (the two PostgreSQL-bound binaries of the CLI beside the rest, see below);
#   2. the loom suite, which needs `--cfg loom` (RUSTFLAGS replaces .cargo/config.toml's
#      rustflags, which is fine for leaselab-sync: it has no tokio).
# Tests that cannot run (no PostgreSQL server binaries) record themselves in
# target/leaselab-skipped.log; the last lines of this script's output list them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
export LEASELAB_SKIP_LOG="$PWD/target/leaselab-skipped.log"
rm -f "$LEASELAB_SKIP_LOG"
summary() {
  if [ -s "$LEASELAB_SKIP_LOG" ]; then
    echo "SKIPPED TESTS ($(wc -l < "$LEASELAB_SKIP_LOG")): they did not run, so they did not pass:"
    sed 's/^/  /' "$LEASELAB_SKIP_LOG"
  else
    echo "no test skipped"
  fi
}
# The two PostgreSQL-bound test binaries of the CLI, differential.rs and audit.rs, wait on the
# server far more than they compute (each statement's lock waits are polled, each schedule
# resets its cluster): run one after the other they took 20 of a CI run's 33 minutes. They run
# beside everything else, all their tests at once, each into its own log printed when it ends.
# Every command selects the whole workspace (`--workspace`, then targets by name): selecting
# packages instead would unify features differently and build the crates a second time.
pg_bound=(differential audit)
pids=()
stop_background() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap 'stop_background; summary' EXIT
cargo test --release --workspace --no-run
for t in "${pg_bound[@]}"; do
  cargo test --release --workspace --no-fail-fast --test "$t" -- --test-threads 16 >"target/test-$t.log" 2>&1 &
  pids+=("$!")
done
others=()
for n in $(ls -- */tests/*.rs | sed 's|.*/||; s|\.rs$||' | sort -u); do
  [[ " ${pg_bound[*]} " == *" $n "* ]] || others+=(--test "$n")
done
failed=()
cargo test --release --workspace --no-fail-fast --lib --bins "${others[@]}" || failed+=("the tests")
cargo test --release --workspace --no-fail-fast --doc || failed+=("the doc tests")
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" RUSTFLAGS="--cfg loom" \
  cargo test --release -p leaselab-sync --test loom || failed+=("loom")
for i in "${!pg_bound[@]}"; do
  t="${pg_bound[$i]}"
  wait "${pids[$i]}" || failed+=("cli/tests/$t.rs")
  echo "---- cli/tests/$t.rs (ran beside the rest; target/test-$t.log) ----"
  cat "target/test-$t.log"
done
pids=()
if [ "${#failed[@]}" -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
