/**
 * One rule for x-request-id and traceparent (src/protocol/correlation.ts, docs/operations.md#logs): a valid incoming value
 * is passed on, an absent or invalid one replaced, and every call a request causes carries the same pair:
 * inference sub-requests, shadow copies (with x-magma-gateway-shadow: 1) and coaching calls.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { correlationHeaders, isValidRequestId, isValidTraceparent } from '../../src/protocol/correlation.js';
import type { FakeAgent, RecordedRequest } from '../helpers/fake-agent.js';
import { mkInput, type TestGateway } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import type { HttpAnswer } from '../helpers/config-file.js';

const f = useFixtures();

const VALID_TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const COACHING = { capabilities: { inference: true, coaching: true }, specialized_coaching: ['failure'] };

test('correlationHeaders keeps valid values and replaces invalid ones', () => {
  assert.deepEqual(correlationHeaders({ 'x-request-id': 'rid-1', traceparent: VALID_TP }), { 'x-request-id': 'rid-1', traceparent: VALID_TP });
  for (const bad of ['', 'has space', 'x'.repeat(129), 'tab\there']) assert.equal(isValidRequestId(bad), false, JSON.stringify(bad));
  assert.equal(isValidRequestId('x'.repeat(128)), true);
  for (const bad of ['garbage', VALID_TP.toUpperCase(), `ff${VALID_TP.slice(2)}`, `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `${VALID_TP} `]) {
    assert.equal(isValidTraceparent(bad), false, bad);
  }
  const fresh = correlationHeaders({ 'x-request-id': 'bad id', traceparent: 'garbage' });
  assert.notEqual(fresh['x-request-id'], 'bad id');
  assert.equal(isValidRequestId(fresh['x-request-id']), true);
  assert.equal(isValidTraceparent(fresh.traceparent), true, fresh.traceparent);
});

/** A gateway whose route shadows `prim` to `shadow`; resolves with the first batch the shadow receives. */
async function withShadow(): Promise<{ prim: FakeAgent; gw: TestGateway; shadowSeen: Promise<RecordedRequest> }> {
  const prim = await f.agent({ name: 'prim' });
  let seen: (r: RecordedRequest) => void = () => undefined;
  const shadowSeen = new Promise<RecordedRequest>((resolve) => (seen = resolve));
  const shadow = await f.agent({
    name: 'shadow',
    behaviour: (r) => {
      if (r.path === '/v1/responses') seen(r);
      return {};
    },
  });
  const gw = await f.gateway(oneBackend({ prim, shadow }, { route: { shadow: ['shadow'] } }));
  return { prim, gw, shadowSeen };
}

test('a shadow copy carries the batch x-request-id and traceparent, and x-magma-gateway-shadow: 1', async () => {
  const { prim, gw, shadowSeen } = await withShadow();
  const res = await gw.post({ request_id: 'corr-1', inputs: [mkInput(1)] }, { 'x-request-id': 'rid-shadow', traceparent: VALID_TP });
  assert.equal(res.status, 200);
  const copy = await shadowSeen;
  const primary = prim.requestsTo('/v1/responses')[0]!;
  assert.equal(copy.headers['x-request-id'], 'rid-shadow');
  assert.equal(copy.headers['traceparent'], VALID_TP);
  assert.equal(copy.headers['x-magma-gateway-shadow'], '1');
  assert.equal(primary.headers['x-request-id'], 'rid-shadow');
  assert.equal(primary.headers['traceparent'], VALID_TP);
  assert.equal(primary.headers['x-magma-gateway-shadow'], undefined, 'the primary call is not marked as a shadow');
});

test('a shadow of a batch without correlation headers carries the ones generated for the batch', async () => {
  const { prim, gw, shadowSeen } = await withShadow();
  const res = await gw.post({ request_id: 'corr-2', inputs: [mkInput(1)] }, { traceparent: 'not-a-traceparent' });
  const copy = await shadowSeen;
  const primary = prim.requestsTo('/v1/responses')[0]!;
  assert.equal(copy.headers['x-request-id'], res.headers.get('x-request-id'));
  assert.equal(copy.headers['traceparent'], primary.headers['traceparent']);
  assert.equal(isValidTraceparent(copy.headers['traceparent']), true);
});

function coachingText(): string {
  return JSON.stringify({
    run_id: 'run-c',
    request_id: 'coach-run-c',
    kind: 'failure',
    target_step_id: 's0',
    trajectory: [{ step_id: 's0', input: mkInput(1), output: { say: 'x', tool_calls: [] }, error: null }],
    reinjection_points: [{ id: 'p0' }],
  });
}

test('coaching forwards a valid traceparent and x-request-id, and replaces invalid ones', async () => {
  const a = await f.agent({ name: 'a', behaviour: { info: COACHING } });
  const gw = await f.gateway(oneBackend({ a }));
  const coach = (headers: Record<string, string>): Promise<HttpAnswer> => gw.call('/v1/coaching', { method: 'POST', headers, body: coachingText() });

  // Session calls follow the same rule (and the fake agent coaches only a run with a session).
  const put = await fetch(`${gw.url}/v1/coaching/sessions/run-c`, { method: 'PUT', headers: { 'content-type': 'application/json', traceparent: 'junk' }, body: '{}' });
  assert.equal(put.status, 204);
  const session = a.requestsTo('/v1/coaching/sessions/run-c')[0]!;
  assert.equal(isValidTraceparent(session.headers['traceparent']), true);

  const ok = await coach({ 'x-request-id': 'rid-coach', traceparent: VALID_TP });
  assert.equal(ok.status, 200, ok.text);
  const first = a.requestsTo('/v1/coaching')[0]!;
  assert.equal(first.headers['traceparent'], VALID_TP);
  assert.equal(first.headers['x-request-id'], 'rid-coach');

  const bad = await coach({ 'x-request-id': 'x'.repeat(200), traceparent: 'ff-not-valid' });
  assert.equal(bad.status, 200, bad.text);
  const second = a.requestsTo('/v1/coaching')[1]!;
  assert.notEqual(second.headers['traceparent'], 'ff-not-valid');
  assert.equal(isValidTraceparent(second.headers['traceparent']), true, String(second.headers['traceparent']));
  assert.notEqual(second.headers['x-request-id'], 'x'.repeat(200));
  assert.equal(isValidRequestId(second.headers['x-request-id']), true);
  assert.equal(bad.headers.get('x-request-id'), second.headers['x-request-id'], 'the client is told the id the backend saw');
});
