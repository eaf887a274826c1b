/** The two measurements that are not target-vs-target rounds: the in-process JSON floor (S5) and the soak. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SOAK } from '../scenarios.js';
import { bodyText, historyRequest, ID_PLACEHOLDER, smallRequest } from './bodies.js';
import { runLoad } from './measure.js';
import { Child, memInfo, RssSampler } from './proc.js';
import { errText, log, stopAll, tryStart, type RunContext } from './run-context.js';
import { startBackend, startGateway } from './servers.js';
import { errorCandidates } from './gateway-errors.js';
import { median } from './stats.js';
import type { FloorResult, SoakResult } from './types.js';

export async function runFloor(run: RunContext): Promise<FloorResult & { error?: string }> {
  const c = new Child('json-floor', process.execPath, [join(run.server.benchDir, 'json-path.js'), '--floor', ...(run.opts.quick ? ['--quick'] : [])]);
  run.server.children.add(c);
  try {
    const line = await c.waitLine((l) => l.startsWith('{"floor"'), 120_000);
    const fl = (JSON.parse(line) as { floor: FloorResult }).floor;
    return { ...fl, parts: fl.parts.map((p) => ({ name: p.name, ms: p.ms, cpuMs: p.cpuMs })) };
  } catch (err) {
    return { requestBytes: 0, responseBytes: 0, ms: Number.NaN, cpuMs: Number.NaN, parts: [], error: errText(err) };
  } finally {
    await c.stop();
    run.server.children.delete(c);
  }
}

export async function runSoakPhase(run: RunContext): Promise<SoakResult> {
  const backend = await startBackend(run.server, 'soak-backend');
  const gateway = await tryStart('gateway', () =>
    startGateway(run.server, 'soak-gateway', {
      backends: { agent: { url: backend.urls[0]! } },
      routes: [{ name: 'default', backend: 'agent' }],
    }),
  );
  const empty = { rps: Number.NaN, p99: Number.NaN, non2xx: 0, errors: 0 };
  if (typeof gateway === 'string') {
    await stopAll([backend.child]);
    return { seconds: run.opts.soakS, warmupS: 0, rssAfterWarmupMb: Number.NaN, rssEndMb: Number.NaN, growthPct: Number.NaN, peakMb: Number.NaN, s1: empty, s2: empty, series: [], error: gateway };
  }
  const f1 = join(run.server.tmp, 'soak-s1.json');
  const f2 = join(run.server.tmp, 'soak-s2.json');
  writeFileSync(f1, bodyText(smallRequest(`bench-${ID_PLACEHOLDER}`)));
  writeFileSync(f2, bodyText(historyRequest(`bench-${ID_PLACEHOLDER}`, SOAK.s2Inputs, SOAK.s2HistoryKb)));
  const sampler = new RssSampler(gateway.pids, 1000).start();
  try {
    log(`soak: S1 (${SOAK.s1Connections} connections) + S2 (${SOAK.s2Connections} connections) for ${run.opts.soakS} s`);
    const url = `${gateway.url}/v1/responses`;
    const [r1, r2] = await Promise.all([runLoad(run, url, f1, SOAK.s1Connections, run.opts.soakS, 0), runLoad(run, url, f2, SOAK.s2Connections, run.opts.soakS, 0)]);
    sampler.stop();
    const warm = Math.min(30, run.opts.soakS / 6) * 1000;
    const win = Math.min(30, run.opts.soakS / 6) * 1000;
    const total = sampler.samples.at(-1)?.t ?? 0;
    const inWin = (a: number, b: number): number => median(sampler.samples.filter((s) => s.t >= a && s.t < b).map((s) => s.rssMb));
    const after = inWin(warm, warm + win);
    const end = inWin(total - win, total + 1);
    const series: [number, number][] = sampler.samples.filter((_, i) => i % 5 === 0).map((s) => [s.t / 1000, s.rssMb]);
    return {
      seconds: run.opts.soakS,
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
