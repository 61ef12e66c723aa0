#!/usr/bin/env bash
# Merges the results of a sharded sweep: every sweep folder (one per shard, each with its
# MANIFEST) found under the given directories — e.g. the downloaded artifacts of the GitHub
# Actions matrix, or the volume of the Kubernetes Indexed Job.
#
#   deploy/collect.sh DIR...
#
# Prints each shard's command and status, every failure with its trace files, and a total.
# Exit status: 0 all shards complete and clean, 1 failures found, 5 a shard did not finish
# (interrupted, or no status line: it was killed) — its MANIFEST says where to resume. A shard
# stopped by --max-failures or --max-trace-bytes counts as finished (its status says the cap).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
mapfile -t manifests < <(find "$@" -name MANIFEST -type f | sort)
[ ${#manifests[@]} -gt 0 ] || { echo "no MANIFEST under $*" >&2; exit 2; }
shards=0 unfinished=0 failures=0 seeds=0
for m in "${manifests[@]}"; do
  shards=$((shards + 1))
  cmd=$(sed -n 's/^command //p' "$m")
  status=$(sed -n 's/^status //p' "$m" | tail -n 1)
  echo "SHARD $(dirname "$m"): ${status:-unfinished (no status line)}"
  echo "  command: $cmd"
  case "$status" in
    complete | capped*) ;;
    *) unfinished=$((unfinished + 1)) ;;
  esac
  # A resumed sweep has a summary line per run: their seeds add up.
  n=$(awk '/^summary seeds=/ { split($2, kv, "="); s += kv[2] } END { print s + 0 }' "$m")
  seeds=$((seeds + n))
  # One line per failing seed, the last written: a manifest from before `--resume` dropped the
  # failures it finds again may list a seed twice.
  while read -r line; do
    failures=$((failures + 1))
    echo "  ${line#failure }"
  done < <(grep '^failure ' "$m" | awk '{ last[$2] = $0; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } } END { for (i = 1; i <= n; i++) print last[order[i]] }' || true)
done
echo "TOTAL shards=$shards seeds=$seeds failures=$failures unfinished=$unfinished"
if [ "$unfinished" -gt 0 ]; then exit 5; fi
if [ "$failures" -gt 0 ]; then exit 1; fi
exit 0
