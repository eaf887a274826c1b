/**
 * What a client reads from the gateway is always valid JSON and never shows a number marker, whatever a
 * backend answers (numbers where strings belong, answers nested thousands of levels deep), and a client's own
 * such values are 422 as pydantic would say. Real gateway, real loopback agents.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Writable } from 'node:stream';
import { stringify } from 'yaml';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { numberMark } from '../../src/protocol/json/exact-json.js';
import type { AgentOutput } from '../../src/protocol/types.js';
import { startFakeAgent, type FakeAgent, type FakeBehaviour } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';

let agent: FakeAgent;
let gw: TestGateway;
let seq = 0;

before(async () => {
  agent = await startFakeAgent({ name: 'solo' });
  gw = await startGateway(oneBackend({ solo: { url: agent.url, eject_after_failures: 1000 } }));
});
after(async () => {
  await gw.close();
  await agent.close();
});

/** A batch of two inputs against a backend behaving as `b`: status 200, a body JSON.parse reads, no marker. */
async function batch(b: FakeBehaviour): Promise<Cand[]> {
  agent.setBehaviour((r) => (r.path === '/v1/responses' ? b : {}));
  const res = await gw.post({ request_id: `wire-${++seq}`, inputs: [mkInput(1, { memory: { keep: 1 } }), mkInput(2)] });
  agent.setBehaviour({});
  assert.equal(res.status, 200, res.text);
  assert.ok(!res.text.includes('\uE000'), res.text);
  return JSON.parse(res.text) as Cand[];
}

function editAll(edit: (o: AgentOutput) => AgentOutput): FakeBehaviour {
  return { transform: (outputs) => outputs.map(edit) };
}

test('a backend answering "request_id": 1.0: invalid_response candidates, valid JSON, no marker in the message', async () => {
  const cands = await batch(editAll((o) => ({ ...o, request_id: numberMark('1.0') })));
  for (const c of cands) {
    assert.equal(c.status, 'error');
    assert.equal(c.error?.code, 'gateway_backend_invalid_response');
    assert.match(c.error?.message ?? '', /request_id: Input should be a valid string/);
  }
  assert.equal(cands[0]!.memory.keep, 1);
});

test('numbers where the answer needs strings are invalid_response for their candidates', async () => {
  const wrong: ((o: AgentOutput) => AgentOutput)[] = [
    (o) => ({ ...o, status: numberMark('1.0') as 'completed' }),
    (o) => ({ ...o, output: { say: numberMark('1.0'), tool_calls: [] } }),
    (o) => ({ ...o, output: { say: '', tool_calls: [{ name: numberMark('1e400'), arguments: {}, target_robot_name: 'r' }] } }),
    (o) => ({ ...o, output: { say: '', tool_calls: [{ name: 'pick', arguments: {}, target_robot_name: numberMark('2.0') }] } }),
    (o) => ({ ...o, status: 'error', output: null, error: { code: numberMark('12345678901234567890'), message: 'm', component: null } }),
    (o) => ({ ...o, status: 'error', output: null, error: { code: 'c', message: numberMark('1.0'), component: numberMark('3.0') } }),
  ];
  for (const edit of wrong) {
    const cands = await batch(editAll(edit));
    assert.deepEqual(cands.map((c) => [c.status, c.error?.code]), [
      ['error', 'gateway_backend_invalid_response'],
      ['error', 'gateway_backend_invalid_response'],
    ], JSON.stringify(cands[0]!.error));
  }
});

test('a backend answering another request_id: the message quotes it as a JSON string, cut short', async () => {
  const cands = await batch(editAll((o) => ({ ...o, request_id: `other "${'x'.repeat(5000)}` })));
  const msg = cands[0]!.error?.message ?? '';
  assert.match(msg, /answers request_id "other \\"x+…", not "wire-\d+"/);
  assert.ok(msg.length < 300, msg);
});

test('a backend answering memory nested 5,000 levels: invalid_response naming the key, then the gateway keeps serving', async () => {
  const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
  const cands = await batch({ garbage: `[{"request_id":"x","source_id":1,"candidate_index":0,"memory":${deep}}]` });
  for (const c of cands) {
    assert.equal(c.error?.code, 'gateway_backend_invalid_response');
    assert.match(c.error?.message ?? '', /deeper than 128 levels \(server\.max_json_depth\)/);
  }
  assert.deepEqual((await batch({})).map((c) => c.status), ['completed', 'completed']);
});

test('a request with memory nested 10,000 levels: 422 at ["body"] naming the key; the next batch is served', async () => {
  const memory = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
  const text = `{"request_id":"deep","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":${memory}}]}`;
  const res = await gw.post(text, { 'content-type': 'application/json' });
  assert.equal(res.status, 422, res.text.slice(0, 300));
  const detail = (res.json as { detail: { type: string; loc: unknown[]; msg: string }[] }).detail;
  assert.deepEqual(detail.map((d) => [d.type, d.loc]), [['json_invalid', ['body']]]);
  assert.match(detail[0]!.msg, /server\.max_json_depth/);
  assert.equal(agent.requestsTo('/v1/responses').filter((r) => r.raw.includes('"deep"')).length, 0);
  assert.deepEqual((await batch({})).map((c) => c.status), ['completed', 'completed']);
});

test('a request with "request_id": 1.0 is 422 string_type at ["body","request_id"], echoing 1.0', async () => {
  const res = await gw.post('{"request_id":1.0,"inputs":[]}', { 'content-type': 'application/json' });
  assert.equal(res.status, 422);
  assert.ok(!res.text.includes('\uE000'));
  assert.deepEqual(JSON.parse(res.text), {
    detail: [{ type: 'string_type', loc: ['body', 'request_id'], msg: 'Input should be a valid string', input: 1 }],
  });
  assert.ok(res.text.includes('"input":1.0'), res.text);
});

test('no log line the gateway writes holds a number marker, whatever the backend answered', async (t) => {
  const f = useFixtures(t);
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const liar = await f.agent({ name: 'liar' });
  const cfg = parseConfigText(
    stringify(oneBackend({ liar })),
    'log-test.yaml',
    {},
  );
  const app = await buildApp({ config: cfg, logger: { level: 'trace', stream }, defaultMetrics: false });
  f.defer(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
  const answers: FakeBehaviour[] = [
    editAll((o) => ({ ...o, request_id: numberMark('1.0') })),
    editAll((o) => ({ ...o, memory: { n: numberMark('1.0') }, output: { say: numberMark('2.0'), tool_calls: [] } })),
    { garbage: `[{"request_id":1.0,"x":12345678901234567890,` },
    { status: 500, statusBody: { detail: numberMark('3.0') } },
  ];
  for (const [i, b] of answers.entries()) {
    liar.setBehaviour((r) => (r.path === '/v1/responses' ? b : {}));
    const res = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"request_id":"log-${i}","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"f":1.0}}]}`,
    });
    assert.equal(res.status, 200);
    assert.ok(!(await res.text()).includes('\uE000'));
  }
  const bad = await fetch(`${url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"request_id":1.0,"inputs":[]}' });
  assert.equal(bad.status, 422);
  assert.ok(lines.some((l) => l.includes('backend answer invalid')), 'the failures were logged');
  for (const l of lines) assert.ok(!l.includes('\uE000'), l);
});
