#!/usr/bin/env bash
# Regenerates the screenshots under docs/pictures/ that the README and EXERCISES.md show:
# F5, F6a, a whole and a shrunk simulation failure, the envelope's boundary case, a live run
# on etcd, and the Explorer on the shortest counterexample. Needs Debian's `chromium`; run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
# LEASELAB_BIN=PATH uses a binary already built.
bin="${LEASELAB_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release -q -p leaselab
  bin="$PWD/target/release/leaselab"
fi
out="$PWD/docs/pictures"
work="$(mktemp -d)"
# Readable by the server's own user: as root, the live run's PostgreSQL runs as another one.
chmod 755 "$work"
trap 'rm -rf "$work"; [ -n "${explorer:-}" ] && kill "$explorer" 2>/dev/null || true' EXIT
mkdir -p "$out"
shot() { # shot PAGE-OR-URL OUT.png HEIGHT
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --no-first-run --hide-scrollbars --user-data-dir="$work/profile" \
    --virtual-time-budget=5000 --window-size=1200,"$3" --screenshot="$2" "$1" 2>/dev/null
}
"$bin" diagram traces/F5.trace --html "$work/F5.html" >/dev/null
shot "$work/F5.html" "$out/F5.png" 430
"$bin" diagram traces/F6a.trace --html "$work/F6a.html" >/dev/null
shot "$work/F6a.html" "$out/F6a.png" 430
(cd "$work" && "$bin" sim --seed 3 --fence off --quiet --trace-out sim-3.trace >/dev/null || true)
"$bin" diagram "$work/sim-3.trace" --html "$work/sim-3.html" >/dev/null
shot "$work/sim-3.html" "$out/sim-3-whole-run.png" 450
(cd "$work" && "$bin" sim --seeds 3..4 --fence off --out sweep >/dev/null || true)
shrunk="$(find "$work/sweep" -name 'seed-3.shrunk.trace' | head -1)"
"$bin" diagram "$shrunk" --html "$work/sim-3-shrunk.html" >/dev/null
shot "$work/sim-3-shrunk.html" "$out/sim-3-shrunk.png" 430
"$bin" envelope --fence off --html "$work/envelope.html" >/dev/null
shot "$work/envelope.html" "$out/envelope-boundary.png" 430
# A live run (needs etcd and PostgreSQL): its timing is real, so this picture differs run to run.
if command -v etcd >/dev/null 2>&1; then
  "$bin" live --store etcd --fence off --time 10s --seed 1 --dir "$work/live" >/dev/null || true
  "$bin" diagram --html "$work/live.html" "$work"/live/records/*.jsonl >/dev/null
  shot "$work/live.html" "$out/live-etcd-off.png" 520
fi
port=39417
"$bin" check --fence off --max-ticks 16 --serve "127.0.0.1:$port" >"$work/serve.out" 2>&1 &
explorer=$!
for _ in $(seq 1 100); do grep -q "opens at" "$work/serve.out" && break; sleep 0.2; done
# The Explorer runs its search to completion as it opens: shoot once its status says done.
status() {
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET /.status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
  grep -q '"done":true' <&3
  local found=$?
  exec 3>&-
  return $found
}
for _ in $(seq 1 300); do status && break; sleep 0.2; done
url="$(grep -o "http://127.0.0.1:$port/#/steps[0-9/]*" "$work/serve.out")"
shot "$url" "$out/explorer.png" 900
echo "wrote $(ls "$out" | wc -l) pictures to docs/pictures/"
