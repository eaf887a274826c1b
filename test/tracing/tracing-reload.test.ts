/**
 * A reload and the `tracing` keys (docs/operations.md#hot-reload and docs/operations.md#tracing): the new config gets a provider built from
 * its keys, the old one is flushed and stopped once its batches drain, and a reload can turn tracing on or off.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FakeAgent } from '../helpers/fake-agent.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, postOk } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

const f = useFixtures();

async function receiver(): Promise<OtlpReceiver> {
  const rx = await startOtlpReceiver();
  f.defer(() => rx.close());
  return rx;
}

function config(a: FakeAgent, tracing?: Record<string, unknown>): Record<string, unknown> {
  return oneBackend({ a }, tracing === undefined ? {} : { tracing });
}

const batchIds = (spans: readonly ReceivedSpan[]): unknown[] =>
  spans.filter((s) => s.name === 'POST /v1/responses').map((s) => s.attributes['magma.request_id']);


test('a reload to another collector: later batches go there, the old provider flushes its spans as it retires', async () => {
  const a = await f.agent({ name: 'a' });
  const [rx1, rx2] = [await receiver(), await receiver()];
  // A minute between scheduled exports: a span that arrives did so by a flush.
  const gw = await f.fileGateway(config(a, { otlp_endpoint: rx1.endpoint, export_interval_s: 60 }));
  const first = gw.app.gateway.current.tracing;
  await postOk(gw, 'before', [mkInput(1)]);
  assert.equal(rx1.spans.length, 0, 'nothing exported before the flush');

  const r = await gw.reload(config(a, { otlp_endpoint: rx2.endpoint, export_interval_s: 60, service_name: 'gw-reloaded' }));
  assert.equal(r.status, 200, r.text);
  assert.notEqual(gw.app.gateway.current.tracing, first, 'a new provider for the new keys');
  await rx1.until('the old provider to flush the batch span as the old config retires', (s) => batchIds(s).includes('before'));
  await postOk(gw, 'after', [mkInput(1)]);

  const off = await gw.reload(config(a));
  assert.equal(off.status, 200, off.text);
  assert.equal(gw.app.gateway.current.tracing.enabled, false);
  await rx2.until('the second provider to flush as it retires', (s) => batchIds(s).includes('after'));
  await postOk(gw, 'untraced', [mkInput(1)]);
  await gw.close();

  assert.deepEqual(batchIds(rx1.spans), ['before']);
  assert.deepEqual(batchIds(rx2.spans), ['after']);
  assert.ok(rx2.spans.every((s) => s.resource['service.name'] === 'gw-reloaded'));
});

test('a reload that turns tracing on traces the batches after it', async () => {
  const a = await f.agent({ name: 'a' });
  const rx = await receiver();
  const gw = await f.fileGateway(config(a));
  await postOk(gw, 'untraced', [mkInput(1)]);
  assert.equal((await gw.reload(config(a, { otlp_endpoint: rx.endpoint, export_interval_s: 0.02 }))).status, 200);
  await postOk(gw, 'traced', [mkInput(1)]);
  await rx.until('the batch span', (s) => batchIds(s).includes('traced'));
  assert.deepEqual(batchIds(rx.spans), ['traced']);
});
