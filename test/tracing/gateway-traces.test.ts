/**
 * Traces of a listening gateway in front of real loopback agents, received by a real OTLP/HTTP receiver
 * (docs/operations.md#tracing): the span tree of a batch, its attributes and events, the traceparent each backend
 * received, coaching calls, shadows and sampling.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isValidTraceparent } from '../../src/protocol/correlation.js';
import type { FakeAgent, FakeBehaviour, RecordedRequest } from '../helpers/fake-agent.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, type TestGateway } from '../helpers/gateway.js';
import {
  SPAN_KIND_CLIENT,
  SPAN_KIND_SERVER,
  STATUS_ERROR,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../helpers/otlp-receiver.js';

const f = useFixtures();

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CLIENT_TP = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;
const COACHING = { capabilities: { inference: true, coaching: true }, specialized_coaching: ['failure'] };

const agent = (name: string, behaviour: FakeBehaviour = {}): Promise<FakeAgent> => f.agent({ name, behaviour });

async function receiver(): Promise<OtlpReceiver> {
  const rx = await startOtlpReceiver();
  f.defer(() => rx.close());
  return rx;
}

/** A gateway exporting to `rx` every 20 ms, so spans arrive without waiting for a flush. */
async function tracedGateway(rx: OtlpReceiver, config: Record<string, unknown>, tracing: Record<string, unknown> = {}): Promise<TestGateway> {
  return f.gateway({ tracing: { otlp_endpoint: rx.endpoint, export_interval_s: 0.02, ...tracing }, ...config });
}

function batchSpan(spans: readonly ReceivedSpan[], requestId: string): ReceivedSpan | undefined {
  return spans.find((s) => s.name === 'POST /v1/responses' && s.attributes['magma.request_id'] === requestId);
}

const childrenOf = (spans: readonly ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] =>
  spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);

/** The span id of a traceparent a backend received, after checking it is valid and in `traceId`. */
function spanIdOf(req: RecordedRequest, traceId: string): string {
  const tp = req.headers['traceparent'];
  assert.ok(isValidTraceparent(tp), `a valid traceparent, got ${String(tp)}`);
  const [, trace, span] = tp.split('-');
  assert.equal(trace, traceId, 'the backend call is in the batch trace');
  return span!;
}

test('a batch is a server span under the client traceparent; each sub-request a client span under it, sent as the traceparent', async () => {
  const good = await agent('good');
  const bad = await agent('bad', { status: 503 });
  const rx = await receiver();
  const gw = await tracedGateway(rx, {
    backends: { good: { url: good.url }, bad: { url: bad.url } },
    routes: [
      { name: 'direct', match: { 'extra_keys.arm': 'good' }, backend: 'good' },
      { name: 'default', backend: 'bad', fallback: ['good'] },
    ],
  });
  const inputs = [mkInput(1, { extra_keys: { arm: 'good' } }), mkInput(2, { num_outputs: 2 })];
  const res = await gw.post({ request_id: 'trace-1', inputs }, { traceparent: CLIENT_TP, 'x-request-id': 'rid-trace-1' });
  assert.equal(res.status, 200, res.text);
  const cands = res.json as { status: string }[];
  assert.deepEqual(cands.map((c) => c.status), ['completed', 'completed', 'completed'], 'the fallback answered input 2');

  await rx.until('the batch span and its 3 client spans', (spans) => {
    const server = batchSpan(spans, 'trace-1');
    return server !== undefined && childrenOf(spans, server).length === 3;
  });
  const server = batchSpan(rx.spans, 'trace-1')!;
  assert.equal(server.traceId, TRACE_ID);
  assert.equal(server.parentSpanId, CLIENT_SPAN, "the server span continues the client's trace");
  assert.equal(server.kind, SPAN_KIND_SERVER);
  assert.equal(server.resource['service.name'], 'magma-gateway');
  const a = server.attributes;
  assert.equal(a['http.request.method'], 'POST');
  assert.equal(a['http.route'], '/v1/responses');
  assert.equal(a['http.response.status_code'], 200);
  assert.deepEqual(a['http.request.header.x-request-id'], ['rid-trace-1']);
  assert.equal(a['magma.inputs'], 2);
  assert.equal(a['magma.candidates'], 3);
  assert.deepEqual(a['magma.routes'], ['direct', 'default']);
  assert.deepEqual([...(a['magma.backends'] as string[])].sort(), ['bad', 'good']);
  assert.equal(a['magma.error_candidates'], 0);
  const fallback = server.events.filter((e) => e.name === 'fallback');
  assert.deepEqual(fallback.map((e) => e.attributes), [{ 'magma.route': 'default', 'magma.from': 'bad', 'magma.to': 'good' }]);

  const clients = childrenOf(rx.spans, server);
  for (const c of clients) assert.equal(c.kind, SPAN_KIND_CLIENT, c.name);
  const failed = clients.filter((c) => c.attributes['magma.backend'] === 'bad');
  assert.equal(failed.length, 1);
  assert.equal(failed[0]!.name, 'POST bad');
  assert.deepEqual(
    {
      replica: failed[0]!.attributes['magma.replica'],
      url: failed[0]!.attributes['url.full'],
      address: failed[0]!.attributes['server.address'],
      port: failed[0]!.attributes['server.port'],
      status: failed[0]!.attributes['http.response.status_code'],
      outcome: failed[0]!.attributes['magma.outcome'],
      errorType: failed[0]!.attributes['error.type'],
      inputs: failed[0]!.attributes['magma.inputs'],
      candidates: failed[0]!.attributes['magma.candidates'],
      routes: failed[0]!.attributes['magma.routes'],
    },
    {
      replica: 'bad#0',
      url: `${bad.url}/v1/responses`,
      address: '127.0.0.1',
      port: bad.port,
      status: 503,
      outcome: 'gateway_backend_not_ready',
      errorType: 'gateway_backend_not_ready',
      inputs: 1,
      candidates: 2,
      routes: ['default'],
    },
  );
  assert.equal(failed[0]!.status.code, STATUS_ERROR);
  const served = clients.filter((c) => c.attributes['magma.backend'] === 'good');
  assert.deepEqual(served.map((c) => c.attributes['magma.candidates']).sort(), [1, 2], 'input 1 at once, input 2 after its fallback');
  for (const c of served) {
    assert.equal(c.attributes['magma.outcome'], 'ok');
    assert.equal(c.attributes['http.response.status_code'], 200);
    assert.notEqual(c.status.code, STATUS_ERROR);
  }

  // Every backend call carried the traceparent of its own client span, and the client's x-request-id.
  const sent = [...good.requestsTo('/v1/responses'), ...bad.requestsTo('/v1/responses')];
  assert.equal(sent.length, 3);
  const byId = new Map(clients.map((c) => [c.spanId, c]));
  for (const [agentName, reqs] of [['good', good.requestsTo('/v1/responses')], ['bad', bad.requestsTo('/v1/responses')]] as const) {
    for (const r of reqs) {
      const span = byId.get(spanIdOf(r, TRACE_ID));
      assert.ok(span, 'the traceparent names a client span of the batch');
      assert.equal(span.attributes['magma.backend'], agentName);
      assert.equal(r.headers['x-request-id'], 'rid-trace-1');
    }
  }
  assert.equal(new Set(sent.map((r) => r.headers['traceparent'])).size, 3, 'one span per sub-request');
});

test('a replayed batch is one server span with a replay_hit event and no sub-request', async () => {
  const a = await agent('a');
  const rx = await receiver();
  const gw = await tracedGateway(rx, oneBackend({ a }));
  const body = { request_id: 'replayed', inputs: [mkInput(1)] };
  assert.equal((await gw.post(body)).status, 200);
  const again = await gw.post(body);
  assert.equal(again.headers.get('x-gateway-replay'), 'hit');
  await rx.until('both batch spans', (spans) => spans.filter((s) => s.attributes['magma.request_id'] === 'replayed').length === 2);
  const [first, second] = rx.spans.filter((s) => s.attributes['magma.request_id'] === 'replayed');
  assert.equal(first!.parentSpanId, '', 'no client traceparent: the batch starts a trace');
  assert.notEqual(first!.traceId, second!.traceId);
  assert.deepEqual(second!.events.map((e) => e.name), ['replay_hit']);
  assert.equal(second!.attributes['magma.replay'], 'hit');
  assert.equal(first!.attributes['magma.replay'], undefined);
  await rx.until("the first batch's client span", (spans) => childrenOf(spans, first!).length === 1);
  assert.equal(childrenOf(rx.spans, second!).length, 0);
  assert.equal(a.requestsTo('/v1/responses').length, 1);
});

test('a shadow is a client span of the batch with its agreement as an event, and its backend gets that span', async () => {
  const prim = await agent('prim');
  // Named like the primary: the same says, so every candidate agrees.
  const shadow = await agent('prim');
  const rx = await receiver();
  const gw = await tracedGateway(rx, oneBackend({ prim, shadow }, { route: { shadow: ['shadow'] } }));
  const res = await gw.post({ request_id: 'shadowed', inputs: [mkInput(1, { num_outputs: 2 })] }, { traceparent: CLIENT_TP });
  assert.equal(res.status, 200);
  await rx.until('the shadow span', (spans) => spans.some((s) => s.name === 'shadow POST shadow'));
  const server = batchSpan(rx.spans, 'shadowed')!;
  const span = rx.spans.find((s) => s.name === 'shadow POST shadow')!;
  assert.equal(span.parentSpanId, server.spanId);
  assert.equal(span.kind, SPAN_KIND_CLIENT);
  assert.equal(span.attributes['magma.outcome'], 'ok');
  assert.equal(span.attributes['magma.route'], 'default');
  assert.deepEqual(span.events, [{ name: 'shadow_agreement', attributes: { 'magma.shadow.agreed': 2, 'magma.shadow.disagreed': 0 } }]);
  const copy = shadow.requestsTo('/v1/responses')[0]!;
  assert.equal(spanIdOf(copy, TRACE_ID), span.spanId);
  assert.equal(copy.headers['x-magma-gateway-shadow'], '1');
});

test('coaching calls are server spans under the client traceparent, each backend call a client span', async () => {
  const coach = await agent('coach', { info: COACHING });
  const rx = await receiver();
  const gw = await tracedGateway(rx, oneBackend({ coach }));
  const headers = { 'content-type': 'application/json', traceparent: CLIENT_TP };
  const put = await fetch(`${gw.url}/v1/coaching/sessions/run-7`, { method: 'PUT', headers, body: '{}' });
  assert.equal(put.status, 204);
  const body = JSON.stringify({
    run_id: 'run-7',
    request_id: 'coach-1',
    kind: 'failure',
    target_step_id: 's0',
    trajectory: [{ step_id: 's0', input: mkInput(1), output: { say: 'x', tool_calls: [] }, error: null }],
    reinjection_points: [{ id: 'p0' }],
  });
  const res = await fetch(`${gw.url}/v1/coaching`, { method: 'POST', headers, body });
  assert.equal(res.status, 200, await res.text());

  await rx.until('the coaching spans', (spans) => spans.filter((s) => s.kind === SPAN_KIND_CLIENT).length === 2 && spans.length >= 4);
  const server = rx.spans.find((s) => s.name === 'POST /v1/coaching')!;
  assert.ok(server, rx.spans.map((s) => s.name).join(', '));
  assert.equal(server.kind, SPAN_KIND_SERVER);
  assert.equal(server.parentSpanId, CLIENT_SPAN);
  assert.equal(server.attributes['http.response.status_code'], 200);
  assert.equal(server.attributes['magma.backend'], 'coach');
  assert.equal(server.attributes['magma.run_id'], 'run-7');
  assert.equal(server.attributes['magma.request_id'], 'coach-1');
  assert.equal(server.attributes['magma.via'], 'route default');
  const [call] = childrenOf(rx.spans, server);
  assert.ok(call);
  assert.equal(call.name, 'POST coach');
  assert.equal(call.attributes['http.response.status_code'], 200);
  assert.equal(call.attributes['magma.outcome'], 'ok');
  assert.equal(call.attributes['url.full'], `${coach.url}/v1/coaching`);
  assert.equal(spanIdOf(coach.requestsTo('/v1/coaching')[0]!, TRACE_ID), call.spanId);

  const session = rx.spans.find((s) => s.name === 'PUT /v1/coaching/sessions/{run_id}')!;
  assert.ok(session);
  assert.equal(session.attributes['http.response.status_code'], 204);
  assert.deepEqual(session.attributes['magma.backends'], ['coach']);
  const [sessionCall] = childrenOf(rx.spans, session);
  assert.equal(sessionCall?.name, 'PUT coach');
  assert.equal(spanIdOf(coach.requestsTo('/v1/coaching/sessions/run-7')[0]!, TRACE_ID), sessionCall.spanId);
});

test('sample_ratio 0 records no new trace (the backend sees flag 00) but follows a client trace that is sampled', async () => {
  const a = await agent('a');
  const rx = await receiver();
  const gw = await tracedGateway(rx, oneBackend({ a }), { sample_ratio: 0 });
  assert.equal((await gw.post({ request_id: 'unsampled', inputs: [mkInput(1)] })).status, 200);
  assert.equal((await gw.post({ request_id: 'sampled', inputs: [mkInput(1)] }, { traceparent: CLIENT_TP })).status, 200);
  const [first, second] = a.requestsTo('/v1/responses');
  assert.ok(isValidTraceparent(first!.headers['traceparent']));
  assert.match(String(first!.headers['traceparent']), /-00$/, 'not sampled: flag 00 for the backend');
  assert.match(String(second!.headers['traceparent']), new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));

  // Spans are exported in the order they end: once the second batch's are in, the first's would have been.
  await rx.until('the sampled batch span and its client span', (spans) => {
    const s = batchSpan(spans, 'sampled');
    return s !== undefined && childrenOf(spans, s).length === 1;
  });
  assert.equal(batchSpan(rx.spans, 'unsampled'), undefined);
  assert.equal(rx.spans.length, 2);
});
