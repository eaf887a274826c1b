/**
 * The raw front of the hot path: `POST /v1/responses` is answered on node:http directly, every other request
 * goes to fastify (installed through fastify's `serverFactory`, see app.ts).
 *
 * Why (S1, docs/gateway-behaviour.md "Performance targets"): the small-batch target leaves no room for per-request
 * work that does nothing for the
 * batch. Every batch would otherwise go through fastify's request and reply objects, its async hooks and its
 * send pipeline, which cost about 10 µs a request in front of a bare JSON proxy here. This front does for this
 * one path what fastify and the app's hooks did: body limit (413), HTTP metrics, `x-gateway-overhead-ms`, JSON
 * errors. Requests it does not take (another path or method, a query string, a gateway that is closing and
 * must answer 503) are left to fastify unchanged.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { onClientGone } from '../abort.js';
import type { GatewayState } from '../plugins/gateway.js';
import { answerHeaders, handleBatch, type BatchAnswer } from './batch-handler.js';

export const BATCH_PATH = '/v1/responses';

/** What the front needs of the app, available once the app is built. */
export interface FrontHost {
  gateway: GatewayState;
  log: FastifyBaseLogger;
  bodyLimit: number;
  bodyLimitMb: number;
  /** True from the moment `app.close()` starts: fastify then answers 503 (return503OnClosing). */
  closing(): boolean;
}

export interface FrontServerOptions {
  keepAliveTimeout: number;
  requestTimeout: number;
}

/** fastify's serverFactory: a node:http server whose listener takes the batch path before fastify. */
export function createFrontServer(
  fastifyHandler: RequestListener,
  host: () => FrontHost | undefined,
  opts: FrontServerOptions,
): Server {
  const server = createServer((req, res) => {
    const h = req.method === 'POST' && req.url === BATCH_PATH ? host() : undefined;
    if (h === undefined || h.closing()) {
      fastifyHandler(req, res);
      return;
    }
    serveBatch(h, req, res);
  });
  // What fastify sets on the server it creates itself (it does not when given a serverFactory).
  server.keepAliveTimeout = opts.keepAliveTimeout;
  server.requestTimeout = opts.requestTimeout;
  return server;
}

function serveBatch(h: FrontHost, req: IncomingMessage, res: ServerResponse): void {
  const t0 = performance.now();
  const declared = Number(req.headers['content-length']);
  if (declared > h.bodyLimit) {
    tooLarge(h, req, res, t0);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > h.bodyLimit) {
      over = true;
      chunks.length = 0;
      tooLarge(h, req, res, t0);
      return;
    }
    chunks.push(chunk);
  });
  req.on('error', () => undefined); // a client that resets mid-body: nothing to answer, 'close' cleans up
  req.on('end', () => {
    if (over) return;
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
    handleBatch(h.gateway, { body, headers: req.headers, log: h.log, onClientGone: (fn) => onClientGone(res, fn) }).then(
      (a) => reply(h, res, a.status, a.body, answerHeaders(a, performance.now() - t0), t0),
      (err: unknown) => {
        h.log.error({ err }, 'internal error');
        reply(h, res, 500, '{"detail":"internal gateway error"}', {}, t0);
      },
    );
  });
}

function tooLarge(h: FrontHost, req: IncomingMessage, res: ServerResponse, t0: number): void {
  const detail = `request body exceeds server.body_limit_mb (${h.bodyLimitMb} MiB)`;
  // The rest of the body is not read: the connection closes after the answer.
  reply(h, res, 413, JSON.stringify({ detail }), { connection: 'close' }, t0);
  req.resume();
}

function reply(
  h: FrontHost,
  res: ServerResponse,
  status: BatchAnswer['status'] | 413 | 500,
  body: string,
  headers: Record<string, string>,
  t0: number,
): void {
  if (res.headersSent || res.destroyed) return;
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(Buffer.byteLength(body));
  headers['x-gateway-overhead-ms'] ??= (performance.now() - t0).toFixed(2);
  res.writeHead(status, headers);
  res.end(body);
  // What the app's onResponse hook records for fastify's routes.
  const { metrics } = h.gateway;
  metrics.httpRequests.inc({ route: BATCH_PATH, status_code: String(status) });
  metrics.httpDuration.observe({ route: BATCH_PATH }, (performance.now() - t0) / 1000);
}
