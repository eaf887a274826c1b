/** Measuring the targets of one scenario: the correctness check, then alternating rounds of load, then medians. */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { LoadResult, LoadSpec } from '../loadgen.js';
import { bodyText, ID_PLACEHOLDER, type BenchRequest } from './bodies.js';
import { checkTarget } from './check.js';
import { Child, cpuMs, memInfo, RssSampler } from './proc.js';
import { errText, log, type RunContext } from './run-context.js';
import { median } from './stats.js';
import type { PhaseResult, Role, ScenarioId, ScenarioResult, TargetSummary } from './types.js';

/** The key of the gateway's own tag in memory (docs/routing.md#the-memory-key-and-stickiness). */
export const MEMORY_KEY = '_gateway';

/** A target of one scenario, ready to be measured. */
export interface Prepared {
  id: string;
  label: string;
  role: Role;
  url?: string;
  error?: string;
  body: BenchRequest;
  front: () => number[];
  backend: () => number[];
}

export interface Setup {
  targets: Prepared[];
  connections: number;
  params: Record<string, number | string | boolean>;
  teardown: () => Promise<void>;
  /** After the rounds, before teardown: metrics scrapes, replica stats, notes. */
  after?: (res: ScenarioResult) => Promise<void>;
}

/**
 * Runs a driver script (loadgen.js, waves.js) in its own process with its spec as JSON: `onStart` and `onEnd`
 * when it prints START and END (the measured part), then its `{"result": ...}` line.
 */
export async function runDriver<T>(
  run: RunContext,
  script: string,
  spec: object,
  budgetMs: number,
  onStart?: (driverPid: number) => void,
  onEnd?: (driverPid: number) => void,
): Promise<T> {
  const name = script.replace(/\.js$/, '');
  const child = new Child(name, process.execPath, [join(run.server.benchDir, script), JSON.stringify(spec)]);
  run.server.children.add(child);
  try {
    await child.waitLine((l) => l === 'START', budgetMs);
    onStart?.(child.pid);
    await child.waitLine((l) => l === 'END', budgetMs);
    onEnd?.(child.pid);
    const line = await child.waitLine((l) => l.startsWith('{"result"'), 30_000);
    // The driver's own result type, written by it as one JSON line.
    return (JSON.parse(line) as { result: T }).result;
  } finally {
    await child.stop(2000);
    run.server.children.delete(child);
  }
}

export function runLoad(
  run: RunContext,
  url: string,
  bodyFile: string,
  connections: number,
  duration: number,
  warm: number,
  onStart?: (loadgenPid: number) => void,
  onEnd?: (loadgenPid: number) => void,
): Promise<LoadResult> {
  const spec: LoadSpec = { url, bodyFile, connections, durationS: duration, warmupS: warm, timeoutS: 120 };
  return runDriver<LoadResult>(run, 'loadgen.js', spec, (duration + warm) * 1000 + 150_000, onStart, onEnd);
}

async function measurePhase(run: RunContext, t: Prepared, bodyFile: string, connections: number, round: number): Promise<PhaseResult> {
  let front0 = 0;
  let back0 = 0;
  let front1 = 0;
  let back1 = 0;
  let lg0 = 0;
  let lg1 = 0;
  const sampler = new RssSampler(t.front, 100);
  const load1 = loadavg()[0]!;
  const r = await runLoad(
    run,
    `${t.url!}/v1/responses`,
    bodyFile,
    connections,
    run.opts.durationS,
    run.opts.warmupS,
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

export async function runScenario(run: RunContext, id: ScenarioId, title: string, setup: Setup): Promise<ScenarioResult> {
  const res: ScenarioResult = { id, title, params: { ...setup.params, connections: setup.connections }, targets: [], notes: [], extra: {} };
  const summaries = new Map<string, TargetSummary>();
  const live: { t: Prepared; file: string }[] = [];
  for (const t of setup.targets) {
    const s: TargetSummary = { id: t.id, label: t.label, role: t.role, rounds: [] };
    summaries.set(t.id, s);
    res.targets.push(s);
    if (t.error !== undefined || t.url === undefined) {
      s.error = t.error ?? 'not started';
      run.harnessErrors.push(`${id} ${t.label}: ${s.error}`);
      continue;
    }
    const c = await checkTarget(`${t.url}/v1/responses`, t.body, MEMORY_KEY);
    s.check = { ok: c.ok, problems: c.problems, candidates: c.candidates, bytes: c.bytes, tags: c.tags };
    if (!c.ok) {
      s.error = `wrong answer: ${c.problems.join('; ')}`;
      run.harnessErrors.push(`${id} ${t.label}: ${s.error}`);
      continue;
    }
    const file = join(run.server.tmp, `${id}-${t.id}.json`);
    writeFileSync(file, bodyText({ ...t.body, request_id: `bench-${ID_PLACEHOLDER}` }));
    live.push({ t, file });
  }
  for (let round = 0; round < run.opts.rounds; round++) {
    const order = round % 2 === 0 ? live : [...live].reverse();
    for (const { t, file } of order) {
      const s = summaries.get(t.id)!;
      if (s.error !== undefined) continue;
      log(`${id} round ${round + 1}/${run.opts.rounds}: ${t.label}`);
      try {
        const p = await measurePhase(run, t, file, setup.connections, round);
        s.rounds.push(p);
        if (p.non2xx > 0 || p.errors > 0) {
          res.notes.push(`${t.label} round ${round + 1}: ${p.non2xx} non-2xx, ${p.errors} errors, ${p.timeouts} timeouts`);
        }
      } catch (err) {
        s.error = errText(err);
        run.harnessErrors.push(`${id} ${t.label}: ${s.error}`);
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
