/**
 * The JSON error answers every gateway listener gives outside its handlers: 404 for a path no route serves,
 * 405 with `Allow` for a known path asked with another method (`GET /v1/responses`, `POST /health`), 413 over
 * the body limit, and a bare 500 that never shows internals. Used by the agent app and the admin app alike.
 *
 * Known paths are collected from the routes as they are registered (onRoute), so the 405 check needs no list
 * kept by hand: a route added anywhere later is covered. Matching a request path against the patterns is a
 * walk over its segments, linear in the path's length whatever a client sends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, GatewayError, internalCode, messageOf, type GatewayErrCode } from '../errors.js';
import { pathOfUrl } from '../http/agent-path.js';
import { answerHeaders, bodyTooLarge, closing, overBudgetHeaders } from '../http/front-rules.js';
import { answerAndLinger, type LingerBounds } from '../http/lingering-close.js';

interface PathPattern {
  /** Literal segments, `:param` (one non-empty segment) or a trailing `*` (the rest, possibly empty). */
  segments: string[];
  methods: Set<string>;
}

function segmentsOf(path: string): string[] {
  return path.split('/').slice(1);
}

/** Whether a concrete path matches a fastify route pattern (`/a/:b`, `/a/:b/*`). */
function pathMatches(pattern: readonly string[], path: readonly string[]): boolean {
  for (const [i, p] of pattern.entries()) {
    if (p === '*' && i === pattern.length - 1) return true;
    const s = path[i];
    if (s === undefined) return false;
    if (p.startsWith(':') ? s === '' : p !== s) return false;
  }
  return pattern.length === path.length;
}

/** The methods the app serves on `path` (sorted), empty when no route has that path. */
function allowedMethods(patterns: readonly PathPattern[], rawUrl: string): string[] {
  const path = segmentsOf(pathOfUrl(rawUrl));
  const out = new Set<string>();
  for (const p of patterns) if (pathMatches(p.segments, path)) for (const m of p.methods) out.add(m);
  return [...out].sort();
}

/** The code of a 4xx raised before a handler: the error's own, else what its status means (fastify's FST_ERR_*). */
function clientErrorCode(err: Error, status: number): GatewayErrCode {
  if (err instanceof GatewayError) return err.code;
  if (status === 404) return 'GATEWAY_ERR_NOT_FOUND';
  if (status === 408) return 'GATEWAY_ERR_REQUEST_TIMEOUT';
  return 'GATEWAY_ERR_BAD_REQUEST';
}

/** Longest piece of a client's path quoted back in an error detail. */
const MAX_QUOTED_PATH = 256;

/**
 * fastify's `frameworkErrors`: what its router refuses before any hook (a path with a bad `%` escape, a path
 * parameter too long) answered in the gateway's `{"detail","code"}` shape instead of fastify's own.
 */
export function frameworkErrors(err: Error, req: FastifyRequest, reply: FastifyReply): void {
  const path = req.raw.url ?? '';
  const quoted = JSON.stringify(path.length > MAX_QUOTED_PATH ? `${path.slice(0, MAX_QUOTED_PATH)}...` : path);
  const detail = 'code' in err && err.code === 'FST_ERR_BAD_URL'
    ? `the path ${quoted} is not a valid URL: a "%" must be followed by two hex digits`
    : `the path ${quoted} cannot be routed: ${err.message}`;
  void reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', detail));
}

/**
 * node's 'checkExpectation': an `Expect` other than `100-continue` (which node answers itself). node would
 * answer a bare 417; the gateway's shape instead, and the connection closes (the body, if one is sent anyway,
 * is not read).
 */
function expectationFailed(req: IncomingMessage, res: ServerResponse): void {
  const expect = String(req.headers.expect ?? '').slice(0, MAX_QUOTED_PATH);
  const body = JSON.stringify(
    errorBody('GATEWAY_ERR_EXPECTATION_FAILED', `Expect: ${JSON.stringify(expect)} cannot be met; only "100-continue" is supported`),
  );
  res.writeHead(417, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...closing() });
  res.end(body);
}

/**
 * Installs the error and not-found handlers. Call before any route is registered: only routes registered after
 * the onRoute hook are known to the 405 check.
 */
export function installHttpErrors(
  app: FastifyInstance,
  bodyLimitMb: number,
  linger: () => LingerBounds = () => ({ maxBytes: 0, maxMs: 0 }),
  servedElsewhere: readonly { url: string; method: string }[] = [],
): void {
  const patterns = new Map<string, PathPattern>();
  // Paths answered before fastify (the batch front): their other methods are 405 all the same.
  for (const r of servedElsewhere) patterns.set(r.url, { segments: segmentsOf(r.url), methods: new Set([r.method]) });
  app.server.on('checkExpectation', expectationFailed);
  app.addHook('onRoute', (route) => {
    let p = patterns.get(route.url);
    if (p === undefined) {
      p = { segments: segmentsOf(route.url), methods: new Set() };
      patterns.set(route.url, p);
    }
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) p.methods.add(m);
    // fastify answers HEAD on every GET route by itself (exposeHeadRoutes).
    if (p.methods.has('GET')) p.methods.add('HEAD');
  });

  // fastify labels the JSON it serializes `application/json; charset=utf-8`; the raw batch front, the batch
  // route and the reference agents (FastAPI) say `application/json` (JSON is UTF-8 by definition, RFC 8259).
  // One label for every JSON answer, whichever part of the gateway wrote it.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (reply.getHeader('content-type') === 'application/json; charset=utf-8') reply.header('content-type', 'application/json');
    return payload;
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) {
      // Written at once, then the rest of the body is read and dropped within bounds before the connection
      // closes (http/lingering-close.ts), as on the batch front; the onResponse hooks run at its end.
      reply.hijack();
      const headers = { ...answerHeaders({}, reply.elapsedTime), 'content-type': 'application/json', ...closing() };
      answerAndLinger(req.raw, reply.raw, 413, headers, JSON.stringify(bodyTooLarge(bodyLimitMb)), linger());
      return undefined;
    }
    if (err instanceof GatewayError && err.code === 'GATEWAY_ERR_MEMORY_BUDGET') {
      // The body was not read: the connection ends with this answer (docs/memory-budget.md).
      return reply.code(503).headers(overBudgetHeaders()).send(errorBody(err.code, err.message));
    }
    if (status >= 500) {
      req.log.error({ err }, 'internal error');
      return reply.code(status).send(errorBody(internalCode(err), messageOf('GATEWAY_ERR_INTERNAL')));
    }
    return reply.code(status).send(errorBody(clientErrorCode(err, status), err.message));
  });

  app.setNotFoundHandler((req: FastifyRequest, reply) => {
    const allowed = allowedMethods([...patterns.values()], req.url);
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send(
          errorBody(
            'GATEWAY_ERR_METHOD_NOT_ALLOWED',
            `Method Not Allowed: ${req.method} ${pathOfUrl(req.url)} (allowed: ${allowed.join(', ')})`,
          ),
        );
    }
    return reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', `Not Found: ${req.method} ${req.url}`));
  });
}
