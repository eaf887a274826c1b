/**
 * Self-test of the fake agent: each mode the gateway's tests rely on is checked with plain fetch, so a failing
 * gateway test can trust that the backend misbehaved exactly as asked and no more.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeAgent, type FakeAgent } from './fake-agent.js';
import { waitFor } from './wait.js';

const BIG = '12345678901234567890';

/** A raw request body with a big integer in memory and as an id (JSON.stringify cannot write one). */
function requestText(requestId = 'req-1'): string {
  return (
    `{"request_id":"${requestId}","inputs":[` +
    `{"id":7,"instruction":{"type":"user","content":"hi"},"memory":{"big":${BIG},"f":1.0},"num_outputs":2},` +
    `{"id":3,"instruction":{"type":"env","content":"{}"}}]}`
  );
}

interface Out {
  request_id: string;
  source_id: number;
  candidate_index: number;
  status: string;
  memory: Record<string, unknown>;
  output: { say: string } | null;
  error: { code: string } | null;
}

async function post(agent: FakeAgent, body = requestText(), signal?: AbortSignal): Promise<Response> {
  return fetch(`${agent.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-test': 'yes' },
    body,
    signal,
  });
}

function pairs(outs: Out[]): string[] {
  return outs.map((o) => `${o.source_id}/${o.candidate_index}`);
}

describe('fake agent', () => {
  let agent: FakeAgent;
  before(async () => {
    agent = await startFakeAgent({ name: 'alpha' });
  });
  after(() => agent.close());

  test('is a correct agent by default, with exact big integers in memory', async () => {
    agent.setBehaviour({});
    const health = await fetch(`${agent.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ready' });
    const info = (await (await fetch(`${agent.url}/v1/info`)).json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(info).sort(), [
      'agent_id',
      'agent_version',
      'capabilities',
      'coaching_resume',
      'coaching_unavailable_reason',
      'protocol_version',
      'specialized_coaching',
    ]);
    assert.equal(info.protocol_version, '2.0');

    const res = await post(agent);
    assert.equal(res.status, 200);
    const text = await res.text();
    // Digit for digit, and `1.0` stays `1.0`: the exact codec is used both ways.
    assert.ok(text.includes(`"big":${BIG},"f":1.0,"seen_by":"alpha"`), text);
    const outs = JSON.parse(text) as Out[];
    assert.deepEqual(pairs(outs), ['7/0', '7/1', '3/0']);
    assert.deepEqual(
      outs.map((o) => o.output?.say),
      ['alpha:7:0', 'alpha:7:1', 'alpha:3:0'],
    );
    assert.ok(outs.every((o) => o.request_id === 'req-1' && o.status === 'completed'));

    const rec = agent.requestsTo('/v1/responses').at(-1)!;
    assert.equal(rec.method, 'POST');
    assert.equal(rec.headers['x-test'], 'yes');
    assert.equal(rec.raw, requestText());
    assert.ok(typeof rec.time === 'number' && rec.time <= Date.now());
  });

  test('rejects an invalid request with a FastAPI-style 422', async () => {
    agent.setBehaviour({});
    const res = await post(agent, '{"request_id":"x","inputs":[{"id":1.0,"instruction":{"type":"user","content":""}}]}');
    assert.equal(res.status, 422);
    const body = (await res.json()) as { detail: { type: string; loc: unknown[] }[] };
    assert.deepEqual(body.detail[0]!.loc, ['body', 'inputs', 0, 'id']);
    assert.equal(body.detail[0]!.type, 'int_type');
  });

  test('candidate edits: reverse, missing, extra, duplicate, wrongRequestId, malformedCandidate', async () => {
    const get = async (b: Parameters<FakeAgent['setBehaviour']>[0]): Promise<Out[]> => {
      agent.setBehaviour(b);
      const res = await post(agent);
      assert.equal(res.status, 200);
      return (await res.json()) as Out[];
    };
    assert.deepEqual(pairs(await get({ reverse: true })), ['3/0', '7/1', '7/0']);
    assert.deepEqual(pairs(await get({ missing: true })), ['7/0', '7/1']);
    assert.deepEqual(pairs(await get({ extra: true })), ['7/0', '7/1', '3/0', '3/1']);
    assert.deepEqual(pairs(await get({ duplicate: true })), ['7/0', '7/0', '7/1', '3/0']);
    assert.ok((await get({ wrongRequestId: true })).every((o) => o.request_id === 'req-1-wrong'));
    const bad = await get({ malformedCandidate: 1 });
    assert.equal(bad[1]!.status, 'completed');
    assert.equal(bad[1]!.output, null);
    assert.notEqual(bad[0]!.output, null);
  });

  test('errorCandidates keep the input memory', async () => {
    agent.setBehaviour({ errorCandidates: true });
    const res = await post(agent);
    const text = await res.text();
    const outs = JSON.parse(text) as Out[];
    assert.ok(outs.every((o) => o.status === 'error' && o.error?.code === 'model_error' && o.output === null));
    assert.ok(text.includes(`"memory":{"big":${BIG},"f":1.0}`));
  });

  test('status, garbage, closeMidBody and reset fail the HTTP exchange as asked', async () => {
    agent.setBehaviour({ status: 429, headers: { 'retry-after': '1' } });
    const r429 = await post(agent);
    assert.equal(r429.status, 429);
    assert.equal(r429.headers.get('retry-after'), '1');
    assert.deepEqual(await r429.json(), { detail: 'too many requests' });

    agent.setBehaviour({ status: 500, statusBody: { detail: 'boom' } });
    const r500 = await post(agent);
    assert.equal(r500.status, 500);
    assert.deepEqual(await r500.json(), { detail: 'boom' });

    agent.setBehaviour({ garbage: true });
    const rg = await post(agent);
    assert.equal(rg.status, 200);
    await assert.rejects(rg.json());

    agent.setBehaviour({ closeMidBody: true });
    const rc = await post(agent);
    assert.equal(rc.status, 200);
    await assert.rejects(rc.text());

    agent.setBehaviour({ reset: true });
    await assert.rejects(post(agent));
  });

  test('a behaviour function chooses per request: first call 503, then correct', async () => {
    agent.reset();
    agent.setBehaviour((r, i) => (r.path === '/v1/responses' && i === 0 ? { status: 503 } : {}));
    assert.equal((await post(agent)).status, 503);
    assert.equal((await post(agent)).status, 200);
    assert.equal(agent.requestsTo('/v1/responses').length, 2);
  });

  test('delayMs: concurrent requests are counted in inFlight/maxInFlight', async () => {
    agent.reset();
    agent.setBehaviour({ delayMs: 150 });
    let answered = false;
    const all = Promise.all([post(agent), post(agent), post(agent)]).finally(() => (answered = true));
    await waitFor('three requests in flight', () => agent.inFlight === 3);
    assert.equal(answered, false, 'all three are held by the delay before any answer');
    const results = await all;
    assert.ok(results.every((r) => r.status === 200));
    assert.equal(agent.maxInFlight, 3);
    await Promise.all(results.map((r) => r.text()));
    assert.equal(agent.inFlight, 0);
  });

  test('hang never answers; the client timeout ends it', async () => {
    agent.setBehaviour({ hang: true });
    await assert.rejects(post(agent, requestText(), AbortSignal.timeout(100)), /abort|timeout/i);
  });

  test('probes: health 503, info override, infoStatus', async () => {
    agent.setBehaviour({ health: 503, info: { protocol_version: '1.0', coaching_session_version: 1 } });
    const h = await fetch(`${agent.url}/health`);
    assert.equal(h.status, 503);
    assert.deepEqual(await h.json(), { detail: 'not ready' });
    const info = (await (await fetch(`${agent.url}/v1/info`)).json()) as Record<string, unknown>;
    assert.equal(info.protocol_version, '1.0');
    assert.equal(info.coaching_session_version, 1);
    assert.equal(info.agent_id, 'fake-alpha');
    assert.equal(agent.info.protocol_version, '1.0');
    agent.setBehaviour({ infoStatus: 500 });
    assert.equal((await fetch(`${agent.url}/v1/info`)).status, 500);
  });

  test('coaching endpoints: sessions, corrections, conflicts, unknown sessions', async () => {
    agent.setBehaviour({});
    const put = (body: string): Promise<Response> =>
      fetch(`${agent.url}/v1/coaching/sessions/run-1`, { method: 'PUT', body, headers: { 'content-type': 'application/json' } });
    assert.equal((await put('{"a":1}')).status, 204);
    assert.equal((await put('{"a":1}')).status, 204);
    assert.equal((await put('{"a":2}')).status, 409);

    const coach = (runId: string): Promise<Response> =>
      fetch(`${agent.url}/v1/coaching`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ run_id: runId, request_id: 'c-1', kind: 'failure', reinjection_points: [{ id: 'p0' }] }),
      });
    const ok = await coach('run-1');
    assert.equal(ok.status, 200);
    const body = (await ok.json()) as { request_id: string; status: string; reason: string; proposals: unknown[] };
    assert.equal(body.request_id, 'c-1');
    assert.equal(body.status, 'corrected');
    assert.match(body.reason, /alpha/);
    assert.equal(body.proposals.length, 1);
    assert.equal((await coach('run-unknown')).status, 404);

    assert.equal((await fetch(`${agent.url}/v1/coaching/sessions/run-1`, { method: 'DELETE' })).status, 204);
    assert.equal((await coach('run-1')).status, 404);

    agent.setBehaviour({ coaching: { sessionStatus: 503 } });
    assert.equal((await put('{}')).status, 503);
    assert.ok(agent.requests.some((r) => r.method === 'DELETE' && r.path === '/v1/coaching/sessions/run-1'));
  });
});

describe('fake agent teardown', () => {
  test('close() resolves while a request hangs', async () => {
    const agent = await startFakeAgent();
    agent.setBehaviour({ hang: true });
    const pending = post(agent);
    await waitFor('the request hanging', () => agent.inFlight === 1);
    await agent.close();
    await assert.rejects(pending);
  });

  test('kill() drops in-flight requests and refuses new connections', async () => {
    const agent = await startFakeAgent({ behaviour: { delayMs: 5000 } });
    const pending = post(agent);
    await waitFor('the request in flight', () => agent.inFlight === 1);
    agent.kill();
    await assert.rejects(pending);
    await assert.rejects(fetch(`${agent.url}/health`));
    await agent.close();
  });
});
