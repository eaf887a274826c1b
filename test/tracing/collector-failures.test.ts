/**
 * A collector that refuses, hangs or is not there changes nothing for the client (docs/operations.md#tracing): every
 * batch is answered 200 with the candidates an untraced gateway gives, the span queue stays bounded, and the
 * gateway still closes.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, test } from 'node:test';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceiverMode } from '../helpers/otlp-receiver.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

let agentP: Promise<{ agent: FakeAgent; plain: TestGateway }> | undefined;

/** One agent for every test, and an untraced gateway in front of it: the answers to compare with. */
function reference(): Promise<{ agent: FakeAgent; plain: TestGateway }> {
  agentP ??= (async () => {
    const agent = await startFakeAgent({ name: 'a' });
    const plain = await startGateway(config(agent));
    cleanup.push(async () => {
      await plain.close();
      await agent.close();
    });
    return { agent, plain };
  })();
  return agentP;
}

function config(agent: FakeAgent, tracing?: Record<string, unknown>): Record<string, unknown> {
  return {
    // Replay would answer the second gateway's batches from the first one's store entries: it has its own.
    state: { replay_ttl_s: 0 },
    // One tag secret for both gateways, as replicas share one: the tags' signatures are then the same bytes.
    experiments: { tag_secret: 'collector-failures-shared-secret' },
    backends: { a: { url: agent.url }, b: { url: agent.url } },
    routes: [{ name: 'default', split: { a: 1, b: 1 } }],
    ...(tracing === undefined ? {} : { tracing }),
  };
}

async function receiver(mode: ReceiverMode): Promise<OtlpReceiver> {
  const rx = await startOtlpReceiver(mode);
  cleanup.push(() => rx.close());
  return rx;
}

/** A port nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

const BOUNDS = { export_interval_s: 0.01, export_timeout_s: 0.3, max_queue_size: 4, max_export_batch_size: 2 };

/** 12 batches (more spans than the queue holds) through `gw` and the untraced gateway: the same answers. */
async function sameAnswers(gw: TestGateway): Promise<void> {
  const { plain } = await reference();
  for (let i = 0; i < 12; i++) {
    const body = { request_id: `batch-${i}`, inputs: [mkInput(1), mkInput(2, { num_outputs: 3 })] };
    const [traced, untraced] = await Promise.all([gw.post(body), plain.post(body)]);
    assert.equal(traced.status, 200, traced.text);
    assert.equal(traced.text, untraced.text, `batch ${i}: the candidates an untraced gateway answers`);
  }
}

test('a collector refusing every export: every batch answered 200 with the same candidates', async () => {
  const { agent } = await reference();
  const rx = await receiver({ kind: 'refuse', status: 400 });
  const gw = await startGateway(config(agent, { otlp_endpoint: rx.endpoint, ...BOUNDS }));
  const refused = rx.nextRequest();
  await sameAnswers(gw);
  await refused;
  assert.equal(rx.spans.length, 0);
  await gw.close();
});

test('a collector that accepts the export and never answers: every batch answered 200 with the same candidates', async () => {
  const { agent } = await reference();
  const rx = await receiver({ kind: 'hang' });
  const gw = await startGateway(config(agent, { otlp_endpoint: rx.endpoint, ...BOUNDS }));
  const hanging = rx.nextRequest();
  await sameAnswers(gw);
  await hanging;
  // Closing flushes what is queued, each export bounded by export_timeout_s: the close returns.
  await gw.close();
});

test('no collector listening at the endpoint: every batch answered 200 with the same candidates', async () => {
  const { agent } = await reference();
  const gw = await startGateway(config(agent, { otlp_endpoint: `http://127.0.0.1:${await closedPort()}/v1/traces`, ...BOUNDS }));
  await sameAnswers(gw);
  await gw.close();
});
