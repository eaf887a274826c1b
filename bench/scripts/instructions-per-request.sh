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
node dist/bench/backend-agent.js > "$TMP/backend.out" &
for _ in $(seq 50); do [ -s "$TMP/backend.out" ] && break; sleep 0.1; done
BPORT=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).ports[0])' "$TMP/backend.out")
PORT=$(node -e 'const s=require("net").createServer().listen(0,()=>{console.log(s.address().port);s.close()})')
VG=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$TMP/cg.out")
if [ "$TARGET" = naive ]; then
  "${VG[@]}" node dist/bench/naive-proxy.js --upstream "http://127.0.0.1:$BPORT" --port "$PORT" > "$TMP/front.out" 2>&1 &
else
  printf 'server: { host: 127.0.0.1, port: %s }\nlog_level: warn\nbackends: { agent: { url: "http://127.0.0.1:%s" } }\nroutes: [ { name: default, backend: agent } ]\n' "$PORT" "$BPORT" > "$TMP/gw.yaml"
  "${VG[@]}" node dist/src/cli.js --config "$TMP/gw.yaml" > "$TMP/front.out" 2>&1 &
fi
FRONT=$!
for _ in $(seq 300); do curl -s -m 2 "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.5; done
node --input-type=module -e '
  import { writeFileSync } from "node:fs";
  import { smallRequest, bodyText } from "./dist/bench/lib/bodies.js";
  writeFileSync(process.argv[1], bodyText(smallRequest("[<id>]")));' "$TMP/body.json"
AC=(node_modules/.bin/autocannon -c "$C" -m POST -H content-type=application/json -i "$TMP/body.json" -I -t 60)
"${AC[@]}" -a "$WARM" "http://127.0.0.1:$PORT/v1/responses" > /dev/null 2>&1
callgrind_control -i on "$FRONT" > /dev/null
"${AC[@]}" -a "$N" "http://127.0.0.1:$PORT/v1/responses" > /dev/null 2>&1
callgrind_control -i off "$FRONT" > /dev/null
callgrind_control -d "$FRONT" > /dev/null
sleep 1
TOTAL=$(grep -h '^summary:\|^totals:' "$TMP"/cg.out* | awk '{print $2}' | sort -n | tail -1)
echo "$TARGET: $((TOTAL / N)) instructions/request ($N requests, $C connections, after $WARM warm-up requests)"
