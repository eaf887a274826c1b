/**
 * The HTTP rules of the agent listener, written once. The batch front (http/batch-front.ts) answers every
 * `POST /v1/responses`; fastify (app.ts, plugins/, routes/) answers everything else. What both write comes from
 * here: the gateway's answer headers (the overhead header, the request id, the cache hits, as a header or as
 * the trailer of a streamed answer), the `Connection: close` of a drain or of a refused body, the 408, 413 and
 * 503 bodies (templates in the error registry, src/errors.ts), and the access-log policy and line.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logging.js';
import { errorBody, registeredBody, type ErrorBody } from '../errors.js';
import { memoryBudgetDetail, RETRY_AFTER_S } from '../memory/over-budget.js';
import { loggableUrl } from './request-client.js';

/** The gateway's own time on an answer, in milliseconds: a header, or a trailer on a streamed answer. */
export const OVERHEAD_HEADER = 'x-gateway-overhead-ms';
/** The header saying how many inputs the response cache answered (docs/cache.md). */
export const CACHE_HITS_HEADER = 'x-gateway-cache-hits';

/** What the gateway's headers of a batch answer say (handle-batch.ts's BatchAnswer has these). */
export interface AnswerFacts {
  requestId?: string;
  /** The gateway's own time on a batch; undefined for an answer made without one (its whole time is used). */
  overheadMs?: number;
  replayHit?: boolean;
  cacheHits?: number;
}

/** `x-gateway-overhead-ms`'s value. */
export function overheadValue(ms: number): string {
  return ms.toFixed(2);
}

/** The gateway's headers of an answer written whole; `elapsedMs` stands for the overhead of an answer without a batch. */
export function answerHeaders(a: AnswerFacts, elapsedMs: number): Record<string, string> {
  const h: Record<string, string> = { [OVERHEAD_HEADER]: overheadValue(a.overheadMs ?? elapsedMs) };
  if (a.requestId !== undefined) h['x-request-id'] = a.requestId;
  if (a.replayHit === true) h['x-gateway-replay'] = 'hit';
  if (a.cacheHits !== undefined) h[CACHE_HITS_HEADER] = String(a.cacheHits);
  return h;
}

/** The head of a streamed answer: the overhead is known only at its end and follows as a trailer. */
export function streamedHeaders(a: AnswerFacts): Record<string, string> {
  const h: Record<string, string> = { trailer: OVERHEAD_HEADER };
  if (a.requestId !== undefined) h['x-request-id'] = a.requestId;
  if (a.cacheHits !== undefined) h[CACHE_HITS_HEADER] = String(a.cacheHits);
  return h;
}

/** The trailer of a streamed answer. */
export function streamedTrailers(overheadMs: number): Record<string, string> {
  return { [OVERHEAD_HEADER]: overheadValue(overheadMs) };
}

/**
 * Headers of an answer after which the connection ends: the rest of its body, if any, is not read (413, 503,
 * 408, 417), or the gateway drains for shutdown and the client should learn it here rather than find the
 * connection closed later.
 */
export function closing(): Record<string, string> {
  return { connection: 'close' };
}

/** While draining every answer closes its connection (src/shutdown.ts); otherwise nothing to add. */
export function drainHeaders(draining: boolean): Record<string, string> | undefined {
  return draining ? closing() : undefined;
}

/** 413: the body is over server.body_limit_mb. */
export function bodyTooLarge(limitMb: number): ErrorBody {
  return registeredBody('GATEWAY_ERR_BODY_TOO_LARGE', limitMb);
}

/** 408: the body did not arrive within server.body_timeout_s. */
export function bodyTimedOut(timeoutS: number): ErrorBody {
  return registeredBody('GATEWAY_ERR_REQUEST_TIMEOUT', 'body', timeoutS);
}

/** 503 of a gateway that is closing (its app shutting down): the batch is not taken. */
export function closingBody(): ErrorBody {
  return errorBody('GATEWAY_ERR_NOT_READY', 'shutting down: no new batches are taken');
}

/**
 * 503: no room under the memory budget within server.admission_timeout_s (docs/memory-budget.md). The body
 * was not read, so the connection ends with the answer.
 */
export function overBudgetBody(admissionTimeoutS: number): ErrorBody {
  return errorBody('GATEWAY_ERR_MEMORY_BUDGET', memoryBudgetDetail(admissionTimeoutS));
}

/** The 503's headers: when to try again, and the end of the connection. */
export function overBudgetHeaders(): Record<string, string> {
  return { ...closing(), 'retry-after': String(RETRY_AFTER_S) };
}

/** Longest piece of a client's path or header written to a log line: both come from the client. */
const MAX_LOGGED = 256;

/** The message of the access-log line. */
export const ACCESS_LOG_MESSAGE = 'client error answered';

/**
 * The access-log policy (docs/operations.md#logs), for every listener: a line for each answer that turns a
 * client away, 4xx and 503 (a batch answered 200 writes its own line; a 500 logs its error).
 */
export function logsAnswer(status: number): boolean {
  return (status >= 400 && status < 500) || status === 503;
}

export interface AccessLogLine {
  status: number;
  method: string | undefined;
  path: string;
  /** The route pattern that answered, null when none did (404). */
  route: string | null;
  request_id: string | undefined;
  remote: string | undefined;
  client: string;
  ms: number;
}

/**
 * The fields of an access-log line: nothing of the body; the path with any client key written as REDACTED
 * (docs/operations.md#client-keys) and cut, like `x-request-id`, at MAX_LOGGED characters.
 */
export function accessLogLine(req: IncomingMessage, url: string, status: number, route: string | null, client: string, ms: number): AccessLogLine {
  const path = loggableUrl(req, url);
  const requestId = req.headers['x-request-id'];
  const id = Array.isArray(requestId) ? requestId[0] : requestId;
  return {
    status,
    method: req.method,
    path: path.length > MAX_LOGGED ? `${path.slice(0, MAX_LOGGED)}…` : path,
    route,
    request_id: id?.slice(0, MAX_LOGGED),
    remote: req.socket.remoteAddress,
    client,
    ms: Number(ms.toFixed(2)),
  };
}

/** What an access-log line says of one answer. */
export interface Answered {
  url: string;
  status: number;
  route: string | null;
  client: string;
  ms: number;
}

/** The one writer of the access-log line, by its policy: the batch front and fastify's hook (plugins/access-log.ts) call it. */
export function logAnswer(log: Logger, req: IncomingMessage, a: Answered): void {
  if (!logsAnswer(a.status)) return;
  log.info(accessLogLine(req, a.url, a.status, a.route, a.client, a.ms), ACCESS_LOG_MESSAGE);
}
