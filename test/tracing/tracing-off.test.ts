/**
 * Tracing off (no `tracing.otlp_endpoint`, docs/operations.md#tracing): no span is made or sent anywhere, even with the
 * standard OTEL_EXPORTER_OTLP_* variables pointing at a collector, the SDK is not even loaded, and backends get
 * the client's traceparent exactly as without tracing (src/protocol/correlation.ts).
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, test } from 'node:test';
import { isValidTraceparent } from '../../src/protocol/correlation.js';
import { NOOP_TRACING } from '../../src/tracing/trace-span.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const CLIENT_TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** Agents `good` and `bad` (503), a route through bad falling back to good, a receiver the env points at. */
async function setup(): Promise<{ good: FakeAgent; bad: FakeAgent; gw: TestGateway; rx: OtlpReceiver }> {
  const rx = await startOtlpReceiver();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.endpoint.replace(/\/v1\/traces$/, '');
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = rx.endpoint;
  const good = await startFakeAgent({ name: 'good' });
  const bad = await startFakeAgent({ name: 'bad', behaviour: { status: 503 } });
  const gw = await startGateway({
    backends: { good: { url: good.url }, bad: { url: bad.url } },
    routes: [
      { name: 'direct', match: { 'extra_keys.arm': 'good' }, backend: 'good' },
      { name: 'default', backend: 'bad', fallback: ['good'] },
    ],
  });
  cleanup.push(async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    await gw.close();
    await Promise.all([good.close(), bad.close(), rx.close()]);
  });
  return { good, bad, gw, rx };
}

const inputs = [mkInput(1, { extra_keys: { arm: 'good' } }), mkInput(2)];

test('tracing off: the no-op tracing, and nothing reaches a collector, even when closing', async () => {
  const { gw, rx } = await setup();
  assert.equal(gw.app.gateway.current.tracing, NOOP_TRACING);
  assert.equal((await gw.post({ request_id: 'off-1', inputs }, { traceparent: CLIENT_TP })).status, 200);
  // A provider would flush here.
  await gw.close();
  assert.equal(rx.requests, 0);
});

test('tracing off: the OpenTelemetry SDK is never loaded', async () => {
  const { gw } = await setup();
  assert.equal((await gw.post({ request_id: 'off-sdk', inputs })).status, 200);
  // The SDK packages are CommonJS: loading them, even through import, puts their files in require's cache.
  const loaded = Object.keys(createRequire(import.meta.url).cache).filter((f) => /@opentelemetry[\\/](sdk-trace|exporter-trace)/.test(f));
  assert.deepEqual(loaded, []);
});

test("tracing off: every sub-request, fallbacks included, carries the client's traceparent unchanged", async () => {
  const { good, bad, gw } = await setup();
  assert.equal((await gw.post({ request_id: 'off-2', inputs }, { traceparent: CLIENT_TP })).status, 200);
  const sent = [...good.requestsTo('/v1/responses'), ...bad.requestsTo('/v1/responses')];
  assert.equal(sent.length, 3, 'good, bad, and good again for the fallback');
  assert.deepEqual(sent.map((r) => r.headers['traceparent']), [CLIENT_TP, CLIENT_TP, CLIENT_TP]);
});

test('tracing off: a batch without a traceparent gets one generated, the same on every sub-request', async () => {
  const { good, bad, gw } = await setup();
  assert.equal((await gw.post({ request_id: 'off-3', inputs })).status, 200);
  const sent = [...good.requestsTo('/v1/responses'), ...bad.requestsTo('/v1/responses')].map((r) => r.headers['traceparent']);
  assert.equal(sent.length, 3);
  assert.ok(isValidTraceparent(sent[0]), String(sent[0]));
  assert.deepEqual(new Set(sent).size, 1);
});
