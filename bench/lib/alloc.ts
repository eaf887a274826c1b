/**
 * ALLOC (docs/performance.md#batches-die-young): the JS heap bytes a front process allocates and promotes per S1
 * request, the gateway against the naive JSON proxy, each in a fresh process started with `--trace-gc-nvp`.
 * V8 prints one line per GC: `allocated=` (bytes allocated since the previous GC) and, for a scavenge (`gc=s`),
 * `promoted=` (bytes moved to the old generation, which only a full GC frees: near 0 when every request's objects
 * die young). The lines of the measured phase, after a warm-up, are summed and divided by its requests.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AllocParams } from '../scenarios.js';
import { bodyText, ID_PLACEHOLDER, smallRequest } from './bodies.js';
import { runLoad } from './measure.js';
import { errText, log, stopAll, tryStart, type RunContext } from './run-context.js';
import { startBackend, startGateway, startNaiveProxy, type Running } from './servers.js';
import type { AllocFigures, ScenarioId, ScenarioResult, TargetSummary } from './types.js';

/** Sums of the GC lines a process printed since the last `reset`. */
class GcTally {
  private buffered = '';
  allocated = 0;
  promoted = 0;
  scavenges = 0;
  markCompacts = 0;

  /** Reads the process's stdout, where `--trace-gc-nvp` writes. */
  constructor(r: Running) {
    r.child.proc.stdout?.on('data', (s: string) => this.feed(s));
  }

  private feed(s: string): void {
    this.buffered += s;
    let nl = this.buffered.indexOf('\n');
    while (nl !== -1) {
      this.line(this.buffered.slice(0, nl));
      this.buffered = this.buffered.slice(nl + 1);
      nl = this.buffered.indexOf('\n');
    }
  }

  private line(l: string): void {
    const allocated = /\ballocated=(\d+)/.exec(l)?.[1];
    if (allocated !== undefined) this.allocated += Number(allocated);
    if (/\bgc=s\b/.test(l)) {
      this.scavenges++;
      const promoted = /\bpromoted=(\d+)/.exec(l)?.[1];
      if (promoted !== undefined) this.promoted += Number(promoted);
    } else if (/\bgc=mc\b/.test(l)) this.markCompacts++;
  }

  reset(): void {
    this.allocated = 0;
    this.promoted = 0;
    this.scavenges = 0;
    this.markCompacts = 0;
  }
}

/** One front's figures: warm-up, reset, then the measured phase. */
async function measure(run: RunContext, r: Running, bodyFile: string, p: AllocParams): Promise<AllocFigures> {
  const gc = new GcTally(r);
  const url = `${r.url}/v1/responses`;
  await runLoad(run, url, bodyFile, p.connections, p.warmupS, 0);
  gc.reset();
  const res = await runLoad(run, url, bodyFile, p.connections, p.durationS, 0);
  // The front is idle once the load has ended: the GC lines read by now are the measured phase's.
  const requests = res.ok + res.non2xx;
  const kb = (bytes: number): number => bytes / Math.max(requests, 1) / 1024;
  return {
    requests,
    non2xx: res.non2xx + res.errors,
    allocatedKbPerRequest: kb(gc.allocated),
    promotedKbPerRequest: kb(gc.promoted),
    scavenges: gc.scavenges,
    markCompacts: gc.markCompacts,
  };
}

export async function runAllocScenario(run: RunContext, id: ScenarioId, title: string, p: AllocParams): Promise<ScenarioResult> {
  const quick = run.opts.quick;
  const params = { ...p, warmupS: quick ? p.quickWarmupS : p.warmupS, durationS: quick ? p.quickDurationS : p.durationS };
  const bodyFile = join(run.server.tmp, 'alloc-s1.json');
  writeFileSync(bodyFile, bodyText(smallRequest(`bench-alloc-${ID_PLACEHOLDER}`)));
  const backend = await startBackend(run.server, 'alloc-backend');
  const up = backend.urls[0] ?? '';
  const gcArgs = ['--trace-gc-nvp'];
  const starts: { id: string; label: string; role: TargetSummary['role']; start: () => Promise<Running> }[] = [
    { id: 'naive', label: 'naive JSON proxy (reference)', role: 'baseline', start: () => startNaiveProxy(run.server, 'alloc-naive', up, gcArgs) },
    {
      id: 'gateway',
      label: 'magma-gateway',
      role: 'gateway',
      start: () => startGateway(run.server, 'alloc-gateway', { backends: { agent: { url: up } }, routes: [{ name: 'default', backend: 'agent' }] }, 30_000, gcArgs),
    },
  ];
  const targets: TargetSummary[] = [];
  try {
    for (const t of starts) {
      log(`${id}: ${t.label}, ${params.warmupS} s warm-up + ${params.durationS} s measured`);
      const r = await tryStart(t.id, t.start);
      if (typeof r === 'string') {
        targets.push({ id: t.id, label: t.label, role: t.role, error: r, rounds: [] });
        continue;
      }
      try {
        targets.push({ id: t.id, label: t.label, role: t.role, rounds: [], alloc: await measure(run, r, bodyFile, params) });
      } catch (err) {
        targets.push({ id: t.id, label: t.label, role: t.role, error: errText(err), rounds: [] });
      } finally {
        await stopAll([r.child]);
      }
    }
  } finally {
    await stopAll([backend.child]);
  }
  return { id, title, kind: 'alloc', params: { connections: params.connections, warmupS: params.warmupS, durationS: params.durationS }, targets, notes: [], extra: {} };
}
