# Shared setup for the per-request measurement scripts in this folder (sourced, not run).
# Each function works in $TMP, which the caller creates and removes.

# Starts the bench backend agent in the background; sets BPORT.
start_backend() {
  node dist/bench/backend-agent.js > "$TMP/backend.out" &
  for _ in $(seq 50); do [ -s "$TMP/backend.out" ] && break; sleep 0.1; done
  BPORT=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).ports[0])' "$TMP/backend.out")
}

# Prints a free TCP port on 127.0.0.1.
free_port() {
  node -e 'const s=require("net").createServer().listen(0,()=>{console.log(s.address().port);s.close()})'
}

# Writes a one-backend gateway config listening on $1 in front of the backend on $BPORT to $TMP/gw.yaml.
gateway_config() {
  printf 'server: { host: 127.0.0.1, port: %s }\nlog_level: warn\nbackends: { agent: { url: "http://127.0.0.1:%s" } }\nroutes: [ { name: default, backend: agent } ]\n' "$1" "$BPORT" > "$TMP/gw.yaml"
}

# Waits until the front on port $1 answers GET /health (at most $2 tries half a second apart).
wait_health() {
  for _ in $(seq "$2"); do curl -s -m 2 "http://127.0.0.1:$1/health" > /dev/null && return 0; sleep 0.5; done
  return 1
}

# Writes the S1 body (one input, ~1 KB, a fresh request_id per request through autocannon -I) to $TMP/body.json.
s1_body() {
  node --input-type=module -e '
    import { writeFileSync } from "node:fs";
    import { smallRequest, bodyText } from "./dist/bench/lib/bodies.js";
    writeFileSync(process.argv[1], bodyText(smallRequest("[<id>]")));' "$TMP/body.json"
}
