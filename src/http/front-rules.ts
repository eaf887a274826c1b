/**
 * The HTTP rules both agent fronts apply, written once. The raw front (http/batch-front.ts) answers
 * `POST /v1/responses` on node:http; fastify (app.ts, plugins/, routes/) answers everything else and the
 * batches that reach it anyway (a query string, `app.inject`). A client must not be able to tell which one
 * answered (test/http/front-parity.test.ts), so what both write comes from here: the overhead header, the
 * `Connection: close` of a drain or of a refused body, the 408, 413 and budget 503 bodies (templates in the
 * error registry, src/errors.ts), and the access-log line of a 4xx.
 */
import type { IncomingMessage } from 'node:http';
import { OVERHEAD_HEADER } from '../batch/streamed-batch.js';
import { errorBody, registeredBody, type ErrorBody } from '../errors.js';
import { memoryBudgetDetail, RETRY_AFTER_S } from '../memory/over-budget.js';
import { loggableUrl } from './request-client.js';

export { OVERHEAD_HEADER };

/** `x-gateway-overhead-ms` of an answer the gateway made without a batch (a 4xx, a 503): its whole time. */
export function overheadValue(ms: number): string {
  return ms.toFixed(2);
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

/** 413: the body is over server.body_limit_mb. Written once the rest is dropped (http/body-discard.ts). */
export function bodyTooLarge(limitMb: number): ErrorBody {
  return registeredBody('GATEWAY_ERR_BODY_TOO_LARGE', 'server.body_limit_mb', `${limitMb} MiB`);
}

/** 408: the body did not arrive within server.body_timeout_s. */
export function bodyTimedOut(timeoutS: number): ErrorBody {
  return registeredBody('GATEWAY_ERR_REQUEST_TIMEOUT', 'body', timeoutS);
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

/** Whether an answer gets an access-log line: the 4xx ones (a batch writes its own line; a 5xx logs its error). */
export function logsAnswer(status: number): boolean {
  return status >= 400 && status < 500;
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
 * The fields of a 4xx's access-log line: nothing of the body; the path with any client key written as
 * REDACTED (docs/operations.md#client-keys) and cut, like `x-request-id`, at MAX_LOGGED characters.
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
