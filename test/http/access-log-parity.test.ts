/**
 * The access-log policy (http/front-rules.ts) on `POST /v1/responses`: one "client error answered" line for each
 * 401, 404, 408, 413, 422 and 503, the same line with and without a query string (both are the batch front's).
 * Spoken over plain sockets, so each refusal is met as a client meets it: a body cut short (408), a declared
 * length over the limit (413), a body that waits for room it never gets (503).
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { loggerOptions } from '../../src/logging.js';
import { ACCESS_LOG_MESSAGE } from '../../src/http/front-rules.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';
import { parseAnswer } from '../helpers/raw-http.js';

const KEY = 'team-a-key-7f3e1a9c0b2d8e46';

/** Send `head` and `body`, then read until a whole answer (by its content-length) came; the socket stays the caller's. */
async function ask(url: string, head: string, body: string): Promise<{ status: number; socket: Socket }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  socket.write(`${head}\r\n\r\n${body}`);
  let raw = '';
  const status = await new Promise<number>((resolve) => {
    socket.on('data', (d: Buffer) => {
      raw += d.toString();
      const a = parseAnswer(raw);
      if (a.status !== 0 && Buffer.byteLength(a.body) >= Number(a.headers['content-length'])) resolve(a.status);
    });
    socket.once('close', () => resolve(parseAnswer(raw).status));
  });
  return { status, socket };
}

test('each refusal of POST /v1/responses writes one access-log line, the same with and without a query string', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const lines: Record<string, unknown>[] = [];
  const stream = { write: (l: string): void => void lines.push(JSON.parse(l) as Record<string, unknown>) };
  // Two gateways logging to one stream: the 408 needs a short body clock, the 503 a long one (a slow machine
  // must not turn a wait for room into a 408).
  const start = async (server: Record<string, unknown>): Promise<Awaited<ReturnType<typeof f.gateway>>> => {
    const g = await f.gateway(oneBackend({ a }, { server: { body_limit_mb: 1, ...server }, clients: { 'team-a': { key: KEY } } }), {
      logger: { ...loggerOptions('info'), stream },
    });
    f.defer(() => g.app.server.closeAllConnections());
    return g;
  };
  const gw = await start({ body_timeout_s: 0.3 });
  const budgeted = await start({ memory_budget_mb: 1, admission_timeout_s: 0.2, body_timeout_s: 60 });
  const valid = JSON.stringify({ request_id: 'ok', inputs: [mkInput(1)] });
  const head = (path: string, id: string, length: number, auth = true): string =>
    [`POST ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', `content-length: ${length}`, `x-request-id: ${id}`, ...(auth ? [`authorization: Bearer ${KEY}`] : [])].join('\r\n');
  const cases: { status: number; run(path: string, id: string): Promise<{ status: number; socket: Socket }> }[] = [
    { status: 401, run: (p, id) => ask(gw.url, head(p, id, valid.length, false), valid) },
    { status: 404, run: (p, id) => ask(gw.url, head(p.replace('/v1/', '/agents/nobody/v1/'), id, valid.length), valid) },
    // Ten bytes of a hundred, then nothing: server.body_timeout_s.
    { status: 408, run: (p, id) => ask(gw.url, head(p, id, 100), '{"request_') },
    // Over body_limit_mb by its declared length: answered before any body byte.
    { status: 413, run: (p, id) => ask(gw.url, head(p, id, 2 * 1024 * 1024), '') },
    { status: 422, run: (p, id) => ask(gw.url, head(p, id, 2), '{}') },
  ];
  const sockets: Socket[] = [];
  f.defer(() => sockets.forEach((s) => s.destroy()));
  const run = async (status: number, go: (path: string, id: string) => Promise<{ status: number; socket: Socket }>): Promise<void> => {
    for (const path of ['/v1/responses', '/v1/responses?x=1']) {
      const answered = await go(path, `${status}-${path}`);
      sockets.push(answered.socket);
      assert.equal(answered.status, status, `${path}: ${status}`);
    }
  };
  for (const c of cases) await run(c.status, c.run);
  // 503: the whole budget held by a body that has begun and does not end; the next body waits past
  // server.admission_timeout_s for room.
  const holder = connect(Number(new URL(budgeted.url).port), '127.0.0.1');
  sockets.push(holder);
  holder.write(`${head('/v1/responses', 'holder', 1024 * 1024 - 1)}\r\n\r\n{`);
  await run(503, (p, id) => ask(budgeted.url, head(p, id, 512 * 1024), '{'));

  for (const status of [401, 404, 408, 413, 422, 503]) {
    const logged = (path: string): Record<string, unknown> => {
      const found = lines.filter((l) => l.msg === ACCESS_LOG_MESSAGE && l.request_id === `${status}-${path}`);
      assert.equal(found.length, 1, `one access-log line for ${status} on ${path}`);
      return found[0]!;
    };
    const plain = logged('/v1/responses');
    const query = logged('/v1/responses?x=1');
    assert.equal(plain.status, status);
    // What differs by nature: the path sent, the request id, the time, the client's port.
    const same = (l: Record<string, unknown>): Record<string, unknown> => ({ ...l, path: undefined, request_id: undefined, ms: undefined, time: undefined });
    assert.deepEqual(same(query), same(plain), `${status}: the same line`);
    assert.equal(query.path, `${String(plain.path)}?x=1`);
    assert.equal(plain.client, status === 401 ? 'unauthorized' : 'team-a');
  }
});
