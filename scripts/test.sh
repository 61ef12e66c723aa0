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
# What earlier runs left under target/ (a run killed before its watchdog could act, or one from
# before there was one): servers whose owning process (the `-PID` of the cluster's folder) is
# gone, and holder processes of this checkout's binaries whose lab is gone (adopted by init).
# Stopped (immediate shutdown: SIGQUIT to the postmaster), killed, and listed.
stop_leftovers() {
  local pidfile dir owner pid p
  while IFS= read -r pidfile; do
    dir=$(dirname "$(dirname "$pidfile")")
    owner=${dir##*-}
    pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
    [[ "$owner" =~ ^[0-9]+$ && "$pid" =~ ^[0-9]+$ ]] || continue
    if ! kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
      echo "stopped a server left by an earlier run: $dir (postmaster $pid)"
      kill -QUIT "$pid" 2>/dev/null || true
    fi
  done < <(find target -path '*/data/postmaster.pid' 2>/dev/null)
  for p in $(pgrep -f "^$PWD/target/[^ ]*/leaselab holder " || true); do
    if [ "$(ps -o ppid= -p "$p" | tr -d ' ')" = 1 ]; then
      echo "killed a holder process left by an earlier run: $p ($(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-120))"
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
}
stop_leftovers
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
# The test binaries that run beside everything else, all their tests at once, each into its own
# log printed when it ends: the PostgreSQL-bound differential.rs (pg/ and cli/) and audit.rs,
# whose tests are long searches on their own clusters (run one after the other they took 20 of
# a CI run's 33 minutes), and the ones whose tests mostly wait on processes they start and stop
# (interrupt.rs: servers, holders and signals; readme.rs: every README command, each given
# seconds before its Ctrl-C; progress.rs: progress lines of PostgreSQL runs). In the main
# sequence, two at a time, those three were its longest part (228 s, 85 s, 54 s of a CI run).
# Every command selects the whole workspace (`--workspace`, then targets by name): selecting
# packages instead would unify features differently and build the crates a second time.
beside=(differential audit interrupt readme progress)
pids=()
stop_background() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
failed=()
# The last lines name what failed, test by test (cargo's own list is hundreds of lines up),
# after the list of skipped tests.
finish() {
  stop_background
  summary
  if [ "${#failed[@]}" -gt 0 ]; then
    local names
    names=$(grep -h -E '^test .+ \.\.\. FAILED$' target/test-*.log 2>/dev/null \
      | sed -E 's/^test (.+) \.\.\. FAILED$/  \1/' | sort -u || true)
    echo "FAILED: ${failed[*]}"
    [ -z "$names" ] || { echo "the failing tests:"; echo "$names"; }
  fi
}
trap finish EXIT
rm -f target/test-*.log
cargo test --release --workspace --no-run
for t in "${beside[@]}"; do
  cargo test --release --workspace --no-fail-fast --test "$t" -- --test-threads 16 >"target/test-$t.log" 2>&1 &
  pids+=("$!")
done
others=()
for n in $(ls -- */tests/*.rs | sed 's|.*/||; s|\.rs$||' | sort -u); do
  [[ " ${beside[*]} " == *" $n "* ]] || others+=(--test "$n")
done
cargo test --release --workspace --no-fail-fast --lib --bins "${others[@]}" 2>&1 \
  | tee target/test-main.log || failed+=("the tests")
cargo test --release --workspace --no-fail-fast --doc 2>&1 | tee target/test-doc.log \
  || failed+=("the doc tests")
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" RUSTFLAGS="--cfg loom" \
  cargo test --release -p leaselab-sync --test loom 2>&1 | tee target/test-loom.log \
  || failed+=("loom")
for i in "${!beside[@]}"; do
  t="${beside[$i]}"
  wait "${pids[$i]}" || failed+=("*/tests/$t.rs")
  echo "---- */tests/$t.rs (ran beside the rest; target/test-$t.log) ----"
  cat "target/test-$t.log"
done
pids=()
[ "${#failed[@]}" -eq 0 ] || exit 1
