/**
 * The bench's load generator, run in its own process: autocannon (closed loop, N keep-alive connections)
 * POSTing one body with a fresh request_id per request (`[<id>]` replaced), latencies recorded per response
 * in microsecond precision (autocannon's own histogram keeps whole milliseconds only).
 *
 *   node dist/bench/loadgen.js '<json LoadSpec>'
 *
 * Stdout protocol, one line each: `START` when the measured phase begins (after warm-up), `END` as soon as it
 * is over (the parent reads process CPU on these two lines), then `{"result": LoadResult}`.
 */
import autocannon, { type Options, type Result } from 'autocannon';
import { readFileSync } from 'node:fs';
import { Samples, mean, percentileSorted } from './lib/stats.js';

export interface LoadSpec {
  url: string;
  bodyFile: string;
  connections: number;
  durationS: number;
  warmupS: number;
  timeoutS: number;
}

export interface LoadResult {
  /** 2xx responses completed in the measured phase. */
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Wall time of the measured phase, seconds. */
  seconds: number;
  rps: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Response bytes per second. */
  bytesPerS: number;
  /** A few non-2xx status codes seen, for diagnosis. */
  statuses: Record<string, number>;
}

function run(opts: Options, onResponse?: (status: number, bytes: number, ms: number) => void): Promise<Result> {
  return new Promise((resolve, reject) => {
    const inst = autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
    if (onResponse) {
      inst.on('response', (_client: unknown, status: number, bytes: number, ms: number) => onResponse(status, bytes, ms));
    }
  });
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
  const body = readFileSync(spec.bodyFile, 'utf8');
  const base: Options = {
    url: spec.url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    idReplacement: body.includes('[<id>]'),
    connections: spec.connections,
    pipelining: 1,
    timeout: spec.timeoutS,
  };
  if (spec.warmupS > 0) await run({ ...base, duration: spec.warmupS });

  const lat = new Samples();
  const statuses: Record<string, number> = {};
  let bytes = 0;
  let non2xx = 0;
  process.stdout.write('START\n');
  const t0 = performance.now();
  const result = await run({ ...base, duration: spec.durationS }, (status, n, ms) => {
    if (status >= 200 && status < 300) {
      lat.push(ms);
      bytes += n;
    } else {
      non2xx++;
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  });
  const seconds = (performance.now() - t0) / 1000;
  process.stdout.write('END\n');

  const sorted = lat.sorted();
  const out: LoadResult = {
    ok: lat.length,
    non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    seconds,
    rps: lat.length / seconds,
    latencyMs: {
      mean: mean(sorted),
      p50: percentileSorted(sorted, 50),
      p90: percentileSorted(sorted, 90),
      p99: percentileSorted(sorted, 99),
      max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
    },
    bytesPerS: bytes / seconds,
    statuses,
  };
  process.stdout.write(JSON.stringify({ result: out }) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`loadgen: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
