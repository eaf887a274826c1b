/**
 * `npm run bench`: the gateway against direct calls to the backend, a plain @fastify/http-proxy passthrough and
 * (when installed) nginx, on the same fast loopback backend agents, in alternating rounds. Writes
 * bench/results/latest.json and latest.md and prints the table with PASS/FAIL per target.
 *
 *   npm run bench [-- OPTIONS]
 *     --quick              S1+S2 (+S5) only, short phases, 1 round (CI: proves the harness works)
 *     --full               every scenario and the soak
 *     --scenario S1,S3     only these scenarios (S1..S5, and "soak")
 *     --soak               add the S1+S2 soak (default 180 s, --soak-s N)
 *     --duration S --warmup S --rounds N   per-phase measurement
 *     --no-nginx           skip the nginx baseline even when nginx is installed
 *     --log-level L        the gateway's log_level (default warn)
 *     --cpu-prof           run the gateway under `node --cpu-prof` and summarize the hot functions
 *     --gateway-node-args="ARGS"  extra node flags for the gateway process (note the =)
 *     --gateway-extra JSON top-level keys merged into every gateway config, e.g. '{"state":{"replay_max_bytes":1}}'
 *     --out DIR            results directory (default bench/results)
 *
 * Exit code: 1 when the harness could not measure something (a target failed to start or answered wrongly);
 * a figure missing its target never fails the run.
 */
import { execSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { bodyText, historyRequest, ID_PLACEHOLDER, smallRequest, type BenchRequest } from './lib/bodies.js';
import { checkTarget } from './lib/check.js';
import { Child, cpuMs, memInfo, RssSampler, which } from './lib/proc.js';
import { renderMarkdown } from './lib/report.js';
import {
  promSum,
  startBackend,
  startGateway,
  startNginx,
  startNaiveProxy,
  startPassthrough,
  type Running,
  type ServerContext,
} from './lib/servers.js';
import { median, ratio } from './lib/stats.js';
import type {
  BenchResults,
  FloorResult,
  PhaseResult,
  Role,
  ScenarioId,
  ScenarioResult,
  SoakResult,
  TargetCheck,
  TargetSummary,
} from './lib/types.js';
import type { LoadResult, LoadSpec } from './loadgen.js';
import { formatSummary, summarize } from './profile-summary.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..', '..');
const MEMORY_KEY = '_gateway';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    full: { type: 'boolean', default: false },
    soak: { type: 'boolean', default: false },
    'soak-s': { type: 'string' },
    scenario: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    'no-nginx': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
    'cpu-prof': { type: 'boolean', default: false },
    'gateway-extra': { type: 'string' },
    'gateway-node-args': { type: 'string' },
    out: { type: 'string' },
    'keep-tmp': { type: 'boolean', default: false },
  },
});

const ALL: ScenarioId[] = ['S1', 'S2', 'S3', 'S4', 'S5'];
const selected = new Set<string>(
  args.scenario !== undefined
    ? args.scenario.split(',').map((s) => s.trim().toUpperCase())
    : args.quick
      ? ['S1', 'S2', 'S5']
      : ALL,
);
const runSoak = args.soak || args.full || selected.has('SOAK');
const durationS = Number(args.duration ?? (args.quick ? 2 : 5));
const warmupS = Number(args.warmup ?? (args.quick ? 0.5 : 1));
const rounds = Number(args.rounds ?? (args.quick ? 1 : 3));
const soakS = Number(args['soak-s'] ?? 180);
const outDir = resolve(args.out ?? join(ROOT, 'bench', 'results'));

const tmp = mkdtempSync(join(tmpdir(), 'magma-bench-'));
const ctx: ServerContext = {
  tmp,
  benchDir: BENCH_DIR,
  gatewayCli: join(ROOT, 'dist', 'src', 'cli.js'),
  gatewayLogLevel: args['log-level'],
  cpuProfDir: args['cpu-prof'] ? join(tmp, 'profiles') : undefined,
  nodeArgs: (args['gateway-node-args'] ?? '').split(' ').filter((a) => a !== ''),
  extraConfig: args['gateway-extra'] !== undefined ? (JSON.parse(args['gateway-extra']) as Record<string, unknown>) : {},
  children: new Set<Child>(),
};
const nginxPath = args['no-nginx'] ? undefined : which('nginx');
const harnessErrors: string[] = [];

function log(msg: string): void {
  process.stderr.write(`[bench] ${msg}\n`);
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A target of one scenario, ready to be measured. */
interface Prepared {
  id: string;
  label: string;
  role: Role;
  url?: string;
  error?: string;
  body: BenchRequest;
  front: () => number[];
  backend: () => number[];
}

interface Setup {
  targets: Prepared[];
  connections: number;
  params: Record<string, number | string | boolean>;
  teardown: () => Promise<void>;
  /** After the rounds, before teardown: metrics scrapes, replica stats, notes. */
  after?: (res: ScenarioResult) => Promise<void>;
}

// ---------------------------------------------------------------------------------------------- measurement

async function runLoad(
  url: string,
  bodyFile: string,
  connections: number,
  duration: number,
  warm: number,
  onStart?: (loadgenPid: number) => void,
  onEnd?: (loadgenPid: number) => void,
): Promise<LoadResult> {
  const spec: LoadSpec = { url, bodyFile, connections, durationS: duration, warmupS: warm, timeoutS: 120 };
  const lg = new Child('loadgen', process.execPath, [join(BENCH_DIR, 'loadgen.js'), JSON.stringify(spec)]);
  ctx.children.add(lg);
  try {
    const budget = (duration + warm) * 1000 + 150_000;
    await lg.waitLine((l) => l === 'START', budget);
    onStart?.(lg.pid);
    await lg.waitLine((l) => l === 'END', budget);
    onEnd?.(lg.pid);
    const line = await lg.waitLine((l) => l.startsWith('{"result"'), 30_000);
    return (JSON.parse(line) as { result: LoadResult }).result;
  } finally {
    await lg.stop(2000);
    ctx.children.delete(lg);
  }
}

async function measurePhase(t: Prepared, bodyFile: string, connections: number, round: number): Promise<PhaseResult> {
  let front0 = 0;
  let back0 = 0;
  let front1 = 0;
  let back1 = 0;
  let lg0 = 0;
  let lg1 = 0;
  const sampler = new RssSampler(t.front, 100);
  const load1 = loadavg()[0]!;
  const r = await runLoad(
    `${t.url!}/v1/responses`,
    bodyFile,
    connections,
    durationS,
    warmupS,
    (pid) => {
      front0 = cpuMs(t.front());
      back0 = cpuMs(t.backend());
      lg0 = cpuMs([pid]);
      sampler.start();
    },
    (pid) => {
      front1 = cpuMs(t.front());
      back1 = cpuMs(t.backend());
      lg1 = cpuMs([pid]);
      sampler.stop();
    },
  );
  sampler.stop();
  const batches = Math.max(1, r.ok);
  return {
    round,
    rps: r.rps,
    p50: r.latencyMs.p50,
    p90: r.latencyMs.p90,
    p99: r.latencyMs.p99,
    mean: r.latencyMs.mean,
    ok: r.ok,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    frontCpuMsPerBatch: (front1 - front0) / batches,
    backendCpuMsPerBatch: (back1 - back0) / batches,
    loadgenCpuMsPerBatch: (lg1 - lg0) / batches,
    frontRssMaxMb: sampler.maxMb,
    load1,
  };
}

async function runScenario(id: ScenarioId, title: string, setup: Setup): Promise<ScenarioResult> {
  const res: ScenarioResult = { id, title, params: { ...setup.params, connections: setup.connections }, targets: [], notes: [], extra: {} };
  const summaries = new Map<string, TargetSummary>();
  const live: { t: Prepared; file: string }[] = [];
  for (const t of setup.targets) {
    const s: TargetSummary = { id: t.id, label: t.label, role: t.role, rounds: [] };
    summaries.set(t.id, s);
    res.targets.push(s);
    if (t.error !== undefined || t.url === undefined) {
      s.error = t.error ?? 'not started';
      harnessErrors.push(`${id} ${t.label}: ${s.error}`);
      continue;
    }
    const c = await checkTarget(`${t.url}/v1/responses`, t.body, MEMORY_KEY);
    s.check = { ok: c.ok, problems: c.problems, candidates: c.candidates, bytes: c.bytes, tags: c.tags };
    if (!c.ok) {
      s.error = `wrong answer: ${c.problems.join('; ')}`;
      harnessErrors.push(`${id} ${t.label}: ${s.error}`);
      continue;
    }
    const file = join(tmp, `${id}-${t.id}.json`);
    writeFileSync(file, bodyText({ ...t.body, request_id: `bench-${ID_PLACEHOLDER}` }));
    live.push({ t, file });
  }
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? live : [...live].reverse();
    for (const { t, file } of order) {
      const s = summaries.get(t.id)!;
      if (s.error !== undefined) continue;
      log(`${id} round ${round + 1}/${rounds}: ${t.label}`);
      try {
        const p = await measurePhase(t, file, setup.connections, round);
        s.rounds.push(p);
        if (p.non2xx > 0 || p.errors > 0) {
          res.notes.push(`${t.label} round ${round + 1}: ${p.non2xx} non-2xx, ${p.errors} errors, ${p.timeouts} timeouts`);
        }
      } catch (err) {
        s.error = errText(err);
        harnessErrors.push(`${id} ${t.label}: ${s.error}`);
      }
    }
  }
  for (const { t } of live) {
    const s = summaries.get(t.id)!;
    if (s.rounds.length === 0) continue;
    const rs = s.rounds;
    s.median = {
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      mean: median(rs.map((r) => r.mean)),
      frontCpuMsPerBatch: median(rs.map((r) => r.frontCpuMsPerBatch)),
      backendCpuMsPerBatch: median(rs.map((r) => r.backendCpuMsPerBatch)),
      loadgenCpuMsPerBatch: median(rs.map((r) => r.loadgenCpuMsPerBatch)),
      frontRssMaxMb: Math.max(...rs.map((r) => r.frontRssMaxMb)),
      frontHwmMb: memInfo(t.front()).hwmMb,
      rpsMin: Math.min(...rs.map((r) => r.rps)),
      rpsMax: Math.max(...rs.map((r) => r.rps)),
    };
  }
  const direct = res.targets.find((t) => t.role === 'direct' && t.median !== undefined);
  for (const s of res.targets) {
    if (s.median === undefined || direct?.median === undefined || s === direct) continue;
    s.addedP50Ms = s.median.p50 - direct.median.p50;
    s.addedP99Ms = s.median.p99 - direct.median.p99;
  }
  if (setup.after) {
    try {
      await setup.after(res);
    } catch (err) {
      res.notes.push(`post-run inspection failed: ${errText(err)}`);
    }
  }
  return res;
}

function byId(s: ScenarioResult | undefined, id: string): TargetSummary | undefined {
  return s?.targets.find((t) => t.id === id);
}

async function gatewayMetrics(url: string): Promise<string> {
  const r = await request(`${url}/metrics`);
  return r.body.text();
}

async function errorCandidates(gw: Running | undefined): Promise<number | undefined> {
  if (gw === undefined) return undefined;
  try {
    const text = await gatewayMetrics(gw.url);
    return promSum(text, 'magma_gateway_candidates_total', 'status="error"');
  } catch {
    return undefined;
  }
}

/** Error candidates per code from the gateway's metrics, e.g. `{gateway_backend_timeout: 26}`. */
async function errorCodes(gw: Running | undefined): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (gw === undefined) return out;
  try {
    const text = await gatewayMetrics(gw.url);
    for (const m of text.matchAll(/^magma_gateway_candidate_errors_total\{([^}]*)\} (\S+)$/gm)) {
      const code = /code="([^"]*)"/.exec(m[1]!)?.[1] ?? '?';
      out[code] = (out[code] ?? 0) + Number(m[2]);
    }
  } catch {
    // metrics are a diagnosis aid only
  }
  return out;
}

/**
 * Notes on error candidates. The load generator closes its connections at the end of each run (warm-up and
 * measured), aborting the batches in flight: up to connections x candidates per batch per run are expected.
 */
async function noteErrors(res: ScenarioResult, gw: Running | undefined, connections: number, perBatch: number): Promise<void> {
  const n = await errorCandidates(gw);
  if (n === undefined) return;
  const codes = await errorCodes(gw);
  const runs = res.targets.find((t) => t.role === 'gateway')?.rounds.length ?? 0;
  const bound = connections * perBatch * runs * (warmupS > 0 ? 2 : 1);
  res.extra.gatewayErrorCandidates = n;
  res.extra.gatewayErrorCodes = codes;
  if (n > 0) {
    const list = Object.entries(codes).map(([c, v]) => `${c} ${v}`).join(', ');
    res.notes.push(
      n <= bound
        ? `gateway error candidates: ${n} (${list}); at most ${bound} are expected from batches aborted when the load generator disconnects at the end of each run`
        : `**the gateway produced ${n} error candidates under load (${list})**, more than the ${bound} explained by disconnects at run ends`,
    );
  }
}

async function stopAll(list: (Child | undefined)[]): Promise<void> {
  await Promise.all(list.map((c) => c?.stop(c.name.includes('gateway') ? 15_000 : 3000)));
}

// ---------------------------------------------------------------------------------------------- scenarios

async function tryStart<T>(what: string, fn: () => Promise<T>): Promise<T | string> {
  try {
    return await fn();
  } catch (err) {
    log(`${what} failed to start: ${errText(err).split('\n')[0]}`);
    return `${what} failed to start: ${errText(err)}`;
  }
}

/** S1 and S2: one backend, direct vs passthrough vs nginx vs gateway. */
async function setupProxyScenario(id: 'S1' | 'S2', body: BenchRequest, connections: number): Promise<Setup> {
  const name = id.toLowerCase();
  const backend = await startBackend(ctx, `${name}-backend`);
  const up = backend.urls[0]!;
  const backendPids = (): number[] => [backend.child.pid];
  const proxy = await tryStart('passthrough', () => startPassthrough(ctx, `${name}-passthrough`, up));
  const naive = await tryStart('naive proxy', () => startNaiveProxy(ctx, `${name}-naive`, up));
  const nginx = nginxPath === undefined ? undefined : await tryStart('nginx', () => startNginx(ctx, `${name}-nginx`, nginxPath, up));
  const gateway = await tryStart('gateway', () =>
    startGateway(ctx, `${name}-gateway`, {
      backends: { agent: { url: up } },
      routes: [{ name: 'default', backend: 'agent' }],
    }),
  );
  const targets: Prepared[] = [
    { id: 'direct', label: 'direct (backend)', role: 'direct', url: up, body, front: backendPids, backend: backendPids },
  ];
  const add = (tid: string, label: string, role: Role, r: Running | string | undefined): void => {
    if (r === undefined) return;
    if (typeof r === 'string') targets.push({ id: tid, label, role, error: r, body, front: () => [], backend: backendPids });
    else targets.push({ id: tid, label, role, url: r.url, body, front: r.pids, backend: backendPids });
  };
  add('passthrough', '@fastify/http-proxy passthrough', 'baseline', proxy);
  add('naive', 'naive JSON proxy (reference)', 'baseline', naive);
  add('nginx', 'nginx (1 worker)', 'baseline', nginx);
  add('gateway', 'magma-gateway', 'gateway', gateway);
  const gw = typeof gateway === 'string' ? undefined : gateway;
  return {
    targets,
    connections,
    params: { inputs: body.inputs.length, requestKb: Math.round(bodyText(body).length / 1024) },
    after: async (res) => {
      await noteErrors(res, gw, connections, body.inputs.length);
      const g = byId(res, 'gateway');
      const tags = g?.check?.tags;
      if (tags !== undefined) res.extra.gatewayMemoryTags = tags;
      if (g?.check?.ok === true && Object.keys(tags ?? {}).length === 0) {
        res.notes.push(`the gateway's answer carries no memory.${MEMORY_KEY} tag (docs/gateway-behaviour.md, "The memory tag")`);
      }
      const p = byId(res, 'passthrough')?.median;
      const ng = byId(res, 'nginx')?.median;
      const d = byId(res, 'direct')?.median;
      const nv = byId(res, 'naive')?.median;
      const gm = g?.median;
      res.extra.ratios = {
        'gateway/passthrough req/s': ratio(gm?.rps, p?.rps),
        'gateway/nginx req/s': ratio(gm?.rps, ng?.rps),
        'gateway/direct req/s': ratio(gm?.rps, d?.rps),
        'gateway/naive proxy req/s': ratio(gm?.rps, nv?.rps),
        'naive proxy/passthrough req/s': ratio(nv?.rps, p?.rps),
        'gateway/passthrough p99': ratio(gm?.p99, p?.p99),
        'gateway/nginx p99': ratio(gm?.p99, ng?.p99),
        'gateway/passthrough CPU per batch': ratio(gm?.frontCpuMsPerBatch, p?.frontCpuMsPerBatch),
      };
    },
    teardown: () =>
      stopAll([
        backend.child,
        typeof proxy === 'string' ? undefined : proxy.child,
        typeof naive === 'string' ? undefined : naive.child,
        nginx === undefined || typeof nginx === 'string' ? undefined : nginx.child,
        gw?.child,
      ]),
  };
}

const S3 = { replicas: 4, inputs: 32, baseMs: 50, perInputMs: 5 };
const S4 = { candidates: 8, baseMs: 20, perCandidateMs: 5 };

async function replicaStats(urls: string[]): Promise<{ requests: number; inputs: number }[]> {
  return Promise.all(
    urls.map(async (u) => {
      const r = await request(`${u}/bench/stats`);
      return (await r.body.json()) as { requests: number; inputs: number };
    }),
  );
}

/** S3: 32 inputs over 4 slow replicas behind the gateway vs 1 replica direct. */
async function setupS3(): Promise<Setup> {
  const timing = { baseMs: S3.baseMs, perInputMs: S3.perInputMs };
  const direct = await startBackend(ctx, 's3-direct', { ports: 1, ...timing });
  const replicas = await startBackend(ctx, 's3-replicas', { ports: S3.replicas, ...timing });
  const gateway = await tryStart('gateway', () =>
    startGateway(ctx, 's3-gateway', {
      backends: { agent: { urls: replicas.urls } },
      routes: [{ name: 'default', backend: 'agent' }],
    }),
  );
  const share = Math.ceil(S3.inputs / S3.replicas);
  const body = smallRequest('bench-s3', 1, S3.inputs);
  const shareBody = smallRequest('bench-s3-share', 1, share);
  const dPids = (): number[] => [direct.child.pid];
  const rPids = (): number[] => [replicas.child.pid];
  const targets: Prepared[] = [
    { id: 'direct', label: `1 replica direct (${S3.inputs} inputs)`, role: 'direct', url: direct.urls[0], body, front: dPids, backend: dPids },
    { id: 'share', label: `1 replica direct, ${share} inputs (ideal share)`, role: 'baseline', url: direct.urls[0], body: shareBody, front: dPids, backend: dPids },
  ];
  const gw = typeof gateway === 'string' ? undefined : gateway;
  if (typeof gateway === 'string') targets.push({ id: 'gateway', label: `gateway, ${S3.replicas} replicas`, role: 'gateway', error: gateway, body, front: () => [], backend: rPids });
  else targets.push({ id: 'gateway', label: `gateway, ${S3.replicas} replicas`, role: 'gateway', url: gateway.url, body, front: gateway.pids, backend: rPids });
  const ideal = S3.baseMs + share * S3.perInputMs;
  return {
    targets,
    connections: 1,
    params: { ...S3, idealMakespanMs: ideal, singleReplicaMs: S3.baseMs + S3.inputs * S3.perInputMs },
    after: async (res) => {
      const stats = await replicaStats(replicas.urls);
      const batches = (byId(res, 'gateway')?.rounds.reduce((a, r) => a + r.ok, 0) ?? 0) + 1; // +1: the check
      res.extra.replicaStats = stats;
      res.notes.push(
        `sub-requests per replica (all gateway traffic incl. warm-up): ${stats.map((s) => `${s.requests} req/${s.inputs} inputs`).join(', ')}; ` +
          `measured gateway batches ${batches}`,
      );
      const g = byId(res, 'gateway')?.median;
      const d = byId(res, 'direct')?.median;
      const sh = byId(res, 'share')?.median;
      res.extra.ratios = {
        'gateway p50 / ideal 90 ms': ratio(g?.p50, ideal),
        'gateway p50 / measured share p50': ratio(g?.p50, sh?.p50),
        'speed-up vs 1 replica (p50)': ratio(d?.p50, g?.p50),
      };
      await noteErrors(res, gw, 1, S3.inputs);
    },
    teardown: () => stopAll([direct.child, replicas.child, gw?.child]),
  };
}

/** S4: 8 candidates from an ensemble of two backends vs 8 (and the 4-candidate share) from one, direct. */
async function setupS4(): Promise<Setup> {
  const timing = { baseMs: S4.baseMs, perCandidateMs: S4.perCandidateMs };
  const direct = await startBackend(ctx, 's4-direct', { ports: 1, ...timing });
  const members = await startBackend(ctx, 's4-members', { ports: 2, ...timing });
  const gateway = await tryStart('gateway', () =>
    startGateway(ctx, 's4-gateway', {
      backends: { a: { url: members.urls[0]! }, b: { url: members.urls[1]! } },
      routes: [{ name: 'ensemble', ensemble: { a: 1, b: 1 }, sticky: false }],
    }),
  );
  const share = S4.candidates / 2;
  const body = smallRequest('bench-s4', S4.candidates, 1);
  const shareBody = smallRequest('bench-s4-share', share, 1);
  const dPids = (): number[] => [direct.child.pid];
  const mPids = (): number[] => [members.child.pid];
  const gw = typeof gateway === 'string' ? undefined : gateway;
  const targets: Prepared[] = [
    { id: 'direct', label: `1 backend direct, ${S4.candidates} candidates`, role: 'direct', url: direct.urls[0], body, front: dPids, backend: dPids },
    { id: 'share', label: `1 backend direct, ${share} candidates (one member's share)`, role: 'baseline', url: direct.urls[0], body: shareBody, front: dPids, backend: dPids },
  ];
  if (typeof gateway === 'string') targets.push({ id: 'gateway', label: 'gateway ensemble a:1 b:1', role: 'gateway', error: gateway, body, front: () => [], backend: mPids });
  else targets.push({ id: 'gateway', label: 'gateway ensemble a:1 b:1', role: 'gateway', url: gateway.url, body, front: gateway.pids, backend: mPids });
  return {
    targets,
    connections: 1,
    params: { ...S4, memberShareMs: S4.baseMs + share * S4.perCandidateMs },
    after: async (res) => {
      const stats = await replicaStats(members.urls);
      res.extra.memberStats = stats;
      res.notes.push(`candidates served per member: a ${stats[0]!.inputs} inputs/${stats[0]!.requests} req, b ${stats[1]!.inputs} inputs/${stats[1]!.requests} req`);
      const tags = byId(res, 'gateway')?.check?.tags;
      if (tags !== undefined) res.extra.gatewayMemoryTags = tags;
      const g = byId(res, 'gateway')?.median;
      const sh = byId(res, 'share')?.median;
      const d = byId(res, 'direct')?.median;
      res.extra.ratios = {
        'gateway p50 / share p50': ratio(g?.p50, sh?.p50),
        'gateway p50 / 8-from-one p50': ratio(g?.p50, d?.p50),
      };
      await noteErrors(res, gw, 1, S4.candidates);
    },
    teardown: () => stopAll([direct.child, members.child, gw?.child]),
  };
}

async function runFloor(): Promise<FloorResult & { error?: string }> {
  const c = new Child('json-floor', process.execPath, [join(BENCH_DIR, 'json-path.js'), '--floor', ...(args.quick ? ['--quick'] : [])]);
  ctx.children.add(c);
  try {
    const line = await c.waitLine((l) => l.startsWith('{"floor"'), 120_000);
    const fl = (JSON.parse(line) as { floor: FloorResult }).floor;
    return { ...fl, parts: fl.parts.map((p) => ({ name: p.name, ms: p.ms, cpuMs: p.cpuMs })) };
  } catch (err) {
    return { requestBytes: 0, responseBytes: 0, ms: Number.NaN, cpuMs: Number.NaN, parts: [], error: errText(err) };
  } finally {
    await c.stop();
    ctx.children.delete(c);
  }
}

async function runSoakPhase(): Promise<SoakResult> {
  const backend = await startBackend(ctx, 'soak-backend');
  const gateway = await tryStart('gateway', () =>
    startGateway(ctx, 'soak-gateway', {
      backends: { agent: { url: backend.urls[0]! } },
      routes: [{ name: 'default', backend: 'agent' }],
    }),
  );
  const empty = { rps: Number.NaN, p99: Number.NaN, non2xx: 0, errors: 0 };
  if (typeof gateway === 'string') {
    await stopAll([backend.child]);
    return { seconds: soakS, warmupS: 0, rssAfterWarmupMb: Number.NaN, rssEndMb: Number.NaN, growthPct: Number.NaN, peakMb: Number.NaN, s1: empty, s2: empty, series: [], error: gateway };
  }
  const f1 = join(tmp, 'soak-s1.json');
  const f2 = join(tmp, 'soak-s2.json');
  writeFileSync(f1, bodyText(smallRequest(`bench-${ID_PLACEHOLDER}`)));
  writeFileSync(f2, bodyText(historyRequest(`bench-${ID_PLACEHOLDER}`, 32, 64)));
  const sampler = new RssSampler(gateway.pids, 1000).start();
  try {
    log(`soak: S1 (32 connections) + S2 (4 connections) for ${soakS} s`);
    const url = `${gateway.url}/v1/responses`;
    const [r1, r2] = await Promise.all([runLoad(url, f1, 32, soakS, 0), runLoad(url, f2, 4, soakS, 0)]);
    sampler.stop();
    const warm = Math.min(30, soakS / 6) * 1000;
    const win = Math.min(30, soakS / 6) * 1000;
    const total = sampler.samples.at(-1)?.t ?? 0;
    const inWin = (a: number, b: number): number => median(sampler.samples.filter((s) => s.t >= a && s.t < b).map((s) => s.rssMb));
    const after = inWin(warm, warm + win);
    const end = inWin(total - win, total + 1);
    const series: [number, number][] = sampler.samples.filter((_, i) => i % 5 === 0).map((s) => [s.t / 1000, s.rssMb]);
    return {
      seconds: soakS,
      warmupS: warm / 1000,
      rssAfterWarmupMb: after,
      rssEndMb: end,
      growthPct: (end / after - 1) * 100,
      peakMb: memInfo(gateway.pids()).hwmMb,
      s1: { rps: r1.rps, p99: r1.latencyMs.p99, non2xx: r1.non2xx, errors: r1.errors },
      s2: { rps: r2.rps, p99: r2.latencyMs.p99, non2xx: r2.non2xx, errors: r2.errors },
      series,
      errorCandidates: await errorCandidates(gateway),
    };
  } finally {
    sampler.stop();
    await stopAll([backend.child, gateway.child]);
  }
}

// ---------------------------------------------------------------------------------------------- targets

function evaluate(scen: ScenarioResult[], floorRes: FloorResult | undefined, soak: SoakResult | undefined): TargetCheck[] {
  const out: TargetCheck[] = [];
  const get = (id: ScenarioId): ScenarioResult | undefined => scen.find((s) => s.id === id);
  const check = (
    id: string,
    description: string,
    value: number,
    op: '>=' | '<=' | 'info',
    limit: number | null,
    unit: string,
    detail: string,
    ran: boolean,
  ): void => {
    const measured = Number.isFinite(value);
    let verdict: TargetCheck['verdict'];
    if (!ran || !measured) verdict = 'NOT RUN';
    else if (op === 'info' || limit === null) verdict = 'INFO';
    else verdict = (op === '>=' ? value >= limit : value <= limit) ? 'PASS' : 'FAIL';
    out.push({ id, description, value: measured ? value : null, limit, op, unit, verdict, detail });
  };

  const s1 = get('S1');
  const g1 = byId(s1, 'gateway')?.median;
  const p1 = byId(s1, 'passthrough')?.median;
  const n1 = byId(s1, 'nginx')?.median;
  check('S1-rps', 'S1 gateway req/s >= 1.5x @fastify/http-proxy passthrough', ratio(g1?.rps, p1?.rps), '>=', 1.5, 'x',
    `gateway ${g1?.rps.toFixed(0) ?? '–'} vs passthrough ${p1?.rps.toFixed(0) ?? '–'} req/s`, s1 !== undefined);
  check('S1-nginx', 'S1 gateway req/s vs nginx (reported)', ratio(g1?.rps, n1?.rps), 'info', null, 'x',
    nginxPath === undefined ? 'nginx not installed' : `gateway ${g1?.rps.toFixed(0) ?? '–'} vs nginx ${n1?.rps.toFixed(0) ?? '–'} req/s`, s1 !== undefined && nginxPath !== undefined);
  check('S1-p99', 'S1 gateway p99 <= passthrough p99', ratio(g1?.p99, p1?.p99), '<=', 1, 'x',
    `gateway ${g1?.p99.toFixed(2) ?? '–'} ms vs passthrough ${p1?.p99.toFixed(2) ?? '–'} ms`, s1 !== undefined);

  const s2 = get('S2');
  const g2 = byId(s2, 'gateway')?.median;
  check('S2-cpu', 'S2 gateway CPU per batch <= 2.5x S5 JSON floor', ratio(g2?.frontCpuMsPerBatch, floorRes?.cpuMs), '<=', 2.5, 'x',
    `gateway ${g2?.frontCpuMsPerBatch.toFixed(1) ?? '–'} CPU ms/batch vs floor ${floorRes?.cpuMs.toFixed(1) ?? '–'} ms`, s2 !== undefined && floorRes !== undefined);

  const s3 = get('S3');
  const g3 = byId(s3, 'gateway')?.median;
  const d3 = byId(s3, 'direct')?.median;
  const ideal = S3.baseMs + Math.ceil(S3.inputs / S3.replicas) * S3.perInputMs;
  check('S3-makespan', `S3 gateway batch p50 <= 1.15x ideal makespan (${ideal} ms)`, ratio(g3?.p50, ideal), '<=', 1.15, 'x',
    `gateway p50 ${g3?.p50.toFixed(1) ?? '–'} ms, p99 ${g3?.p99.toFixed(1) ?? '–'} ms`, s3 !== undefined);
  check('S3-speedup', 'S3 speed-up vs 1 replica direct >= 2.3x (issue\'s "i.e."; stricter: needs <= 91 ms)', ratio(d3?.p50, g3?.p50), '>=', 2.3, 'x',
    `1 replica ${d3?.p50.toFixed(1) ?? '–'} ms vs gateway ${g3?.p50.toFixed(1) ?? '–'} ms (1.15x of ideal = ${(((S3.baseMs + S3.inputs * S3.perInputMs) / (1.15 * ideal))).toFixed(2)}x)`, s3 !== undefined);

  const s4 = get('S4');
  const g4 = byId(s4, 'gateway')?.median;
  const sh4 = byId(s4, 'share')?.median;
  check('S4-ensemble', 'S4 ensemble p50 <= 1.2x one member\'s p50 for its share', ratio(g4?.p50, sh4?.p50), '<=', 1.2, 'x',
    `gateway ${g4?.p50.toFixed(1) ?? '–'} ms vs member share ${sh4?.p50.toFixed(1) ?? '–'} ms`, s4 !== undefined);

  const hwm = byId(s2, 'gateway')?.median?.frontHwmMb;
  check('MEM-S2', 'peak gateway RSS during S2 <= 300 MB', hwm ?? Number.NaN, '<=', 300, ' MB', 'VmHWM of a gateway started for S2', s2 !== undefined);
  check('MEM-soak', `gateway RSS growth after warm-up over a ${soakS} s S1+S2 soak <= 10%`, soak?.growthPct ?? Number.NaN, '<=', 10, '%',
    soak === undefined ? 'run with --soak or --full' : soak.error ?? `${soak.rssAfterWarmupMb.toFixed(0)} → ${soak.rssEndMb.toFixed(0)} MB`, soak !== undefined);
  return out;
}

// ---------------------------------------------------------------------------------------------- main

function gitInfo(): { commit: string; dirty: boolean } {
  try {
    const commit = execSync('git rev-parse --short HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain', { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}

async function main(): Promise<number> {
  const t0 = Date.now();
  const loadStart = loadavg();
  log(`scenarios ${[...selected].join(',')}${runSoak ? ' + soak' : ''}; ${rounds} round(s) x ${durationS} s (+${warmupS} s warm-up); nginx ${nginxPath ?? 'not installed'}; scratch ${tmp}`);
  if (ctx.cpuProfDir !== undefined) mkdirSync(ctx.cpuProfDir, { recursive: true });
  const scenarios: ScenarioResult[] = [];
  const plan: { id: ScenarioId; title: string; setup: () => Promise<Setup> }[] = [
    { id: 'S1', title: 'small: 1 input, ~1 KB, instant backend', setup: () => setupProxyScenario('S1', smallRequest('bench-s1'), 32) },
    { id: 'S2', title: 'BENCH-like: 32 inputs x 64 KB history memory; memory +1 step and 8 KB internal_steps back', setup: () => setupProxyScenario('S2', historyRequest('bench-s2', 32, 64), 4) },
    { id: 'S3', title: `sharding: ${S3.inputs} inputs, replicas take ${S3.baseMs} ms + ${S3.perInputMs} ms/input`, setup: setupS3 },
    { id: 'S4', title: `ensemble: 1 input x ${S4.candidates} candidates from two backends (${S4.baseMs} ms + ${S4.perCandidateMs} ms/candidate)`, setup: setupS4 },
  ];
  for (const p of plan) {
    if (!selected.has(p.id)) continue;
    log(`${p.id}: ${p.title}`);
    let setup: Setup | undefined;
    try {
      setup = await p.setup();
      scenarios.push(await runScenario(p.id, p.title, setup));
    } catch (err) {
      harnessErrors.push(`${p.id}: ${errText(err)}`);
      log(`${p.id} failed: ${errText(err)}`);
    } finally {
      await setup?.teardown();
    }
  }
  let floorRes: (FloorResult & { error?: string }) | undefined;
  if (selected.has('S5') || selected.has('S2')) {
    log('S5: JSON floor');
    floorRes = await runFloor();
    if (floorRes.error !== undefined) harnessErrors.push(`S5: ${floorRes.error}`);
  }
  let soak: SoakResult | undefined;
  if (runSoak) {
    soak = await runSoakPhase();
    if (soak.error !== undefined) harnessErrors.push(`soak: ${soak.error}`);
  }
  const targets = evaluate(scenarios, floorRes?.error === undefined ? floorRes : undefined, soak);
  const git = gitInfo();
  const results: BenchResults = {
    meta: {
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memGb: totalmem() / 1024 ** 3,
      commit: git.commit,
      dirty: git.dirty,
      args: process.argv.slice(2),
      mode: args.quick ? 'quick' : args.full ? 'full' : 'default',
      durationS,
      warmupS,
      rounds,
      gatewayLogLevel: ctx.gatewayLogLevel,
      gatewayExtra: ctx.extraConfig,
      gatewayNodeArgs: ctx.nodeArgs,
      nginx: nginxPath ?? null,
      loadAvgStart: loadStart,
      loadAvgEnd: loadavg(),
      wallS: (Date.now() - t0) / 1000,
    },
    scenarios,
    floor: floorRes,
    soak,
    targets,
    harnessErrors,
  };
  if (ctx.cpuProfDir !== undefined) {
    results.profiles = [];
    for (const f of readdirSync(ctx.cpuProfDir).filter((n) => n.endsWith('.cpuprofile')).sort()) {
      const src = join(ctx.cpuProfDir, f);
      const dest = join(outDir, f);
      mkdirSync(outDir, { recursive: true });
      copyFileSync(src, dest);
      try {
        results.profiles.push({ scenario: f.replace('.cpuprofile', ''), file: dest, summary: formatSummary(summarize(dest, 25)) });
      } catch (err) {
        results.profiles.push({ scenario: f, file: dest, summary: `could not summarize: ${errText(err)}` });
      }
    }
  }
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'latest.json'), JSON.stringify(results, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
  const md = renderMarkdown(results);
  writeFileSync(join(outDir, 'latest.md'), md);
  process.stdout.write(md + '\n');
  log(`wrote ${join(outDir, 'latest.json')} and latest.md in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return harnessErrors.length > 0 ? 1 : 0;
}

async function cleanup(): Promise<void> {
  await Promise.all([...ctx.children].map((c) => c.stop(c.name.includes('gateway') ? 15_000 : 2000)));
  if (!args['keep-tmp']) rmSync(tmp, { recursive: true, force: true });
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    log(`${sig}: stopping`);
    void cleanup().then(() => process.exit(130));
  });
}

main().then(
  async (code) => {
    await cleanup();
    process.exit(code);
  },
  async (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await cleanup();
    process.exit(1);
  },
);
