#!/usr/bin/env bash
# Instructions per request of a proxy process, counted by valgrind (callgrind): unlike CPU time, the count does
# not move with the other load on a shared machine, so it separates "more code runs" from "the same code runs
# slower" (cache, page faults). Needs valgrind; run `npm run build` first.
#
#   bench/scripts/instructions-per-request.sh gateway|naive [connections=32] [warmup=6000] [measured=1000]
#
# Starts the bench backend, the front under callgrind with instrumentation off, warms it up with autocannon,
# then counts only the measured requests (callgrind_control -i on/off). Prints user-space instructions/request.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=${1:?gateway or naive}; C=${2:-32}; WARM=${3:-6000}; N=${4:-1000}
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
source bench/scripts/common.sh
start_backend
PORT=$(free_port)
VG=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$TMP/cg.out")
if [ "$TARGET" = naive ]; then
  "${VG[@]}" node dist/bench/naive-proxy.js --upstream "http://127.0.0.1:$BPORT" --port "$PORT" > "$TMP/front.out" 2>&1 &
else
  gateway_config "$PORT"
  "${VG[@]}" node dist/src/cli.js --config "$TMP/gw.yaml" > "$TMP/front.out" 2>&1 &
fi
FRONT=$!
wait_health "$PORT" 300
s1_body
AC=(node_modules/.bin/autocannon -c "$C" -m POST -H content-type=application/json -i "$TMP/body.json" -I -t 60)
"${AC[@]}" -a "$WARM" "http://127.0.0.1:$PORT/v1/responses" > /dev/null 2>&1
callgrind_control -i on "$FRONT" > /dev/null
"${AC[@]}" -a "$N" "http://127.0.0.1:$PORT/v1/responses" > /dev/null 2>&1
callgrind_control -i off "$FRONT" > /dev/null
callgrind_control -d "$FRONT" > /dev/null
sleep 1
TOTAL=$(grep -h '^summary:\|^totals:' "$TMP"/cg.out* | awk '{print $2}' | sort -n | tail -1)
echo "$TARGET: $((TOTAL / N)) instructions/request ($N requests, $C connections, after $WARM warm-up requests)"
