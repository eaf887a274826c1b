/** The JSON error answers every listener gives outside its handlers (404, 405 with `Allow`, 413, a bare 500), and its HTTP metrics. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, GatewayError, internalCode, messageOf, registeredBody, type ErrorBody, type GatewayErrCode } from '../errors.js';
import { pathOfUrl } from '../http/agent-path.js';
import { answerHeaders, bodyTooLarge, closing, overBudgetHeaders } from '../http/front-rules.js';
import { answerAndLinger, type LingerBounds } from '../http/lingering-close.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The config key of a route's own `bodyLimit`: its 413 names it, so the operator raises the limit that was hit. */
    bodyLimitKey?: string;
  }
}

interface PathPattern {
  /** Literal segments, `:param` (one non-empty segment) or a trailing `*` (the rest, possibly empty). */
  segments: string[];
  methods: Set<string>;
}

function segmentsOf(path: string): string[] {
  return path.split('/').slice(1);
}

function pathMatches(pattern: readonly string[], path: readonly string[]): boolean {
  for (const [i, p] of pattern.entries()) {
    if (p === '*' && i === pattern.length - 1) return true;
    const s = path[i];
    if (s === undefined) return false;
    if (p.startsWith(':') ? s === '' : p !== s) return false;
  }
  return pattern.length === path.length;
}

function allowedMethods(patterns: readonly PathPattern[], rawUrl: string): string[] {
  const path = segmentsOf(pathOfUrl(rawUrl));
  const out = new Set<string>();
  for (const p of patterns) if (pathMatches(p.segments, path)) for (const m of p.methods) out.add(m);
  return [...out].sort();
}

function clientErrorCode(err: Error, status: number): GatewayErrCode {
  if (err instanceof GatewayError) return err.code;
  if (status === 404) return 'GATEWAY_ERR_NOT_FOUND';
  if (status === 408) return 'GATEWAY_ERR_REQUEST_TIMEOUT';
  return 'GATEWAY_ERR_BAD_REQUEST';
}

const MAX_QUOTED_PATH = 256;

/** fastify's `frameworkErrors`: what its router refuses before any hook, in the gateway's shape. */
export function frameworkErrors(err: Error, req: FastifyRequest, reply: FastifyReply): void {
  const path = req.raw.url ?? '';
  const quoted = JSON.stringify(path.length > MAX_QUOTED_PATH ? `${path.slice(0, MAX_QUOTED_PATH)}...` : path);
  const detail = 'code' in err && err.code === 'FST_ERR_BAD_URL'
    ? `the path ${quoted} is not a valid URL: a "%" must be followed by two hex digits`
    : `the path ${quoted} cannot be routed: ${err.message}`;
  void reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', detail));
}

/** node's 'checkExpectation' (an `Expect` other than `100-continue`): the gateway's 417, and the connection closes. */
function expectationFailed(req: IncomingMessage, res: ServerResponse): void {
  const expect = String(req.headers.expect ?? '').slice(0, MAX_QUOTED_PATH);
  const body = JSON.stringify(
    errorBody('GATEWAY_ERR_EXPECTATION_FAILED', `Expect: ${JSON.stringify(expect)} cannot be met; only "100-continue" is supported`),
  );
  res.writeHead(417, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...closing() });
  res.end(body);
}

function tooLargeBody(req: FastifyRequest, bodyLimitMb: number): ErrorBody {
  const key = req.routeOptions.config.bodyLimitKey;
  return key === undefined ? bodyTooLarge(bodyLimitMb) : registeredBody('GATEWAY_ERR_BODY_TOO_LARGE', key, `${req.routeOptions.bodyLimit} bytes`);
}

/** Call before any route is registered: only routes registered after the onRoute hook are known to the 405 check. */
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
    if (p === undefined) patterns.set(route.url, (p = { segments: segmentsOf(route.url), methods: new Set() }));
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) p.methods.add(m);
    // fastify answers HEAD on every GET route by itself (exposeHeadRoutes).
    if (p.methods.has('GET')) p.methods.add('HEAD');
  });

  // One label for every JSON answer: the batch front and the reference agents (FastAPI) say `application/json`.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (reply.getHeader('content-type') === 'application/json; charset=utf-8') reply.header('content-type', 'application/json');
    return payload;
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) {
      // The rest of the body is read and dropped within bounds before the connection closes, as on the batch front.
      reply.hijack();
      const headers = { ...answerHeaders({}, reply.elapsedTime), 'content-type': 'application/json', ...closing() };
      answerAndLinger(req.raw, reply.raw, 413, headers, JSON.stringify(tooLargeBody(req, bodyLimitMb)), linger());
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
      const detail = `Method Not Allowed: ${req.method} ${pathOfUrl(req.url)} (allowed: ${allowed.join(', ')})`;
      return reply.code(405).header('allow', allowed.join(', ')).send(errorBody('GATEWAY_ERR_METHOD_NOT_ALLOWED', detail));
    }
    return reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', `Not Found: ${req.method} ${req.url}`));
  });
}

/** Every answer of a fastify app counted and timed by its URL path pattern (docs/operations.md#metrics). */
export function countAnswers(app: FastifyInstance, clientOf: (req: FastifyRequest) => string): void {
  app.addHook('onResponse', async (req, reply) => {
    app.gateway.metrics.observeHttp(req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000, clientOf(req));
  });
}
