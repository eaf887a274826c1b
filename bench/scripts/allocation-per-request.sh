#!/usr/bin/env bash
# Bytes the front's JS heap allocates per S1 request, summed from V8's --trace-gc-nvp lines ("allocated=" since
# the previous GC), the bytes young-generation GCs promoted to the old one ("promoted=", which only a full GC
# frees: near 0 when every request's objects die young), and how many scavenges and mark-compacts that took.
# Run `npm run build` first.
#
#   bench/scripts/allocation-per-request.sh gateway|naive [requests=20000]
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:?gateway or naive}; N=${2:-20000}
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
source bench/scripts/common.sh
start_backend
PORT=$(free_port)
if [ "$TARGET" = naive ]; then
  node --trace-gc-nvp dist/bench/naive-proxy.js --upstream "http://127.0.0.1:$BPORT" --port "$PORT" > "$TMP/gc.out" 2>&1 &
else
  gateway_config "$PORT"
  node --trace-gc-nvp dist/src/cli.js --config "$TMP/gw.yaml" > "$TMP/gc.out" 2>&1 &
fi
wait_health "$PORT" 100
s1_body
AC=(node_modules/.bin/autocannon -c 32 -m POST -H content-type=application/json -i "$TMP/body.json" -I -a "$N")
"${AC[@]}" "http://127.0.0.1:$PORT/v1/responses" > /dev/null 2>&1 # warm-up
FROM=$(wc -l < "$TMP/gc.out")
"${AC[@]}" "http://127.0.0.1:$PORT/v1/responses" > /dev/null 2>&1
tail -n +$((FROM + 1)) "$TMP/gc.out" | awk -v who="$TARGET" -v n="$N" '
  { if (match($0, /allocated=[0-9]+/)) bytes += substr($0, RSTART + 10, RLENGTH - 10)
    if ($0 ~ /gc=s /) { s++; if (match($0, /promoted=[0-9]+/)) promoted += substr($0, RSTART + 9, RLENGTH - 9) }
    else if ($0 ~ /gc=mc /) mc++ }
  END { printf "%s: %.1f KB allocated and %.2f KB promoted by scavenges per request, %d scavenges and %d mark-compacts over %d requests\n", who, bytes / n / 1024, promoted / n / 1024, s, mc, n }'
