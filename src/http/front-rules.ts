/** The HTTP rules of the agent listener, written once for the batch front (batch-front.ts) and fastify. */
import type { IncomingMessage } from 'node:http';
import type { BatchAnswer } from '../batch/batch-cycle.js';
import type { Logger } from '../logging.js';
import { errorBody, registeredBody, type ErrorBody } from '../errors.js';
import { loggableUrl } from './request-client.js';

const OVERHEAD_HEADER = 'x-gateway-overhead-ms';
const CACHE_HITS_HEADER = 'x-gateway-cache-hits';

/** What the gateway's headers say; `overheadMs` undefined for an answer made without a batch: its whole time is used. */
export type AnswerFacts = Pick<BatchAnswer, 'requestId' | 'overheadMs' | 'replayHit' | 'cacheHits'>;

export function answerHeaders(a: AnswerFacts, elapsedMs: number): Record<string, string> {
  const h: Record<string, string> = { [OVERHEAD_HEADER]: (a.overheadMs ?? elapsedMs).toFixed(2) };
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

export function streamedTrailers(overheadMs: number): Record<string, string> {
  return { [OVERHEAD_HEADER]: overheadMs.toFixed(2) };
}

/** The rest of the body is not read, or the gateway drains: the client should learn it here. */
export function closing(): Record<string, string> {
  return { connection: 'close' };
}

export function drainHeaders(draining: boolean): Record<string, string> | undefined {
  return draining ? closing() : undefined;
}

export function bodyTooLarge(limitMb: number): ErrorBody {
  return registeredBody('GATEWAY_ERR_BODY_TOO_LARGE', 'server.body_limit_mb', `${limitMb} MiB`);
}

export function bodyTimedOut(timeoutS: number): ErrorBody {
  return registeredBody('GATEWAY_ERR_REQUEST_TIMEOUT', 'body', timeoutS);
}

export function closingBody(): ErrorBody {
  return errorBody('GATEWAY_ERR_NOT_READY', 'shutting down: no new batches are taken');
}

/** The 503 of a request that found no room in time (docs/memory-budget.md#the-503), on every listener path. */
export function memoryBudgetDetail(timeoutS: number): string {
  return `no room under server.memory_budget_mb within server.admission_timeout_s (${timeoutS} s): the gateway holds as much as it may for the batches before this one; retry later`;
}

export function overBudgetBody(admissionTimeoutS: number): ErrorBody {
  return errorBody('GATEWAY_ERR_MEMORY_BUDGET', memoryBudgetDetail(admissionTimeoutS));
}

export function overBudgetHeaders(): Record<string, string> {
  return { ...closing(), 'retry-after': '5' };
}

/** Longest piece of a client's path or header written to a log line. */
const MAX_LOGGED = 256;

export const ACCESS_LOG_MESSAGE = 'client error answered';

interface Answered {
  url: string;
  status: number;
  /** Null when none answered (404). */
  route: string | null;
  client: string;
  ms: number;
}

/** The one writer of the access-log line (docs/operations.md#logs): 4xx and 503, a client key as REDACTED. */
export function logAnswer(log: Logger, req: IncomingMessage, a: Answered): void {
  if (!((a.status >= 400 && a.status < 500) || a.status === 503)) return;
  const path = loggableUrl(req, a.url);
  const requestId = req.headers['x-request-id'];
  const id = Array.isArray(requestId) ? requestId[0] : requestId;
  const line = {
    status: a.status,
    method: req.method,
    path: path.length > MAX_LOGGED ? `${path.slice(0, MAX_LOGGED)}…` : path,
    route: a.route,
    request_id: id?.slice(0, MAX_LOGGED),
    remote: req.socket.remoteAddress,
    client: a.client,
    ms: Number(a.ms.toFixed(2)),
  };
  log.info(line, ACCESS_LOG_MESSAGE);
}
