/**
 * One BENCH-like batch at a time (32 inputs x 64 KB history memory), direct vs through the gateway:
 * the latency a BENCH step pays for the gateway when nothing else is running.
 *
 *   node dist/bench/single-batch.js [--batches N] [--small] [--redis URL] [--max-in-flight N]
 *
 * --small: 1 input of ~1 KB instead. --redis: the gateway's state in Redis (replay and, with --max-in-flight,
 * permits go through Redis): compare with the default in-memory store for the Redis path's cost per batch.
 *
 * Alternates direct and gateway batch by batch (drift cancels) and prints medians, p90s and the gateway's own
 * x-gateway-overhead-ms.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { bodyText, historyRequest, smallRequest } from './lib/bodies.js';
import { startBackend, startGateway, type ServerContext } from './lib/servers.js';
import { median, percentileSorted } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '40' },
    small: { type: 'boolean', default: false },
    redis: { type: 'string' },
    'max-in-flight': { type: 'string' },
  },
});
const BATCHES = Number(values.batches);
const makeRequest = (id: string) => (values.small ? smallRequest(id) : historyRequest(id));
const here = dirname(fileURLToPath(import.meta.url));

async function post(url: string, body: string): Promise<{ ms: number; overhead: number }> {
  const t0 = performance.now();
  const res = await request(`${url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await res.body.text();
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode} from ${url}`);
  return { ms: performance.now() - t0, overhead: Number(res.headers['x-gateway-overhead-ms'] ?? 0) };
}

function summary(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${median(s).toFixed(1)} ms, p90 ${percentileSorted(s, 90).toFixed(1)} ms`;
}

async function main(): Promise<void> {
  const ctx: ServerContext = {
    tmp: mkdtempSync(join(tmpdir(), 'mgw-single-')),
    benchDir: here,
    gatewayCli: join(here, '../src/cli.js'),
    gatewayLogLevel: 'warn',
    nodeArgs: [],
    extraConfig: {},
    children: new Set(),
  };
  try {
    const backend = await startBackend(ctx, 'backend');
    const maxInFlight = values['max-in-flight'] === undefined ? {} : { max_in_flight: Number(values['max-in-flight']) };
    const gw = await startGateway(ctx, 'gateway', {
      backends: { agent: { url: backend.urls[0]!, timeout_s: 60, ...maxInFlight } },
      routes: [{ name: 'default', backend: 'agent' }],
      ...(values.redis === undefined ? {} : { state: { redis: { url: values.redis, key_prefix: `mgw-bench:${Date.now()}:` } } }),
    });
    const direct: number[] = [];
    const through: number[] = [];
    const overhead: number[] = [];
    for (let i = -5; i < BATCHES; i++) {
      const body = bodyText(makeRequest(`single-${i}-${Date.now()}`));
      const d = await post(backend.urls[0]!, body);
      const g = await post(gw.url, body);
      if (i < 0) continue; // warm-up
      direct.push(d.ms);
      through.push(g.ms);
      overhead.push(g.overhead);
    }
    const kb = Math.round(bodyText(makeRequest('x')).length / 1024);
    const what = values.small ? '1 small input' : '32 inputs x 64 KB memory';
    const store = values.redis === undefined ? 'in-memory store' : `Redis store${values['max-in-flight'] ? ', max_in_flight permits' : ''}`;
    console.log(`one batch at a time, ${what} (${kb} KB request), ${store}, ${BATCHES} batches each:`);
    console.log(`  direct:          ${summary(direct)}`);
    console.log(`  through gateway: ${summary(through)}`);
    console.log(`  added:           p50 ${(median(through) - median(direct)).toFixed(1)} ms; gateway's own time (x-gateway-overhead-ms) ${summary(overhead)}`);
  } finally {
    await Promise.all([...ctx.children].map((c) => c.stop(1000)));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
