/**
 * Log lines an operator relies on, captured from the app's pino output: one info line per 4xx answer that
 * fastify makes (404, 413 on a fastify route, 401), with status, method, path and x-request-id, and ISO
 * timestamps by default.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { loggerOptions } from '../../src/logging.js';

const lines: Record<string, unknown>[] = [];
const stream = { write: (l: string): void => void lines.push(JSON.parse(l) as Record<string, unknown>) };
let app: FastifyInstance;
let url: string;

before(async () => {
  const config = parseConfigText(
    stringify({
      server: { body_limit_mb: 0.001 },
      admin: { token: 't0ken', protect_metrics: true },
      backends: { a: { url: 'http://127.0.0.1:1' } },
      routes: [{ name: 'd', backend: 'a' }],
    }),
    'access-log.yaml',
    {},
  );
  app = await buildApp({ config, logger: { ...loggerOptions('info'), stream }, probeOnStart: false, defaultMetrics: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = listenUrl(app);
});
after(() => app.close());

function listenUrl(a: FastifyInstance): string {
  const addr = a.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
}

function clientErrors(): Record<string, unknown>[] {
  return lines.filter((l) => l.msg === 'client error answered');
}

/** The log line is written in onResponse, which runs once the answer is sent: wait for it as an event. */
async function lineFor(status: number, path: string | ((p: string) => boolean)): Promise<Record<string, unknown>> {
  const want = typeof path === 'string' ? (p: string): boolean => p === path : path;
  for (let i = 0; i < 100; i++) {
    const hit = clientErrors().find((l) => l.status === status && want(String(l.path)));
    if (hit !== undefined) return hit;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  assert.fail(`no log line for ${status} ${String(path)}; lines: ${JSON.stringify(lines)}`);
}

test('a 404 is one info line with status, method, path and x-request-id', async () => {
  const res = await fetch(`${url}/nope?x=1`, { headers: { 'x-request-id': 'req-404' } });
  assert.equal(res.status, 404);
  await res.text();
  const l = await lineFor(404, '/nope?x=1');
  assert.equal(l.level, 30);
  assert.equal(l.method, 'GET');
  assert.equal(l.request_id, 'req-404');
  assert.equal(l.route, null);
  assert.equal(clientErrors().filter((x) => x.path === '/nope?x=1').length, 1, 'exactly one line');
});

test('a 413 on a fastify route and a 401 are logged the same way; a 200 is not', async () => {
  const big = await fetch(`${url}/v1/coaching`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(5000) });
  assert.equal(big.status, 413);
  await big.text();
  assert.equal((await lineFor(413, '/v1/coaching')).method, 'POST');

  const denied = await fetch(`${url}/metrics`);
  assert.equal(denied.status, 401);
  await denied.text();
  assert.equal((await lineFor(401, '/metrics')).route, '/metrics');

  const before = clientErrors().length;
  const ok = await fetch(`${url}/v1/info`);
  assert.equal(ok.status, 200);
  await ok.text();
  // A later request's line is the event that says the 200's onResponse has run too.
  const marker = await fetch(`${url}/marker`);
  await marker.text();
  await lineFor(404, '/marker');
  assert.equal(clientErrors().length, before + 1);
});

test('a very long path is cut in the log line', async () => {
  const path = `/${'p'.repeat(5000)}`;
  const res = await fetch(`${url}${path}`);
  await res.text();
  const l = await lineFor(404, (p) => p.startsWith('/ppp'));
  assert.ok((l.path as string).length <= 260, String((l.path as string).length));
});

test('log lines carry ISO-8601 timestamps', () => {
  assert.ok(lines.length > 0);
  for (const l of lines) assert.match(String(l.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});
