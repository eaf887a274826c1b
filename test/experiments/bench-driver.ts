/**
 * A BENCH-like driver for the experiment flow tests (docs/experiments.md#replays-and-resumed-episodes): 8 simulator
 * slots, one batch in flight, 3-6 step episodes, each episode's outcome written as BENCH writes it (results schema
 * 2.0) and imported with `magma-gateway outcomes import`. Episodes are deterministic in their seed: a rerun sends
 * exactly what the first run sent, so a gateway with `cache: deterministic` can answer it from the cache.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outcomesCommand } from '../../src/commands/outcomes.js';
import type { ExperimentReport, ExperimentsReport } from '../../src/experiments/report/report.js';
import type { Cand, TestGateway } from '../helpers/gateway.js';
import type { FakeBehaviour, RecordedRequest } from '../helpers/fake-agent.js';

export const SLOTS = 8;

export interface Tag {
  backend: string;
  route: string;
  arm?: string;
  trajectory: string;
  experiment: string;
  step: number;
  s: number;
  n: number;
  replay?: string;
  sig?: string;
  flags: string;
}

/** One episode of a run: its id and seed decide its length (3-6 steps) and every instruction. */
export interface Episode {
  id: string;
  seed: number;
}

export function episodes(flow: string, count: number): Episode[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${flow}-ep-${i}`, seed: i }));
}

const lengthOf = (e: Episode): number => 3 + ((e.seed * 7) % 4);

/** The instruction of step k (0-based) of an episode: its task, then env feedback on one robot line. */
function instructionOf(flow: string, e: Episode, k: number): { type: 'user' | 'env'; content: string } {
  if (k === 0) return { type: 'user', content: `${flow}: set the table, episode ${e.id}` };
  const ok = (e.seed + k) % 3 !== 0;
  return { type: 'env', content: JSON.stringify({ infos: `dish_robot: pick ${ok ? 'succeed' : 'failed'} with message: plate_${e.seed}_${k}` }).replace(/","/g, '", "').replace(/":"/g, '": "') };
}

/** BENCH's verdict on an episode: which agent answered decides it (x succeeds more often than y). */
function successOf(e: Episode, say: string): boolean {
  return say.startsWith('x:') ? e.seed % 4 !== 0 : e.seed % 3 === 0;
}

interface Running {
  ep: Episode;
  step: number;
  memory: Record<string, unknown>;
  received: { role: 'USER' | 'SYSTEM'; content: string }[];
  tags: Tag[];
  say: string;
}

export interface DriveResult {
  /** Every tag each episode received, in step order (an episode restarted by a resume: the resumed run's). */
  tags: Map<string, Tag[]>;
  /** Episodes still running when the driver stopped (crashAfter), with the tags they had. */
  inFlight: { id: string; tags: Tag[] }[];
  /** Inputs sent, and of those answered from the cache. */
  sent: number;
  hits: number;
  batches: number;
}

let rid = 0;

/** A BENCH results directory (run.json and the scenario's episodes folder). */
export function resultsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-flow-'));
  writeFileSync(join(dir, 'run.json'), JSON.stringify({ schema_version: '2.0', agent: { agent: 'gw', agent_id: 'magma-gateway', agent_version: '1', protocol_version: '2.0', extra_keys: {} } }));
  mkdirSync(join(dir, 'scenarios', 'table', 'episodes'), { recursive: true });
  return dir;
}

function writeEpisode(dir: string, r: Running): void {
  const trace: unknown[] = [];
  r.received.forEach((m) => {
    trace.push({ index: trace.length, stage_index: 0, kind: m.role === 'USER' ? 'instruction' : 'tool_feedback', payload: m });
    trace.push({ index: trace.length, stage_index: 0, kind: 'agent_answer', payload: { valid: true, say: 'ok', action: {} } });
  });
  const success = successOf(r.ep, r.say);
  const body = { episode_id: r.ep.id, success, terminal: { status: success ? 'success' : 'stage_failure', reason: null, last_action_event_index: 0 }, trace, schema_version: '2.0' };
  writeFileSync(join(dir, 'scenarios', 'table', 'episodes', `${r.ep.id}.json`), JSON.stringify(body, null, 2));
}

/** Emits 'held' each time a backend holds a sub-request whose inputs ask for it (`extra_keys.hold`). */
export const backendHolds = new EventEmitter();

/** The backends' behaviour: a sub-request asking to be held is never answered (the batch in flight at a crash). */
export function holdWhenAsked(req: RecordedRequest): FakeBehaviour {
  const inputs = (req.body as { inputs?: { extra_keys?: { hold?: unknown } }[] } | undefined)?.inputs ?? [];
  if (!inputs.some((i) => i.extra_keys?.hold === true)) return {};
  backendHolds.emit('held');
  return { hang: true };
}

/** Sends a batch the backends hold, and goes away once one of them has it: its client never sees an answer. */
export async function abandon(gw: TestGateway, body: object): Promise<void> {
  const held = once(backendHolds, 'held');
  const gone = new AbortController();
  const sent = fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: gone.signal });
  await held;
  gone.abort();
  await sent.then(
    () => assert.fail('the held batch was answered'),
    () => undefined,
  );
}

/**
 * Runs `eps` on route `flow` through `on(batch)` (alternating replicas), 8 slots and one batch in flight, writing
 * each finished episode into `dir`. `crashAfter`: after that many batches, the next one is sent and cut off before
 * its answer, and the driver stops, leaving episodes in flight (as a BENCH killed mid-batch does); they are not
 * written.
 */
export async function drive(on: (k: number) => TestGateway, flow: string, eps: readonly Episode[], dir: string, crashAfter?: number): Promise<DriveResult> {
  const queue = [...eps];
  const slots: (Running | undefined)[] = new Array<Running | undefined>(SLOTS).fill(undefined);
  const out: DriveResult = { tags: new Map(), inFlight: [], sent: 0, hits: 0, batches: 0 };
  for (;;) {
    for (let i = 0; i < SLOTS; i++) {
      const next = slots[i] === undefined ? queue.shift() : undefined;
      if (next !== undefined) slots[i] = { ep: next, step: 0, memory: {}, received: [], tags: [], say: '' };
    }
    const active = slots.flatMap((r, i) => (r === undefined ? [] : [{ r, i }]));
    if (active.length === 0) return out;
    const crash = crashAfter !== undefined && out.batches === crashAfter;
    const inputs = active.map(({ r, i }) => {
      const instruction = instructionOf(flow, r.ep, r.step);
      r.received.push({ role: instruction.type === 'user' ? 'USER' : 'SYSTEM', content: instruction.content });
      const extra = crash ? { inference_mode: true, flow, hold: true } : { inference_mode: true, flow };
      return { id: i, instruction, tools: [{ name: 'pick', parameters: {} }], attributes: {}, memory: r.memory, num_outputs: 1, extra_keys: extra };
    });
    const gw = on(out.batches);
    const body = { request_id: `${flow}-${process.pid}-${(rid += 1)}`, inputs };
    if (crash) {
      await abandon(gw, body);
      out.inFlight = active.map(({ r }) => ({ id: r.ep.id, tags: r.tags }));
      return out;
    }
    const res = await gw.post(body);
    assert.equal(res.status, 200, res.text);
    out.batches += 1;
    out.sent += inputs.length;
    out.hits += Number(res.headers.get('x-gateway-cache-hits') ?? 0);
    for (const c of res.json as Cand[]) {
      const r = slots[c.source_id];
      assert.ok(r !== undefined && c.status === 'completed', JSON.stringify(c));
      r.memory = c.memory;
      r.tags.push(c.memory._gateway as unknown as Tag);
      r.say = (c as unknown as { output: { say: string } }).output.say;
      r.step += 1;
      if (r.step === lengthOf(r.ep)) {
        writeEpisode(dir, r);
        out.tags.set(r.ep.id, r.tags);
        slots[c.source_id] = undefined;
      }
    }
  }
}

/** `magma-gateway outcomes import <dir>` against `gw`: its JSON summary. */
export async function importDir(gw: TestGateway, dir: string, dryRun = false): Promise<{ results: Record<string, number>; would_post?: { episode: string; trajectory: string | null; arm: string | null; success: boolean; result: string }[] }> {
  let out = '';
  let err = '';
  const code = await outcomesCommand(['import', dir, '--url', gw.adminUrl, '--json', ...(dryRun ? ['--dry-run'] : [])], { out: (t) => void (out += t), err: (t) => void (err += t) });
  assert.equal(code, 0, err);
  return JSON.parse(out) as { results: Record<string, number> };
}

/**
 * The report of `route` as `on(k)` gives it, once every replica's counters are in the store: a replica's report
 * flushes its own pending increments, so the other replica is asked first.
 */
export async function routeReport(on: (k: number) => TestGateway, route: string, k = 0): Promise<ExperimentReport> {
  const other = on(k + 1);
  if (other !== on(k)) await (await fetch(`${other.adminUrl}/gateway/experiments`)).arrayBuffer();
  const res = await fetch(`${on(k).adminUrl}/gateway/experiments`);
  const r = (await res.json()) as ExperimentsReport;
  const e = r.experiments.find((x) => x.route === route);
  assert.ok(e !== undefined, `no experiment on route ${route}`);
  return e;
}

/** What the flows must keep: units, outcomes, the primary difference and both intervals. */
export function figures(e: ExperimentReport): unknown {
  const primary = e.comparisons.find((c) => c.primary);
  return {
    arms: e.arms.map((a) => ({ arm: a.arm, units: a.trajectories, steps: a.steps, lines: a.tool_success.lines, reported: a.outcomes.reported, successes: a.outcomes.successes, coverage: a.outcomes.coverage })),
    difference: primary?.fixed?.difference ?? null,
    fixed: primary?.fixed?.ci95 ?? null,
    sequential: primary?.sequential ?? null,
  };
}

/** The export's rows of `route`'s current experiment. */
export async function exportRows(gw: TestGateway, route: string): Promise<{ trajectory: string; arm: string; route: string; steps: number }[]> {
  const res = await fetch(`${gw.adminUrl}/gateway/experiments/trajectories`);
  const rows = (await res.text()).trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { trajectory: string; arm: string; route: string; steps: number });
  return rows.filter((r) => r.route === route);
}

export const sum = (xs: readonly number[]): number => xs.reduce((n, x) => n + x, 0);
