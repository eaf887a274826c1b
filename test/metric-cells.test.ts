/**
 * The batch path's counts kept in cells (src/metric-cells.ts): a read of the registry sees every count made
 * before it, a gauge that went up and down reads its net value, and nothing piles up between reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Gauge, Registry } from 'prom-client';
import { MetricCells } from '../src/metric-cells.js';
import { GatewayMetrics } from '../src/metrics.js';

test('counts made in cells are in the series at every read, per label set, and only once', async () => {
  const registry = new Registry();
  const read: { cells?: MetricCells<'a' | 'b'> } = {};
  const counter = new Counter({ name: 'c_total', help: 'h', labelNames: ['a', 'b'] as const, registers: [registry], collect: () => read.cells?.flush() });
  const cells = new MetricCells(['a', 'b'], counter);
  read.cells = cells;
  cells.add(1, 'x', 'y');
  cells.add(2, 'x', 'y');
  cells.add(5, 'x', 'z');
  const first = await registry.getSingleMetricAsString('c_total');
  assert.match(first, /^c_total\{a="x",b="y"\} 3$/m);
  assert.match(first, /^c_total\{a="x",b="z"\} 5$/m);
  cells.add(1, 'x', 'y');
  const second = await registry.getSingleMetricAsString('c_total');
  assert.match(second, /^c_total\{a="x",b="y"\} 4$/m);
  assert.match(second, /^c_total\{a="x",b="z"\} 5$/m);
});

test('a gauge up and down many times between reads holds its net value and lists its cell once', async () => {
  const registry = new Registry();
  const read: { cells?: MetricCells<'backend'> } = {};
  const gauge = new Gauge({ name: 'g', help: 'h', labelNames: ['backend'] as const, registers: [registry], collect: () => read.cells?.flush() });
  const cells = new MetricCells(['backend'], gauge);
  read.cells = cells;
  for (let i = 0; i < 1000; i++) {
    cells.add(1, 'b');
    cells.add(-1, 'b');
  }
  cells.add(1, 'b');
  // The pending list holds one entry per cell, however many changes it saw.
  assert.equal((cells as unknown as { dirty: unknown[] }).dirty.length, 1); // a private field, read to prove the bound
  assert.match(await registry.getSingleMetricAsString('g'), /^g\{backend="b"\} 1$/m);
  cells.add(-1, 'b');
  assert.match(await registry.getSingleMetricAsString('g'), /^g\{backend="b"\} 0$/m);
});

test('the gateway series fed by cells read what the batch path counted', async () => {
  const m = new GatewayMetrics({ defaultMetrics: false });
  m.countInput('default', 'r', 'agent');
  m.countCandidates('default', 'r', 'agent', 'completed', 3);
  m.countBackendRequest('agent', 'ok');
  m.backendInFlightBy('agent', 1);
  m.observeHttp('/v1/responses', 200, 0.01, 'anonymous');
  m.observeHttp('/v1/responses', 200, 0.01, 'anonymous');
  const text = await m.registry.metrics();
  assert.match(text, /^magma_gateway_inputs_total\{agent="default",route="r",backend="agent"\} 1$/m);
  assert.match(text, /^magma_gateway_candidates_total\{agent="default",route="r",backend="agent",status="completed"\} 3$/m);
  assert.match(text, /^magma_gateway_backend_requests_total\{backend="agent",outcome="ok"\} 1$/m);
  assert.match(text, /^magma_gateway_backend_in_flight\{backend="agent"\} 1$/m);
  assert.match(text, /^magma_gateway_http_requests_total\{endpoint="\/v1\/responses",status_code="200",client="anonymous"\} 2$/m);
});
