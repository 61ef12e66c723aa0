#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
#   1. every crate's tests: unit, traces/ replay, lab, proptest properties, simulation,
#      the differential against PostgreSQL (throwaway clusters under target/);
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
trap summary EXIT
cargo test --release --workspace
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" RUSTFLAGS="--cfg loom" \
  cargo test --release -p leaselab-sync --test loom
