/**
 * POST /v1/responses through a real gateway in front of real loopback agents (docs/protocol-fidelity.md#the-path-of-a-batch and docs/routing.md#the-memory-key-and-stickiness).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { numberMark } from '../../src/protocol/json/exact-json.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function agents(...names: string[]): Promise<FakeAgent[]> {
  const out = await Promise.all(names.map((name) => startFakeAgent({ name })));
  cleanup.push(async () => {
    await Promise.all(out.map((a) => a.close()));
  });
  return out;
}

async function gateway(config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(config);
  cleanup.push(() => gw.close());
  return gw;
}

test('the contract ordering example: inputs 7 and 3 asking 2 and 1 give (7,0), (7,1), (3,0)', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  const res = await gw.post({ request_id: 'demo', inputs: [mkInput(7, { num_outputs: 2 }), mkInput(3)] });
  assert.equal(res.status, 200);
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => [c.request_id, c.source_id, c.candidate_index]), [
    ['demo', 7, 0], ['demo', 7, 1], ['demo', 3, 0],
  ]);
});

test('inputs: [] answers [] without calling any backend', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  a!.reset();
  const res = await gw.post({ request_id: 'e', inputs: [] });
  assert.equal(res.status, 200);
  assert.equal(res.text, '[]');
  assert.equal(a!.requestsTo('/v1/responses').length, 0);
});

test('invalid requests are 422 with FastAPI-style detail naming the location', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  const cases: [string, string][] = [
    ['{"request_id":"r","inputs":[{"id":1.0,"instruction":{"type":"user","content":"x"}}]}', 'body.inputs.0.id'],
    ['{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"system","content":"x"}}]}', 'body.inputs.0.instruction.type'],
    ['{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"x":1e400}}]}', 'body.inputs.0.memory.x'],
    ['{"request_id":"","inputs":[]}', 'body.request_id'],
    ['{"request_id":"r","inputs":[', 'body'],
    ['not json', 'body'],
  ];
  for (const [body, loc] of cases) {
    const res = await gw.post(body);
    assert.equal(res.status, 422, body);
    const detail = (res.json as { detail: { loc: (string | number)[]; type: string; msg: string }[] }).detail;
    assert.ok(detail.length > 0);
    assert.ok(detail[0]!.loc.join('.').startsWith(loc), `${body}: ${JSON.stringify(detail)}`);
    assert.equal(typeof detail[0]!.msg, 'string');
  }
  assert.equal(a!.requestsTo('/v1/responses').length, 0);
});

test('a body over server.body_limit_mb is 413 with a JSON body', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }, { server: { body_limit_mb: 0.01 } }));
  const res = await gw.post({ request_id: 'r', inputs: [mkInput(1, { memory: { blob: 'x'.repeat(20_000) } })] });
  assert.equal(res.status, 413);
  assert.match((res.json as { detail: string }).detail, /body_limit_mb/);
});

test('big integers and exact floats in memory round-trip in both directions; ids of any size come back as source_id', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  a!.reset();
  const body =
    '{"request_id":"big","inputs":[{"id":99999999999999999999,"instruction":{"type":"user","content":"x"},' +
    '"memory":{"n":12345678901234567890,"f":1.0,"e":1e5,"z":-0,"neg":-123456789012345678901234567890}}]}';
  const res = await gw.post(body);
  assert.equal(res.status, 200, res.text);
  const sent = a!.requestsTo('/v1/responses')[0]!.raw;
  assert.ok(sent.includes('"id":99999999999999999999'), sent);
  assert.ok(sent.includes('"n":12345678901234567890,"f":1.0,"e":1e5,"z":-0,"neg":-123456789012345678901234567890'), sent);
  assert.ok(res.text.includes('"source_id":99999999999999999999'), res.text);
  assert.ok(res.text.includes('"n":12345678901234567890,"f":1.0,"e":1e5,"z":-0,"neg":-123456789012345678901234567890'), res.text);
});

test('numbers a backend invents in memory reach the client exactly', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  // The fake agent writes with stringifyExact, so markers become raw number text on its wire.
  a!.setBehaviour({
    transform: (outs) =>
      outs.map((o) => ({ ...o, memory: { ...o.memory, big: numberMark('18446744073709551617'), f: numberMark('2.50') } })),
  });
  const res = await gw.post({ request_id: 'r', inputs: [mkInput(1)] });
  assert.equal(res.status, 200);
  assert.ok(res.text.includes('"big":18446744073709551617,"f":2.50'), res.text);
});

test('a "__proto__" key in memory is forwarded and returned as ordinary data', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  a!.reset();
  const body = '{"request_id":"p","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"__proto__":{"admin":true},"k":1}}]}';
  const res = await gw.post(body);
  assert.equal(res.status, 200);
  assert.ok(a!.requestsTo('/v1/responses')[0]!.raw.includes('"__proto__":{"admin":true}'));
  assert.ok(res.text.includes('"__proto__":{"admin":true}'), res.text);
  assert.equal(({} as Record<string, unknown>).admin, undefined);
});

test('the memory key is stripped before forwarding and set on every returned candidate', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  a!.reset();
  const res = await gw.post({
    request_id: 'm',
    inputs: [mkInput(1, { num_outputs: 2, memory: { _gateway: { backend: 'a', route: 'default' }, x: 1 } })],
  });
  const fwd = a!.requestsTo('/v1/responses')[0]!.body as { inputs: { memory: Record<string, unknown> }[] };
  assert.deepEqual(fwd.inputs[0]!.memory, { x: 1 });
  for (const c of res.json as Cand[]) assert.deepEqual(c.memory._gateway, { backend: 'a', route: 'default' });
});

test('a 32-input batch with 64 KB memory each is sharded over 3 replicas and a second backend, in order', async () => {
  const [r1, r2, r3, other] = await agents('big', 'big', 'big', 'other');
  const gw = await gateway({
    backends: { big: { urls: [r1!.url, r2!.url, r3!.url] }, other: { url: other!.url } },
    routes: [
      { name: 'odd', match: { 'extra_keys.group': 'odd' }, backend: 'other' },
      { name: 'default', backend: 'big' },
    ],
  });
  for (const a of [r1, r2, r3, other]) a!.reset();
  const history = Array.from({ length: 400 }, (_, i) => ({ author: i % 2 ? 'agent' : 'user', content: `step ${i} ${'x'.repeat(140)}` }));
  const inputs = Array.from({ length: 32 }, (_, i) =>
    mkInput(i, { memory: { history, n: 12345678901234567890n.toString() }, extra_keys: { group: i % 4 === 3 ? 'odd' : 'even' } }),
  );
  assert.ok(JSON.stringify(inputs[0]).length > 64 * 1024);
  const res = await gw.post({ request_id: 'shard', inputs });
  assert.equal(res.status, 200);
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => c.source_id), inputs.map((_, i) => i));
  assert.ok(cands.every((c) => c.status === 'completed'));
  for (const c of cands) {
    assert.equal((c.memory.history as unknown[]).length, 400);
    assert.equal(c.memory._gateway?.backend, c.source_id % 4 === 3 ? 'other' : 'big');
  }
  // 24 inputs over 3 idle replicas: one sub-request of 8 each; 8 inputs in one sub-request to the other backend.
  for (const r of [r1, r2, r3]) {
    const reqs = r!.requestsTo('/v1/responses');
    assert.equal(reqs.length, 1);
    assert.equal((reqs[0]!.body as { inputs: unknown[] }).inputs.length, 8);
  }
  assert.equal((other!.requestsTo('/v1/responses')[0]!.body as { inputs: unknown[] }).inputs.length, 8);
});

test('sticky routing keeps each trajectory on its split arm over three steps', async () => {
  const [a, b] = await agents('a', 'b');
  const gw = await gateway({
    backends: { a: { url: a!.url }, b: { url: b!.url } },
    routes: [{ name: 'ab', split: { a: 50, b: 50 } }],
  });
  let inputs = Array.from({ length: 16 }, (_, i) => mkInput(i));
  let first: string[] = [];
  for (let step = 0; step < 3; step++) {
    const res = await gw.post({ request_id: `step-${step}`, inputs });
    const cands = res.json as Cand[];
    const backends = cands.map((c) => c.memory._gateway!.backend);
    if (step === 0) {
      first = backends;
      assert.ok(backends.includes('a') && backends.includes('b'), 'both arms used');
    } else assert.deepEqual(backends, first);
    inputs = cands.map((c) => mkInput(c.source_id, { memory: c.memory, instruction: { type: 'env', content: '{}' } }));
  }
});

test('split assignment is deterministic for the same (request_id, input id)', async () => {
  const [a, b] = await agents('a', 'b');
  const gw = await gateway({
    backends: { a: { url: a!.url }, b: { url: b!.url } },
    routes: [{ name: 'ab', split: { a: 50, b: 50 } }],
  });
  // Same request_id, a different body (so not a replay): the arms must still be the same.
  const body = (content: string) => ({
    request_id: 'same',
    inputs: Array.from({ length: 12 }, (_, i) => mkInput(i, { instruction: { type: 'user', content } })),
  });
  const one = ((await gw.post(body('first'))).json as Cand[]).map((c) => c.memory._gateway!.backend);
  const two = ((await gw.post(body('second'))).json as Cand[]).map((c) => c.memory._gateway!.backend);
  assert.deepEqual(one, two);
});

test('a failing backend falls back along the route fallback list', async () => {
  const [bad, good] = await agents('bad', 'good');
  bad!.setBehaviour((r) => (r.path === '/v1/responses' ? { status: 500 } : {}));
  const gw = await gateway(oneBackend({ bad: { url: bad!.url, eject_after_failures: 100 }, good: { url: good!.url } }, { route: { fallback: ['good'] } }));
  const res = await gw.post({ request_id: 'fb', inputs: [mkInput(1), mkInput(2, { num_outputs: 2 })] });
  const cands = res.json as Cand[];
  assert.ok(cands.every((c) => c.status === 'completed'));
  assert.deepEqual(cands.map((c) => c.output!.say), ['good:1:0', 'good:2:0', 'good:2:1']);
  assert.equal(cands[0]!.memory._gateway!.backend, 'good');
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /magma_gateway_fallbacks_total\{agent="default",route="default",from="bad",to="good"\} 2/);
});

test('a connect failure is retried on another replica of the same backend', async () => {
  const [live] = await agents('live');
  const dead = await startFakeAgent({ name: 'dead' });
  const gw = await gateway(oneBackend({ rep: { urls: [dead.url, live!.url], eject_after_failures: 100 } }));
  await dead.close(); // both probed ready at start; now one refuses connections
  const res = await gw.post({ request_id: 'retry', inputs: Array.from({ length: 4 }, (_, i) => mkInput(i)) });
  const cands = res.json as Cand[];
  assert.ok(cands.every((c) => c.status === 'completed'), res.text);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /magma_gateway_retries_total\{backend="rep"\} 1/);
});

test('a batch answer carries x-gateway-overhead-ms and the batch is validated before it is sent', async () => {
  const [a] = await agents('a');
  const gw = await gateway(oneBackend({ a: { url: a!.url } }));
  const res = await gw.post({ request_id: 'o', inputs: [mkInput(1)] });
  const oh = Number(res.headers.get('x-gateway-overhead-ms'));
  assert.ok(Number.isFinite(oh) && oh >= 0);
});
