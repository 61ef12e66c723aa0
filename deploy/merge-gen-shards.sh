#!/usr/bin/env bash
# Adds up the shards of a generated search: the output of each `leaselab audit SPEC --gen N
# --seed S --shard K/M` (or `leaselab diff --gen N --shard K/M`), one file per shard — e.g. the
# downloaded artifacts of deploy/github-actions-audit.yml, or the volume of
# deploy/kubernetes-audit-job.yaml.
#
#   deploy/merge-gen-shards.sh FILE...
#
# A shard resumed with `--from` appends each run's output to its file: the summary lines of its
# runs add up (each ran schedules the others did not).
#
# Prints each shard's last summary line and what it found (`trace:`, `reproduce:`) or where it
# goes on (`resume:`), then one SUMMARY line for the whole search: the shards' generated
# schedules, steps, failures and shrinking runs added up — the figures one unsharded run of the
# same --gen and --seed prints (cli/tests/audit.rs, four_shards_add_up_to_one_search) — and, for
# an audit, one `contention` line: each shard's counts of the interleavings its schedules
# reached, added up.
# Exit status: 0 every shard complete and clean, 1 a shard found a failure, 5 a shard did not
# finish (its `resume:` line, or no summary line at all: it was killed).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 FILE..." >&2; exit 2; }
shards=0 unfinished=0 generated=0 steps=0 found=0 shrink=0 kind=""
declare -A contention=()
order=()
for f in "$@"; do
  shards=$((shards + 1))
  # A resumed shard has a summary line per run (each appended to the same file): their
  # schedules add up. Whether it finished is its last run's word.
  last=$(grep '^SUMMARY ' "$f" | tail -n 1 || true)
  echo "SHARD $f: ${last:-no SUMMARY line (killed?)}"
  grep -E '^(trace|reproduce): ' "$f" | sed 's/^/  /' || true
  after_last=$(awk '/^SUMMARY /{n=NR} END{print n+0}' "$f")
  # The last run's `resume:` line comes right after its summary line.
  resume=$(awk -v n="$after_last" 'NR > n && /^resume: / { print; exit }' "$f")
  [ -z "$resume" ] || echo "  $resume"
  if [ -z "$last" ] || [ -n "$resume" ] || [[ "$last" == *" interrupted "* ]]; then
    unfinished=$((unfinished + 1))
  fi
  while IFS= read -r line; do
    field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$line"; }
    generated=$((generated + $(field generated)))
    steps=$((steps + $(field steps)))
    shrink=$((shrink + $(field shrink_runs)))
    for k in violations divergences; do
      n=$(field "$k")
      if [ -n "$n" ]; then
        kind=$k
        found=$((found + n))
      fi
    done
  done < <(grep '^SUMMARY ' "$f" || true)
  while IFS= read -r line; do
    for pair in ${line#*: }; do
      k=${pair%%=*} n=${pair#*=}
      [[ -v "contention[$k]" ]] || { order+=("$k"); contention[$k]=0; }
      contention[$k]=$((contention[$k] + n))
    done
  done < <(grep '^contention, ' "$f" || true)
done
if [ ${#order[@]} -gt 0 ]; then
  line="contention, occurrences over the $generated schedules:"
  for k in "${order[@]}"; do line="$line $k=${contention[$k]}"; done
  echo "$line"
fi
echo "SUMMARY shards=$shards generated=$generated steps=$steps ${kind:-violations}=$found shrink_runs=$shrink unfinished=$unfinished"
if [ "$unfinished" -gt 0 ]; then exit 5; fi
if [ "$found" -gt 0 ]; then exit 1; fi
exit 0
