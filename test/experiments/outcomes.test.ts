/**
 * The 17-of-17 case through a real gateway and two real loopback agents, 50/50 split, outcome as the primary
 * metric: `actor` finishes every stage in one tool call (BENCH then sends the next stage's instruction, so the
 * gateway never sees a robot line), `talker` never calls a tool. Without outcomes the report cannot rank and says
 * why; after `magma-gateway outcomes import` of a BENCH-shaped results directory (schema 2.0, written here),
 * `actor` ranks first by Newcombe's interval and Fisher's p. Also: the import is idempotent and one to one (a dry
 * run lists the matches), a conflicting re-post is rejected and counted, unknown ids are counted, bad bodies get a
 * 400 naming the problem.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { outcomesCommand } from '../../src/commands/outcomes.js';
import { reportCommand } from '../../src/commands/report.js';
import type { TrajectoryRow } from '../../src/experiments/report/export.js';
import type { ExperimentReport, ExperimentsReport } from '../../src/experiments/report/report.js';
import { chooseArm } from '../helpers/split.js';
import { http } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, postOk, startGateway, type TestGateway } from '../helpers/gateway.js';

const ARMS = [{ name: 'talker', weight: 1 }, { name: 'actor', weight: 1 }];
const NOTHING = JSON.stringify({ infos: 'The action has completed.', previous_tool_call: {} });

let actor: FakeAgent;
let talker: FakeAgent;
let gw: TestGateway;
let dir: string;
/** Per episode: its arm, what the agent received in order, and its trajectory id. */
const episodes: { id: string; arm: string; success: boolean; received: { role: 'USER' | 'SYSTEM'; content: string }[]; trajectory: string }[] = [];

function requestIdFor(prefix: string, arm: string): string {
  for (let k = 0; k < 10_000; k++) if (chooseArm(`${prefix}-${k}`, 0, ARMS) === arm) return `${prefix}-${k}`;
  throw new Error('no request id found');
}

async function report(): Promise<ExperimentReport> {
  const res = await http(`${gw.adminUrl}/gateway/experiments`);
  assert.equal(res.status, 200, res.text);
  return (res.json as ExperimentsReport).experiments[0]!;
}

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await outcomesCommand(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

function writeEpisode(path: string, e: (typeof episodes)[number], success = e.success): void {
  const trace: unknown[] = [];
  e.received.forEach((r, i) => {
    trace.push({ index: trace.length, stage_index: i, kind: r.role === 'USER' ? 'instruction' : 'tool_feedback', payload: r });
    trace.push({ index: trace.length, stage_index: i, kind: 'agent_answer', payload: { valid: true, say: 'ok', action: {} } });
  });
  if (!success) trace.push({ index: trace.length, stage_index: 0, kind: 'failure_diagnostics', payload: { role: 'SYSTEM', content: 'budget exceeded' } });
  const body = { episode_id: e.id, success, terminal: { status: success ? 'success' : 'budget_exceeded', reason: null, last_action_event_index: 0 }, trace, schema_version: '2.0' };
  writeFileSync(path, JSON.stringify(body, null, 2));
}

before(async () => {
  [actor, talker] = await Promise.all([startFakeAgent({ name: 'actor' }), startFakeAgent({ name: 'talker' })]);
  gw = await startGateway({
    backends: { actor: { url: actor.url }, talker: { url: talker.url } },
    experiments: { primary: 'outcome' },
    routes: [{ name: 'ab', split: { talker: 1, actor: 1 } }],
  });
  // 33 episodes, 17 on actor (3 stages, each done in one unseen call) and 16 on talker (no tool, 2 empty feedbacks).
  for (let e = 0; e < 33; e++) {
    const arm = e < 17 ? 'actor' : 'talker';
    const first = `episode ${e}: put plate_${e} in the sink`;
    let [c] = await postOk(gw, requestIdFor(`ep${e}`, arm), [mkInput(0, { instruction: { type: 'user', content: first } })]);
    assert.equal(c!.memory._gateway?.arm, arm);
    const received: { role: 'USER' | 'SYSTEM'; content: string }[] = [{ role: 'USER', content: first }];
    for (let k = 1; k < 3; k++) {
      const next = arm === 'actor' ? { type: 'user' as const, content: `episode ${e}: stage ${k + 1}` } : { type: 'env' as const, content: NOTHING };
      [c] = await postOk(gw, `ep${e}-step${k}`, [mkInput(0, { instruction: next, memory: c!.memory })]);
      received.push({ role: next.type === 'user' ? 'USER' : 'SYSTEM', content: next.content });
    }
    episodes.push({ id: `ep-${e}`, arm, success: arm === 'actor', received, trajectory: c!.memory._gateway!.trajectory! });
  }
  // BENCH's results: every episode in its final place; one also left under .partial/ with a stale outcome.
  dir = mkdtempSync(join(tmpdir(), 'bench-results-'));
  writeFileSync(join(dir, 'run.json'), JSON.stringify({ schema_version: '2.0', agent: { agent: 'gw', agent_id: 'magma-gateway', agent_version: '1', protocol_version: '2.0', extra_keys: {} }, scenario_ids: ['kitchen-1', 'kitchen-2'] }));
  for (const s of ['kitchen-1', 'kitchen-2']) mkdirSync(join(dir, 'scenarios', s, 'episodes'), { recursive: true });
  mkdirSync(join(dir, 'scenarios', '.partial', 'kitchen-1', 'episodes'), { recursive: true });
  episodes.forEach((e, i) => writeEpisode(join(dir, 'scenarios', i % 2 === 0 ? 'kitchen-1' : 'kitchen-2', 'episodes', `${e.id}.json`), e));
  writeEpisode(join(dir, 'scenarios', '.partial', 'kitchen-1', 'episodes', 'ep-0.json'), episodes[0]!, false);
});

after(async () => {
  await gw?.close();
  await Promise.all([actor?.close(), talker?.close()]);
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

test('without outcomes: no ranking, and the report says why', async () => {
  const r = await report();
  assert.deepEqual([r.primary, r.control], ['outcome', 'talker']);
  assert.deepEqual(r.arms.map((a) => [a.arm, a.trajectories, a.steps, a.tool_success.lines, a.stages_per_trajectory]), [
    ['talker', 16, 48, 0, 0],
    ['actor', 17, 51, 0, 2],
  ]);
  const primary = r.comparisons.find((c) => c.primary)!;
  assert.deepEqual([primary.metric, primary.fixed, primary.sequential], ['outcome', null, null]);
  const tool = r.comparisons.find((c) => c.metric === 'tool_success')!;
  assert.equal(tool.primary, false);
  assert.match(tool.label, /^process metric/);
  assert.equal(tool.fixed, null);
  assert.equal(tool.fixed_reason, 'needs 2 trajectories with a robot line per arm');
  assert.ok(r.warnings.some((w) => w.startsWith('the primary metric is episode success, and no outcome has been posted yet')), r.warnings.join('\n'));
  // Stages completed are visible: the secondary comparison shows actor ahead, descriptively.
  const stages = r.secondary.find((s) => s.metric === 'stages_per_trajectory')!;
  assert.deepEqual([stages.arm, stages.control], ['actor', 'talker']);
});

test('outcomes import: each episode joined to its trajectory by trace hash; actor ranks first', async () => {
  const first = await run(['import', dir, '--url', gw.adminUrl, '--json']);
  assert.equal(first.code, 0, first.err);
  const summary = JSON.parse(first.out) as { episodes: number; results: Record<string, number>; agent: string };
  assert.deepEqual([summary.episodes, summary.agent, summary.results.accepted, summary.results.unmatched, summary.results.ambiguous], [33, 'magma-gateway 1', 33, 0, 0]);
  const r = await report();
  assert.deepEqual(r.arms.map((a) => [a.arm, a.outcomes.reported, a.outcomes.successes, a.outcomes.coverage]), [
    ['talker', 16, 0, 1],
    ['actor', 17, 17, 1],
  ]);
  const primary = r.comparisons.find((c) => c.primary)!;
  assert.deepEqual([primary.arm, primary.control, primary.metric, primary.label], ['actor', 'talker', 'outcome', 'episode success']);
  assert.equal(primary.fixed?.difference, 1);
  // Newcombe's hybrid score interval for 17/17 - 0/16 (method 10): [0.7334, 1].
  assert.ok(Math.abs(primary.fixed!.ci95[0] - 0.7334) < 1e-3 && primary.fixed!.ci95[1] === 1, JSON.stringify(primary.fixed));
  // python3 -c "from scipy.stats import fisher_exact; print(fisher_exact([[17,0],[0,16]]).pvalue)" -> 8.570426247835423e-10
  assert.ok(Math.abs(primary.fixed!.p_value - 8.570426247835423e-10) < 1e-15, String(primary.fixed!.p_value));
  assert.equal(primary.fixed!.method, 'Newcombe hybrid score; Fisher exact p');
  assert.equal(primary.sequential_reason, 'needs 20 trajectories with an outcome per arm');
  assert.deepEqual(r.outcome_coverage, { p_value: 1, flagged: false });
});

test('a second import changes nothing; a conflicting re-post is rejected and counted; unknown ids counted', async () => {
  const before = await report();
  const again = await run(['import', dir, '--url', gw.adminUrl, '--json']);
  assert.equal(again.code, 0, again.err);
  assert.equal((JSON.parse(again.out) as { results: Record<string, number> }).results.duplicate, 33);
  const outcomes = [
    { trajectory: episodes[0]!.trajectory, success: false },
    { trajectory: episodes[1]!.trajectory, success: true },
    { trajectory: 'f'.repeat(32), success: true },
  ];
  const conflict = await http(`${gw.adminUrl}/gateway/experiments/outcomes`, { method: 'POST', body: { outcomes } });
  assert.equal(conflict.status, 200, conflict.text);
  assert.deepEqual((conflict.json as { results: Record<string, number> }).results, { accepted: 0, duplicate: 1, conflict: 1, replay: 0, superseded: 0, unknown: 1, ambiguous: 0, unmatched: 0 });
  const after = await report();
  assert.deepEqual(after.arms.map((a) => a.outcomes), before.arms.map((a) => a.outcomes));
  const metrics = (await http(`${gw.url}/metrics`)).text;
  assert.match(metrics, /magma_gateway_experiment_outcomes_total\{result="conflict"\} 1/);
  for (const [body, problem] of [
    [{ outcomes: 'x' }, 'outcomes: expected a list'],
    [{ outcomes: [{ trajectory: 'nothex', success: true }] }, 'outcomes[0]: trajectory: expected 32 lowercase hex digits'],
    [{ outcomes: [{ trajectory: episodes[0]!.trajectory, success: true, score: 1 }] }, 'outcomes[0]: needs exactly one of'],
  ] as const) {
    const res = await http(`${gw.adminUrl}/gateway/experiments/outcomes`, { method: 'POST', body });
    assert.equal(res.status, 400);
    assert.ok((res.json as { detail: string }).detail.startsWith(problem), res.text);
  }
});

test('identical traces in one arm match one to one; a third such episode is a replay; in several arms they are ambiguous', async () => {
  // Two more actor episodes and one talker episode, all with the same single instruction.
  const same = 'the same one-step task';
  const c1 = await postOk(gw, requestIdFor('dupA', 'actor'), [mkInput(0, { instruction: { type: 'user', content: same } })]);
  const c2 = await postOk(gw, requestIdFor('dupB', 'actor'), [mkInput(0, { instruction: { type: 'user', content: same } })]);
  assert.notEqual(c1[0]!.memory._gateway?.trajectory, c2[0]!.memory._gateway?.trajectory);
  const d = mkdtempSync(join(tmpdir(), 'bench-dup-'));
  try {
    writeFileSync(join(d, 'run.json'), JSON.stringify({ schema_version: '2.0', agent: { agent_id: 'x' } }));
    mkdirSync(join(d, 'scenarios', 's', 'episodes'), { recursive: true });
    for (const id of ['dup-1', 'dup-2']) {
      writeEpisode(join(d, 'scenarios', 's', 'episodes', `${id}.json`), { id, arm: 'actor', success: true, received: [{ role: 'USER', content: same }], trajectory: '' });
    }
    const dry = await run(['import', d, '--url', gw.adminUrl, '--json', '--dry-run']);
    assert.equal(dry.code, 0, dry.err);
    const plan = JSON.parse(dry.out) as { posted: number; would_post: { episode: string; trajectory: string; arm: string; success: boolean; result: string }[] };
    assert.equal(plan.posted, 0);
    assert.deepEqual(plan.would_post.map((w) => [w.episode, w.arm, w.success, w.result]), [['dup-1', 'actor', true, 'accepted'], ['dup-2', 'actor', true, 'accepted']]);
    assert.deepEqual(new Set(plan.would_post.map((w) => w.trajectory)), new Set([c1[0]!.memory._gateway?.trajectory, c2[0]!.memory._gateway?.trajectory]), 'one trajectory each');
    assert.equal((await report()).arms.find((a) => a.arm === 'actor')!.outcomes.reported, 17, 'a dry run credits nothing');
    const r1 = await run(['import', d, '--url', gw.adminUrl, '--json']);
    assert.equal(r1.code, 0, r1.err);
    assert.equal((JSON.parse(r1.out) as { results: Record<string, number> }).results.accepted, 2);
    const again = await run(['import', d, '--url', gw.adminUrl, '--json']);
    assert.equal((JSON.parse(again.out) as { results: Record<string, number> }).results.duplicate, 2);
    // A third episode with that trace (a rerun's, under another id): both trajectories have theirs, nothing is credited twice.
    writeEpisode(join(d, 'scenarios', 's', 'episodes', 'dup-9.json'), { id: 'dup-9', arm: 'actor', success: true, received: [{ role: 'USER', content: same }], trajectory: '' });
    const third = await run(['import', d, '--url', gw.adminUrl, '--json']);
    assert.deepEqual((JSON.parse(third.out) as { results: Record<string, number> }).results, { accepted: 0, duplicate: 2, conflict: 0, replay: 1, superseded: 0, unknown: 0, ambiguous: 0, unmatched: 0 });
    rmSync(join(d, 'scenarios', 's', 'episodes', 'dup-9.json'));
    const actorArm = (await report()).arms.find((a) => a.arm === 'actor')!;
    assert.deepEqual([actorArm.outcomes.reported, actorArm.trajectories, actorArm.outcomes.coverage], [19, 19, 1]);
    // Now the same trace also on talker: the hash no longer names one arm.
    await postOk(gw, requestIdFor('dupC', 'talker'), [mkInput(0, { instruction: { type: 'user', content: same } })]);
    writeEpisode(join(d, 'scenarios', 's', 'episodes', 'dup-3.json'), { id: 'dup-3', arm: '?', success: false, received: [{ role: 'USER', content: same }], trajectory: '' });
    const r2 = await run(['import', d, '--url', gw.adminUrl, '--json']);
    const results = (JSON.parse(r2.out) as { results: Record<string, number> }).results;
    assert.equal(results.ambiguous, 3, JSON.stringify(results));
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('the export: one row per trajectory with its sums, stages, flags and outcome; CSV and JSON lines', async () => {
  const res = await http(`${gw.adminUrl}/gateway/experiments/trajectories`);
  assert.equal(res.status, 200);
  const rows = res.text.trim().split('\n').map((l) => JSON.parse(l) as TrajectoryRow);
  const byId = new Map(rows.map((r) => [r.trajectory, r]));
  for (const e of episodes) {
    const r = byId.get(e.trajectory);
    assert.ok(r, `no row for ${e.id}`);
    assert.deepEqual([r.arm, r.steps, r.n, r.stages, r.outcome], [e.arm, 3, 0, e.arm === 'actor' ? 2 : 0, e.success]);
  }
  let err = '';
  const file = join(dir, 'trajectories.csv');
  const code = await reportCommand([gw.adminUrl, '--trajectories', file], { out: () => {}, err: (t) => void (err += t) });
  assert.equal(code, 0, err);
  const csv = readFileSync(file, 'utf8').trim().split('\n');
  assert.equal(csv[0], 'agent,route,arm,experiment,trajectory,started,steps,s,n,stages,env_errors,failure_reason,error_candidates,crossed,outcome');
  assert.equal(csv.length, rows.length + 1);
});
