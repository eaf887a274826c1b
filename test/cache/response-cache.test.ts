/**
 * The response cache end to end (docs/cache.md): real gateways in front of real loopback agents that record
 * what they receive. A BENCH-like rerun costs the agents nothing and answers byte for byte what the first run
 * did, apart from the memory tag, which is the rerun's own (a replay of the first run's trajectory); sampling is never cached; a half-cached batch sends only its new inputs; a redeployed agent gets every
 * input again; the admin DELETE empties; error candidates are never stored; experiments count cached steps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useFixtures } from '../helpers/fixtures.js';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import type { Cand, TestGateway } from '../helpers/gateway.js';
import { cachedConfig, freshRequestId, metricValue, postBatch, seenInputs, slotInput } from './cache-helpers.js';

/**
 * Runs `steps` BENCH steps over `slots` slots: one batch per step, each input carrying the memory of the
 * candidate answered to its slot the step before. Returns each answer's text with its request_id blanked.
 */
async function benchRun(gw: TestGateway, slots: number, steps: number): Promise<{ answers: string[]; hits: (string | null)[]; tags: Tag[][] }> {
  const memory = new Map<number, Record<string, unknown>>();
  const answers: string[] = [];
  const hits: (string | null)[] = [];
  const tags: Tag[][] = [];
  for (let step = 0; step < steps; step++) {
    const inputs = Array.from({ length: slots }, (_, slot) => slotInput(slot, step, memory.get(slot)));
    const a = await postBatch(gw, inputs);
    assert.equal(a.status, 200, a.text);
    for (const c of a.json as Cand[]) memory.set(c.source_id, c.memory);
    tags.push((a.json as Cand[]).map((c) => c.memory._gateway as Tag));
    // The tag member has no nested object: cut as bytes, the rest compared byte for byte.
    answers.push(a.text.split(JSON.stringify(a.requestId)).join('"<rid>"').replace(/,?"_gateway":\{[^{}]*\}/g, ''));
    hits.push(a.hits);
  }
  return { answers, hits, tags };
}

type Tag = { trajectory: string; step: number; arm: string; replay?: string; sig?: string };

test('a BENCH-like rerun (16 slots x 4 steps) is answered from the cache, byte for byte, and the backends see nothing', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const b = await f.agent({ name: 'b' });
  // A split: each new trajectory draws an arm from its (fresh) request_id, and the rerun must still hit.
  const gw = await f.gateway(cachedConfig({ a, b }, { split: { a: 1, b: 1 } }));

  const first = await benchRun(gw, 16, 4);
  assert.deepEqual(first.hits, ['0', '0', '0', '0']);
  const firstCalls = seenInputs(a).length + seenInputs(b).length;
  assert.equal(firstCalls, 64, 'every input of the first run reached a backend');
  assert.ok(seenInputs(a).length > 0 && seenInputs(b).length > 0, 'both arms served the first run');

  const rerun = await benchRun(gw, 16, 4);
  assert.equal(seenInputs(a).length + seenInputs(b).length, firstCalls, 'the backends saw no input of the rerun');
  assert.deepEqual(rerun.hits, ['16', '16', '16', '16']);
  assert.deepEqual(rerun.answers, first.answers, 'the rerun answers what the first run did, byte for byte (request_id and tag apart)');
  // Each rerun tag is the rerun trajectory's own, built as a live one would be: never the first run's.
  rerun.tags.forEach((row, k) =>
    row.forEach((tag, slot) => {
      const was = first.tags[k]![slot]!;
      assert.notEqual(tag.trajectory, was.trajectory, 'a new trajectory id');
      assert.equal(tag.trajectory, rerun.tags[0]![slot]!.trajectory, 'kept at every step');
      assert.deepEqual([tag.step, tag.arm, tag.replay, was.replay], [k + 1, was.arm, was.trajectory, undefined], 'a replay of the first run\'s trajectory, on its arm');
      assert.notEqual(tag.sig, was.sig);
    }),
  );
  assert.equal(await metricValue(gw, 'magma_gateway_cache_hits_total', { route: 'main' }), 64);
  assert.equal(await metricValue(gw, 'magma_gateway_cache_misses_total', { route: 'main' }), 64);
  assert.equal(await metricValue(gw, 'magma_gateway_cache_stores_total', { route: 'main' }), 64);

  // Experiments stay honest: the rerun's trajectories replay the first run's: counted once, as replays.
  const report = (await http(`${gw.adminUrl}/gateway/experiments`)).json as {
    experiments: { route: string; arms: { arm: string; trajectories: number; replays: number; steps: number; cached_steps: number; latency_ms: { samples: number } }[] }[];
  };
  const arms = report.experiments.find((r) => r.route === 'main')!.arms;
  const total = (k: 'steps' | 'cached_steps'): number => arms.reduce((n, x) => n + x[k], 0);
  assert.equal(total('steps'), 64);
  assert.equal(total('cached_steps'), 64);
  for (const arm of arms) {
    assert.equal(arm.cached_steps, arm.steps, `arm ${arm.arm}: each cached step is counted on the arm that computed it`);
    assert.equal(arm.replays, arm.trajectories, `arm ${arm.arm}: each rerun trajectory is a replay of one of its own`);
    assert.equal(arm.latency_ms.samples, arm.steps, `arm ${arm.arm}: no latency sample for a hit`);
  }
});

test('sampling (inference_mode false) is never cached on a deterministic route; `always` caches it', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway({
    ...cachedConfig({ a }, { backend: 'a', match: { 'extra_keys.lane': 'det' } }),
    routes: [
      { name: 'det', backend: 'a', cache: 'deterministic', match: { 'extra_keys.lane': 'det' } },
      { name: 'any', backend: 'a', cache: 'always' },
    ],
  });
  const sampled = (lane: string): Record<string, unknown> => {
    const inp = slotInput(1, 0, undefined, false);
    return { ...inp, extra_keys: { inference_mode: false, lane } };
  };
  for (let i = 0; i < 2; i++) assert.equal((await postBatch(gw, [sampled('det')])).hits, '0');
  assert.equal(seenInputs(a).length, 2, 'a sampling input goes to the backend every time');
  assert.equal(await metricValue(gw, 'magma_gateway_cache_bypasses_total', { route: 'det', reason: 'sampling' }), 2);

  assert.equal((await postBatch(gw, [sampled('any')])).hits, '0');
  assert.equal((await postBatch(gw, [sampled('any')])).hits, '1');
  assert.equal(seenInputs(a).length, 3, '`always` caches whatever the route answers');
});

test('a half-cached batch sends only its new inputs; cached candidates carry the current request_id and ids', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(cachedConfig({ a }, { backend: 'a' }));
  const first = Array.from({ length: 8 }, (_, i) => slotInput(i, 0, undefined));
  const firstAnswer = await postBatch(gw, first);
  assert.equal(firstAnswer.status, 200);

  // The same 8 inputs under other ids (BENCH reuses slots; the key never holds the id), between 8 new ones.
  const mixed = Array.from({ length: 16 }, (_, k) => (k % 2 === 0 ? { ...first[k / 2]!, id: 100 + k } : slotInput(50 + k, 0, undefined)));
  a.reset();
  const rid = freshRequestId();
  const answer = await postBatch(gw, mixed, rid);
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.hits, '8');
  const sent = a.requestsTo('/v1/responses');
  assert.equal(sent.length, 1);
  const sentIds = (sent[0]!.body as { inputs: { id: number }[] }).inputs.map((i) => i.id);
  assert.deepEqual(sentIds, mixed.filter((_, k) => k % 2 === 1).map((i) => i.id), 'only the 8 new inputs went to the backend');

  const cands = answer.json as Cand[];
  assert.deepEqual(cands.map((c) => c.source_id), mixed.map((i) => i.id), 'contract order');
  assert.ok(cands.every((c) => c.request_id === rid), 'every candidate carries the current request_id');
  const before = firstAnswer.json as Cand[];
  cands.forEach((c, k) => {
    if (k % 2 === 1) return;
    const orig = before[k / 2]!;
    assert.deepEqual({ ...c, request_id: '', source_id: 0 }, { ...orig, request_id: '', source_id: 0 }, 'the cached candidate is the first one, re-addressed');
  });
});

test('a backend redeployed with a new agent_version gets every input again', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway({ ...cachedConfig({ a }, { backend: 'a' }), probe_interval_s: 0.1 });
  const inputs = Array.from({ length: 4 }, (_, i) => slotInput(i, 0, undefined));
  await postBatch(gw, inputs);
  assert.equal((await postBatch(gw, inputs)).hits, '4');
  assert.equal(seenInputs(a).length, 4);

  a.setBehaviour({ info: { agent_version: '2.0.0-redeployed' } });
  await waitFor('the gateway probed the new version', async () => {
    const view = (await http(`${gw.adminUrl}/gateway/backends`)).json as { backends: { replicas: { info?: { agent_version?: string } | null }[] }[] };
    return JSON.stringify(view).includes('2.0.0-redeployed');
  });
  const again = await postBatch(gw, inputs);
  assert.equal(again.hits, '0');
  assert.equal(seenInputs(a).length, 8, 'the redeployed agent was asked every input again');
  assert.equal((await postBatch(gw, inputs)).hits, '4', 'and its own answers are cached in turn');
});

test('DELETE /gateway/cache empties it, all of it or one backend\'s entries', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const b = await f.agent({ name: 'b' });
  const gw = await f.gateway({
    ...cachedConfig({ a, b }, {}),
    routes: [
      { name: 'to-a', backend: 'a', cache: 'always', match: { 'attributes.to': 'a' } },
      { name: 'to-b', backend: 'b', cache: 'always' },
    ],
  });
  const toA = { ...slotInput(1, 0, undefined), attributes: { to: 'a' } };
  const toB = { ...slotInput(2, 0, undefined), attributes: { to: 'b' } };
  await postBatch(gw, [toA, toB]);
  assert.equal((await postBatch(gw, [toA, toB])).hits, '2');

  const scoped = await http(`${gw.adminUrl}/gateway/cache?backend=a`, { method: 'DELETE' });
  assert.equal(scoped.status, 200, scoped.text);
  assert.equal((await postBatch(gw, [toA, toB])).hits, '1', "only backend a's entry was emptied");
  assert.equal(seenInputs(a).length, 2);
  assert.equal(seenInputs(b).length, 1);

  assert.equal((await http(`${gw.adminUrl}/gateway/cache`, { method: 'DELETE' })).status, 200);
  assert.equal((await postBatch(gw, [toA, toB])).hits, '0');
  assert.equal(seenInputs(b).length, 2);

  const unknown = await http(`${gw.adminUrl}/gateway/cache?backend=nope`, { method: 'DELETE' });
  assert.equal(unknown.status, 404);
  assert.equal((unknown.json as { code: string }).code, 'GATEWAY_ERR_NOT_FOUND');
  const agentless = await http(`${gw.adminUrl}/gateway/cache?agent=nope`, { method: 'DELETE' });
  assert.equal((agentless.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
  assert.equal((await http(`${gw.url}/gateway/cache`, { method: 'DELETE' })).status, 404, 'not on the agent port');
});

test('error candidates are never stored, an ensemble input is not cached, and without `cache` there is no header', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a', behaviour: { errorCandidates: true } });
  const b = await f.agent({ name: 'b' });
  const gw = await f.gateway({
    ...cachedConfig({ a, b }, {}),
    routes: [
      { name: 'ens', ensemble: { a: 1, b: 1 }, cache: 'always', match: { 'attributes.to': 'ens' } },
      { name: 'to-a', backend: 'a', cache: 'always' },
    ],
  });
  const failing = slotInput(1, 0, undefined);
  for (let i = 0; i < 2; i++) assert.equal((await postBatch(gw, [failing])).hits, '0');
  assert.equal(seenInputs(a).length, 2, 'an error candidate is asked again');

  const ens = { ...slotInput(2, 0, undefined), attributes: { to: 'ens' }, num_outputs: 2 };
  for (let i = 0; i < 2; i++) assert.equal((await postBatch(gw, [ens])).hits, '0');
  assert.equal(seenInputs(b).length, 2);
  assert.equal(await metricValue(gw, 'magma_gateway_cache_bypasses_total', { route: 'ens', reason: 'ensemble' }), 2);

  const plain = await f.gateway({ backends: { b: { url: b.url } }, routes: [{ name: 'd', backend: 'b', cache: 'always' }] });
  assert.equal((await postBatch(plain, [slotInput(3, 0, undefined)])).hits, null, 'no cache configured: no header');
});

test('num_outputs > 1: every candidate of an input is cached together', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(cachedConfig({ a }, { backend: 'a' }));
  const inp = { ...slotInput(7, 0, undefined), num_outputs: 3 };
  const one = await postBatch(gw, [inp]);
  const two = await postBatch(gw, [inp]);
  assert.equal(two.hits, '1');
  assert.equal(seenInputs(a).length, 1);
  const strip = (x: { text: string; requestId: string }): string => x.text.split(JSON.stringify(x.requestId)).join('"<rid>"');
  assert.equal(strip(two), strip(one));
  assert.deepEqual((two.json as Cand[]).map((c) => c.candidate_index), [0, 1, 2]);
});

test('agent_version is stable for resumes: "1" for the default and virtual agents unless the config sets it', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway({
    backends: { a: { url: a.url } },
    routes: [{ name: 'd', backend: 'a' }],
    agents: { kitchen: { routes: [{ name: 'k', backend: 'a' }] }, pinned: { agent: { agent_version: '2024.1' }, routes: [{ name: 'p', backend: 'a' }] } },
  });
  const version = async (path: string): Promise<string> => ((await http(`${gw.url}${path}`)).json as { agent_version: string }).agent_version;
  assert.equal(await version('/v1/info'), '1', 'not the package version');
  assert.equal(await version('/agents/kitchen/v1/info'), '1');
  assert.equal(await version('/agents/pinned/v1/info'), '2024.1');
});

test('a cached input is not shadowed again; the inputs dispatched are', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const shadow = await f.agent({ name: 's' });
  const gw = await f.gateway({ ...cachedConfig({ a, s: shadow }, { backend: 'a', shadow: ['s'] }) });
  const cached = slotInput(1, 0, undefined);
  await postBatch(gw, [cached]);
  await waitFor('the first batch shadowed', () => seenInputs(shadow).length === 1);
  assert.equal((await postBatch(gw, [cached])).hits, '1');
  const fresh = slotInput(2, 0, undefined);
  assert.equal((await postBatch(gw, [cached, fresh])).hits, '1');
  // The third batch's shadow is sent after any the second could have sent: once it arrived, none did.
  await waitFor('the third batch shadowed', () => seenInputs(shadow).includes(fresh.instruction.content));
  assert.deepEqual(seenInputs(shadow), [cached, fresh].map((i) => i.instruction.content), 'only dispatched inputs were shadowed');
});
