/**
 * What the batch core forwards of a client's body (docs/protocol-fidelity.md#how-a-batch-is-read): each
 * input's memory as the bytes the client sent, minus the gateway's tag; num_outputs set per leg; a body that
 * is not UTF-8 refused before anything reaches a backend.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function agent(name: string): Promise<FakeAgent> {
  const a = await startFakeAgent({ name });
  cleanup.push(() => a.close());
  return a;
}

async function gateway(config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(config);
  cleanup.push(() => gw.close());
  return gw;
}

/** Memory as a client writes it: integer-like keys out of JS order, numbers JS would print otherwise. */
const MEMORY = '{"b":1,"10":2,"2":[1.0,-0,1e5,12345678901234567890,"\\u00e9"], "__proto__": {"x": 0.10}}';
const TAG = '"_gateway":{"backend":"a","route":"default"}';
const input = (id: number, memory: string, extra = ''): string =>
  `{"id":${id},"instruction":{"type":"env","content":"{\\"infos\\": \\"ok\\"}"},"memory":${memory}${extra}}`;

test('memory reaches the backend as the bytes the client sent, the memory tag cut out', async () => {
  const a = await agent('a');
  const gw = await gateway(oneBackend({ a }, { route: { sticky: true } }));
  const tagged = MEMORY.replace('{"b":1,', `{"b":1,${TAG},`);
  const res = await gw.post(`{"request_id":"bytes-1","inputs":[${input(1, tagged)},${input(2, MEMORY)}]}`);
  assert.equal(res.status, 200, res.text);
  const [sent] = a.requestsTo('/v1/responses');
  assert.ok(sent);
  assert.equal(sent.raw.split(`"memory":${MEMORY}`).length - 1, 2, sent.raw);
  assert.ok(!sent.raw.includes('_gateway'), 'the tag is never forwarded');
});

test('each ensemble leg asks its own share of num_outputs, memory bytes unchanged', async () => {
  const a = await agent('a');
  const b = await agent('b');
  const gw = await gateway({
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [{ name: 'default', ensemble: { a: 1, b: 1 } }],
  });
  const res = await gw.post(`{"request_id":"bytes-2","inputs":[${input(7, MEMORY, ',"num_outputs":4')}]}`);
  assert.equal(res.status, 200, res.text);
  assert.equal((res.json as unknown[]).length, 4);
  for (const backend of [a, b]) {
    const [sent] = backend.requestsTo('/v1/responses');
    assert.ok(sent);
    assert.ok(sent.raw.includes(`"memory":${MEMORY}`), sent.raw);
    assert.ok(sent.raw.includes('"num_outputs":2'), sent.raw);
  }
});

test('a body that is not UTF-8 is answered 400 naming the byte, and no backend is asked', async () => {
  const a = await agent('a');
  const gw = await gateway(oneBackend({ a }));
  const head = Buffer.from(`{"request_id":"bytes-3","inputs":[${input(1, '{"s":"')}`);
  const body = Buffer.concat([head, Buffer.from([0xc3, 0x28]), Buffer.from('"}}]}')]);
  const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(res.status, 400);
  const answer = (await res.json()) as { detail: string; code: string };
  assert.equal(answer.code, 'GATEWAY_ERR_BODY_ENCODING');
  assert.match(answer.detail, new RegExp(`not valid UTF-8 \\(byte ${head.length}\\)`));
  assert.equal(a.requestsTo('/v1/responses').length, 0);
});
