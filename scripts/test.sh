#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
#   1. every crate's tests: unit, traces/ replay, lab, proptest properties, simulation;
#   2. the loom suite, which needs `--cfg loom` (RUSTFLAGS replaces .cargo/config.toml's
#      rustflags, which is fine for leaselab-sync: it has no tokio).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --workspace
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" RUSTFLAGS="--cfg loom" \
  cargo test --release -p leaselab-sync --test loom
