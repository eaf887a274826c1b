/**
 * The bench's "naive proxy" reference: the cheapest proxy that reads what it forwards. Raw node:http in front,
 * one undici Pool behind, `JSON.parse` of the request with a shallow check (an object with an `inputs` array),
 * the parsed request re-serialized to the backend, the answer parsed and re-serialized to the client. No
 * lossless numbers, no strict validation, no routing, metrics, replay or logging: what (docs/performance.md#targets)
 * compares with as "a naive
 * proxy that parses and shallow-validates", to show what the gateway's features cost on top of reading JSON.
 *
 *   node dist/bench/naive-proxy.js --upstream http://127.0.0.1:PORT [--port 0]
 *
 * Prints `{"port":N}` on stdout once listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});

if (values.upstream === undefined) throw new Error('--upstream is required');
const pool = new Pool(values.upstream, { connections: 64, pipelining: 1 });

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function forward(body: Buffer): Promise<[number, string]> {
  const request = JSON.parse(body.toString('utf8')) as { inputs?: unknown };
  if (typeof request !== 'object' || request === null || !Array.isArray(request.inputs)) {
    return [422, '{"detail":"inputs must be a list"}'];
  }
  const r = await pool.request({
    method: 'POST',
    path: '/v1/responses',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
  });
  return [r.statusCode, JSON.stringify(JSON.parse(await r.body.text()))];
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'POST') {
    req.resume();
    send(res, 200, '{"status":"ready"}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    forward(Buffer.concat(chunks)).then(
      ([status, body]) => send(res, status, body),
      (err: unknown) => send(res, 502, JSON.stringify({ detail: String(err) })),
    );
  });
}

const server = createServer(handle);
server.keepAliveTimeout = 120_000;
server.listen(Number(values.port), values.host, () => {
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n');
});
const stop = (): void => {
  server.close();
  void pool.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
