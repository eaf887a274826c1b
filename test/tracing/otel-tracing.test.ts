/**
 * The SDK-backed tracing alone (src/tracing/otel-tracing.ts, loaded by runtime.ts's loadTracing), against a real loopback OTLP receiver: parents
 * from a traceparent, the traceparent a span gives its calls, the config's sampler and resource, the no-op
 * tracing without an endpoint, and export failures told once in the log.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { stringify } from 'yaml';
import { parseConfigText } from '../../src/config/load.js';
import type { Logger } from '../../src/logging.js';
import { isValidTraceparent } from '../../src/protocol/correlation.js';
import * as semconv from '@opentelemetry/semantic-conventions';
import * as names from '../../src/tracing/attributes.js';
import { loadTracing } from '../../src/runtime.js';
import { formatTraceparent } from '../../src/tracing/otel-tracing.js';
import { NOOP_SPAN, NOOP_TRACING } from '../../src/tracing/trace-span.js';
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { oneBackend } from '../helpers/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_TP = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

function tracingConfig(tracing: Record<string, unknown>) {
  return parseConfigText(stringify(oneBackend({ a: 'http://127.0.0.1:9' }, { tracing })), 'tracing-test.yaml', {}).tracing;
}

interface Line {
  level: string;
  obj: object | string;
  msg: string | undefined;
}

function recordingLog(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: object | string, msg?: string) => lines.push({ level, obj, msg });
  return { level: 'info', lines, error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

async function receiver(): Promise<OtlpReceiver> {
  const rx = await startOtlpReceiver();
  cleanup.push(() => rx.close());
  return rx;
}

test('without otlp_endpoint: the no-op tracing, whose spans give calls no traceparent', async () => {
  const t = await loadTracing(tracingConfig({}), { version: '1.2.3', log: recordingLog() });
  assert.equal(t, NOOP_TRACING);
  assert.equal(t.enabled, false);
  const span = t.server('POST /v1/responses', { traceparent: CLIENT_TP });
  assert.equal(span, NOOP_SPAN);
  assert.equal(span.recording, false);
  assert.equal(span.traceparent, undefined);
  assert.equal(span.client('x'), NOOP_SPAN);
  await t.shutdown();
});

test('a server span continues a valid traceparent, starts a trace for an invalid one; children are in its trace', async () => {
  const rx = await receiver();
  const t = await loadTracing(tracingConfig({ otlp_endpoint: rx.endpoint, service_name: 'gw-under-test' }), { version: '1.2.3', log: recordingLog() });
  const continued = t.server('continued', { traceparent: CLIENT_TP });
  const fresh = t.server('fresh', { traceparent: `${CLIENT_TP.toUpperCase()}` });
  assert.ok(continued.recording);
  assert.match(continued.traceparent!, new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  assert.notEqual(continued.traceparent!.split('-')[2], '00f067aa0ba902b7', 'its own span id');
  assert.ok(isValidTraceparent(fresh.traceparent));
  assert.notEqual(fresh.traceparent!.split('-')[1], TRACE_ID, 'an invalid traceparent is not continued');
  const child = continued.client('call', { 'magma.backend': 'a' });
  assert.equal(child.traceparent!.split('-')[1], TRACE_ID);
  child.event('something', { n: 1 });
  child.fail('gateway_backend_timeout', 'too slow');
  for (const s of [child, continued, fresh]) s.end();
  await t.flush();
  await rx.until('three spans', (spans) => spans.length === 3);
  const byName = new Map(rx.spans.map((s) => [s.name, s]));
  assert.equal(byName.get('continued')!.parentSpanId, '00f067aa0ba902b7');
  assert.equal(byName.get('continued')!.kind, SPAN_KIND_SERVER);
  assert.equal(byName.get('fresh')!.parentSpanId, '');
  const call = byName.get('call')!;
  assert.equal(call.kind, SPAN_KIND_CLIENT);
  assert.equal(call.parentSpanId, byName.get('continued')!.spanId);
  assert.equal(`00-${call.traceId}-${call.spanId}-01`, child.traceparent);
  assert.deepEqual(call.status, { code: 2, message: 'too slow' });
  assert.equal(call.attributes['error.type'], 'gateway_backend_timeout');
  assert.deepEqual(call.events, [{ name: 'something', attributes: { n: 1 } }]);
  assert.equal(call.resource['service.name'], 'gw-under-test');
  assert.equal(call.resource['service.version'], '1.2.3');
  await t.shutdown();
});

test('a long client value is cut at 1024 characters in the span', async () => {
  const rx = await receiver();
  const t = await loadTracing(tracingConfig({ otlp_endpoint: rx.endpoint }), { version: '1', log: recordingLog() });
  const span = t.server('long', {});
  span.set({ 'magma.request_id': 'x'.repeat(100_000) });
  span.end();
  await t.shutdown();
  await rx.until('the span', (spans) => spans.length === 1);
  assert.equal(String(rx.spans[0]!.attributes['magma.request_id']).length, 1024);
});

test('tracing.headers go with every export', async () => {
  const seen: string[] = [];
  const { createServer } = await import('node:http');
  const srv = createServer((req, res) => {
    seen.push(String(req.headers['x-collector-key']));
    req.resume();
    req.on('end', () => res.writeHead(200).end('{}'));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => srv.close(() => resolve())));
  const addr = srv.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  const t = await loadTracing(tracingConfig({ otlp_endpoint: `http://127.0.0.1:${port}/v1/traces`, headers: { 'x-collector-key': 'k-1' } }), {
    version: '1',
    log: recordingLog(),
  });
  t.server('one', {}).end();
  await t.shutdown();
  assert.deepEqual(seen, ['k-1']);
});

test('export failures are one warning until an export succeeds again, then one info line', async () => {
  const rx = await receiver();
  rx.setMode({ kind: 'refuse', status: 400 });
  const log = recordingLog();
  const t = await loadTracing(tracingConfig({ otlp_endpoint: rx.endpoint.replace('127.0.0.1', 'user:secret@127.0.0.1') }), { version: '1', log });
  for (const name of ['a', 'b', 'c']) {
    t.server(name, {}).end();
    await t.flush();
  }
  assert.equal(rx.requests, 3);
  const warns = log.lines.filter((l) => l.level === 'warn');
  assert.equal(warns.length, 1, JSON.stringify(log.lines));
  assert.match(String(warns[0]!.msg), /trace export failed.*tracing\.otlp_endpoint/);
  assert.doesNotMatch(JSON.stringify(warns[0]!.obj), /secret/, 'the endpoint is logged without its user info');
  rx.setMode({ kind: 'accept' });
  t.server('d', {}).end();
  await t.flush();
  assert.deepEqual(log.lines.filter((l) => l.level === 'info').map((l) => l.msg), ['trace export works again']);
  assert.deepEqual(rx.spans.map((s) => s.name), ['d']);
  await t.shutdown();
});

test('formatTraceparent writes version 00 and two hex digits of flags', () => {
  assert.equal(
    formatTraceparent({ traceId: TRACE_ID, spanId: '00f067aa0ba902b7', traceFlags: 0 }),
    `00-${TRACE_ID}-00f067aa0ba902b7-00`,
  );
  assert.equal(formatTraceparent({ traceId: TRACE_ID, spanId: '00f067aa0ba902b7', traceFlags: 1 }), CLIENT_TP);
});

test("the semantic-convention attribute names are OpenTelemetry's own", () => {
  const ours = Object.entries(names).filter(([k]) => k in semconv);
  assert.ok(ours.length >= 7, ours.map(([k]) => k).join(', '));
  for (const [k, v] of ours) assert.equal(v, (semconv as Record<string, unknown>)[k], k);
});
