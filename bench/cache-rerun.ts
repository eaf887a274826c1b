/**
 * The response cache's closing measurement (docs/cache.md#resume-a-run): the demo's BENCH-like episode
 * (4 trajectories x 3 steps, one batch per step, each input carrying the memory answered the step before,
 * `inference_mode: true`) played twice against one gateway with the cache on, the way a crashed BENCH run is
 * re-run with the same seeds. Prints, per run, the sub-requests and inputs the backends received (read from the
 * gateway's /metrics) and the wall time. Everything starts as a user starts it: the demo agents and the gateway
 * as their own processes (`node dist/src/cli.js --config <file>`).
 *
 *   npm run build && node dist/bench/cache-rerun.js [--runs 2] [--trajectories 4]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseExact, stringifyExact } from '../src/protocol/json/exact-json.js';
import type { AgentOutput, JsonObject } from '../src/protocol/types.js';

const GATEWAY_CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const AGENT = (name: string): string => fileURLToPath(new URL(`../demo/agents/${name}.js`, import.meta.url));
const TOOLS: JsonObject[] = [{ name: 'press_button', description: 'Press a button.', parameters: { id: { type: 'str', description: 'Button name.' } } }];

const children: ChildProcess[] = [];

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i === -1 ? dflt : Number(process.argv[i + 1]);
}

function startAgent(name: string): Promise<string> {
  const child = spawn(process.execPath, [AGENT(name), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      const m = /listening on (http:\/\/\S+)/.exec(d.toString());
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

async function waitReady(base: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/health`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the gateway did not become ready');
}

/** Sum of a counter's series in the gateway's /metrics. */
async function counter(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  return n;
}

/** One episode: a user instruction, the environment's feedback, a follow-up; memory carried forward. */
async function episode(base: string, trajectories: number): Promise<number> {
  let prev: AgentOutput[] = [];
  let hits = 0;
  const steps = [
    (): { type: 'user' | 'env'; content: string } => ({ type: 'user', content: 'Press the button sw0 to open the door.' }),
    (): { type: 'user' | 'env'; content: string } => ({ type: 'env', content: '{"infos": "panda: press_button succeed with message: button sw0 pressed"}' }),
    (): { type: 'user' | 'env'; content: string } => ({ type: 'user', content: 'Thanks. Now press sw1 as well, please.' }),
  ];
  for (const instruction of steps) {
    const inputs = Array.from({ length: trajectories }, (_, id) => ({
      id,
      instruction: instruction(),
      tools: TOOLS,
      attributes: { known_robots: ['panda'] },
      memory: prev[id]?.memory ?? {},
      num_outputs: 1,
      extra_keys: { inference_mode: true },
    }));
    const res = await fetch(`${base}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stringifyExact({ request_id: randomUUID().replace(/-/g, ''), inputs }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text.slice(0, 300)}`);
    hits += Number(res.headers.get('x-gateway-cache-hits') ?? 0);
    prev = parseExact(text).value as AgentOutput[];
    if (prev.some((o) => o.status !== 'completed')) throw new Error('an error candidate');
  }
  return hits;
}

async function main(): Promise<void> {
  const runs = arg('--runs', 2);
  const trajectories = arg('--trajectories', 4);
  const [talker, actor] = await Promise.all([startAgent('talker'), startAgent('actor')]);
  const [port, adminPort] = await Promise.all([freePort(), freePort()]);
  const dir = mkdtempSync(join(tmpdir(), 'magma-cache-rerun-'));
  const config = join(dir, 'gateway.yaml');
  writeFileSync(config, `server: { host: 127.0.0.1, port: ${port} }
admin: { listen: "127.0.0.1:${adminPort}" }
log_level: warn
probe_interval_s: 1
cache: { max_mb: 64, ttl_s: 3600 }
backends:
  talker: { url: "${talker}" }
  actor: { url: "${actor}" }
routes:
  - { name: ab, split: { talker: 50, actor: 50 }, cache: deterministic }
`);
  const gw = spawn(process.execPath, [GATEWAY_CLI, '--config', config], { stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(gw);
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitReady(base);
    process.stdout.write(`demo episode (${trajectories} trajectories x 3 steps), cache on, ${runs} runs against one gateway\n`);
    process.stdout.write('run  sub-requests  inputs sent  cache hits  wall ms\n');
    for (let r = 1; r <= runs; r++) {
      const calls0 = await counter(base, 'magma_gateway_backend_requests_total');
      const inputs0 = await counter(base, 'magma_gateway_inputs_total');
      const t0 = performance.now();
      const hits = await episode(base, trajectories);
      const ms = performance.now() - t0;
      const calls = (await counter(base, 'magma_gateway_backend_requests_total')) - calls0;
      const inputs = (await counter(base, 'magma_gateway_inputs_total')) - inputs0;
      process.stdout.write(`${String(r).padStart(3)}  ${String(calls).padStart(12)}  ${String(inputs).padStart(11)}  ${String(hits).padStart(10)}  ${ms.toFixed(1).padStart(7)}\n`);
    }
  } finally {
    for (const c of children.reverse()) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`cache-rerun failed: ${err instanceof Error ? err.message : String(err)}\n`);
  for (const c of children) c.kill('SIGKILL');
  process.exit(1);
});
