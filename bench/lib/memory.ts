/**
 * The memory scenarios (S6-S8): the peak RSS of one front process (the gateway, or a reference proxy) while a
 * gated backend holds every batch of a wave in flight in it (bench/waves.ts sends them, backend-agent.ts
 * `--gate` holds the answers until all have arrived). Each target runs in a fresh process, so its VmHWM is
 * this scenario's peak and nothing else's.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import type { MemoryParams } from '../scenarios.js';
import type { WaveResult, WaveSpec } from '../waves.js';
import { bodyText, historyRequest, ID_PLACEHOLDER } from './bodies.js';
import { errorCandidates, errorCodes } from './gateway-errors.js';
import { MEMORY_KEY, runDriver } from './measure.js';
import { cpuMs, memInfo, RssSampler } from './proc.js';
import { errText, log, stopAll, tryStart, type RunContext } from './run-context.js';
import { startBackend, startGateway, startNaiveProxy, startPassthrough, type Running } from './servers.js';
import type { MemoryFigures, Role, ScenarioId, ScenarioResult, TargetSummary } from './types.js';

const MB = 1024 * 1024;
/** Longest one answer may take (S8's answer is over 600 MB). */
const ANSWER_TIMEOUT_S = 600;
/**
 * The gate opens by itself after this: long enough for the gateway to take in 64 batches on a busy machine,
 * short of the gateway's backend timeout_s (360 s), so a late batch is noted, not failed.
 */
const GATE_TIMEOUT_MS = 120_000;
const PROBE_TIMEOUT_S = 60;

type Front = MemoryParams['references'][number] | 'gateway';

const LABELS: Record<Front, string> = {
  passthrough: '@fastify/http-proxy passthrough',
  naive: 'naive JSON proxy (reference)',
  gateway: 'magma-gateway',
};

/** The parameters this run uses: `--quick` takes the scenario's smaller variant. */
function effectiveParams(p: MemoryParams, quick: boolean): MemoryParams {
  return quick && p.quick !== undefined ? { ...p, ...p.quick } : p;
}

async function gateTimeouts(url: string): Promise<number> {
  const r = await request(`${url}/bench/stats`);
  return ((await r.body.json()) as { gateTimedOut: number }).gateTimedOut;
}

function startFront(run: RunContext, id: ScenarioId, front: Front, upstream: string, p: MemoryParams): Promise<Running> {
  const name = `${id.toLowerCase()}-${front}`;
  if (front === 'passthrough') return startPassthrough(run.server, name, upstream);
  if (front === 'naive') return startNaiveProxy(run.server, name, upstream);
  return startGateway(run.server, name, {
    backends: { agent: { url: upstream, ...p.backendConfig } },
    routes: [{ name: 'default', backend: 'agent' }],
    // The bench backend is one thread: while it parses a wave of 64 x 2 MB bodies and writes their answers, a
    // /health probe waits seconds behind them, and a replica whose probe times out gets no batches
    // (gateway_no_backend). A patient probe keeps the figure about memory, not about the backend's event loop.
    probe_timeout_s: PROBE_TIMEOUT_S,
    ...p.gatewayConfig,
  });
}

async function measureFront(run: RunContext, s: Running, spec: WaveSpec, backendUrl: string, p: MemoryParams, requestBytes: number): Promise<MemoryFigures> {
  const sampler = new RssSampler(s.pids, 100).start();
  const gate0 = await gateTimeouts(backendUrl);
  let cpu0 = 0;
  let cpu1 = 0;
  const budget = p.waves * ANSWER_TIMEOUT_S * 1000 + 60_000;
  let r: WaveResult;
  try {
    r = await runDriver<WaveResult>(run, 'waves.js', spec, budget, () => (cpu0 = cpuMs(s.pids())), () => (cpu1 = cpuMs(s.pids())));
  } finally {
    sampler.stop();
  }
  const end = memInfo(s.pids());
  const figures: MemoryFigures = {
    hwmMb: Math.max(sampler.maxHwmMb, end.hwmMb),
    rssMaxMb: sampler.maxMb,
    inFlight: p.inFlight,
    bytesInFlightMb: (p.inFlight * requestBytes) / MB,
    waves: p.waves,
    answers: r.answers,
    answered: r.answered,
    statuses: r.statuses,
    answerMb: r.maxAnswerBytes / MB,
    cpuMsPerBatch: (cpu1 - cpu0) / Math.max(1, r.answers),
    waveS: r.medianWaveS,
    gateTimedOut: (await gateTimeouts(backendUrl)) - gate0,
    problems: [...r.problems, ...(r.check !== undefined && !r.check.ok ? r.check.problems.map((x) => `first answer: ${x}`) : [])],
  };
  if (s.child.exited) figures.exited = `exited with code ${s.child.exitCode} before the end`;
  return figures;
}

/** Runs one memory scenario: the reference proxies, then the gateway, each fresh, against one gated backend. */
export async function runMemoryScenario(run: RunContext, id: ScenarioId, title: string, params: MemoryParams): Promise<ScenarioResult> {
  const p = effectiveParams(params, run.opts.quick);
  const body = historyRequest(`bench-${id.toLowerCase()}`, p.inputs, p.historyKb, p.numOutputs);
  const text = bodyText({ ...body, request_id: `bench-${ID_PLACEHOLDER}` });
  const requestBytes = Buffer.byteLength(text);
  const file = join(run.server.tmp, `${id}-waves.json`);
  writeFileSync(file, text);
  const res: ScenarioResult = {
    id,
    title,
    kind: 'memory',
    params: {
      inputs: p.inputs,
      memoryKb: p.historyKb,
      numOutputs: p.numOutputs,
      requestMb: Number((requestBytes / MB).toFixed(2)),
      inFlight: p.inFlight,
      waves: p.waves,
      ...(run.opts.quick && params.quick !== undefined ? { quickVariant: true } : {}),
    },
    targets: [],
    notes: [],
    extra: {},
  };
  const backend = await startBackend(run.server, `${id.toLowerCase()}-backend`, { gate: p.inFlight > 1 ? p.inFlight : 0, gateTimeoutMs: GATE_TIMEOUT_MS });
  const up = backend.urls[0]!;
  try {
    for (const front of [...p.references, 'gateway'] as Front[]) {
      const role: Role = front === 'gateway' ? 'gateway' : 'baseline';
      const t: TargetSummary = { id: front, label: LABELS[front], role, rounds: [] };
      res.targets.push(t);
      const s = await tryStart(front, () => startFront(run, id, front, up, p));
      if (typeof s === 'string') {
        t.error = s;
        run.harnessErrors.push(`${id} ${t.label}: ${s}`);
        continue;
      }
      log(`${id}: ${t.label}, ${p.waves} wave(s) of ${p.inFlight} batch(es) of ${(requestBytes / MB).toFixed(1)} MB`);
      try {
        const spec: WaveSpec = {
          url: `${s.url}/v1/responses`,
          bodyFile: file,
          inFlight: p.inFlight,
          waves: p.waves,
          timeoutS: ANSWER_TIMEOUT_S,
          expectCandidates: p.inputs * p.numOutputs,
          checkFirst: p.checkFirst,
          memoryKey: MEMORY_KEY,
        };
        t.memory = await measureFront(run, s, spec, up, p, requestBytes);
        if (front === 'gateway') {
          t.memory.errorCandidates = await errorCandidates(s);
          t.memory.errorCodes = Object.fromEntries(Object.entries(await errorCodes(s)).filter(([, n]) => n > 0));
        }
        noteFront(run, res, t, t.memory);
      } catch (err) {
        t.error = errText(err);
        run.harnessErrors.push(`${id} ${t.label}: ${t.error}`);
      } finally {
        await stopAll([s.child]);
      }
    }
  } finally {
    await stopAll([backend.child]);
  }
  return res;
}

/**
 * A gateway that does not answer is a figure missing its target (the thresholds say FAIL): what it answered
 * goes in the notes. A reference proxy that does not answer means the harness is broken: the run fails.
 */
function noteFront(run: RunContext, res: ScenarioResult, t: TargetSummary, m: MemoryFigures): void {
  const statuses = Object.entries(m.statuses).map(([k, v]) => `${k}: ${v}`).join(', ');
  if (m.answered < m.answers || m.problems.length > 0) {
    const what = `${m.answered} of ${m.answers} answers complete (${statuses}); ${m.problems.join('; ').slice(0, 1500)}`;
    if (t.role === 'gateway') res.notes.push(`${t.label}: ${what}`);
    else {
      t.error = `wrong answer: ${what}`;
      run.harnessErrors.push(`${res.id} ${t.label}: ${t.error}`);
    }
  }
  if (m.gateTimedOut > 0) {
    res.notes.push(`${t.label}: the backend's gate opened by timeout ${m.gateTimedOut} time(s): fewer than ${m.inFlight} batches were held at once`);
  }
  if (m.exited !== undefined) res.notes.push(`${t.label}: ${m.exited}`);
  if (m.errorCandidates !== undefined && m.errorCandidates > 0) {
    res.notes.push(`${t.label}: ${m.errorCandidates} error candidates (${Object.entries(m.errorCodes ?? {}).map(([c, n]) => `${c} ${n}`).join(', ')})`);
  }
}
