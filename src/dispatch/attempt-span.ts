/** The client span of one sub-request (docs/operations.md#tracing), built only when the batch's span is recorded. */
import {
  ATTR_BACKEND,
  ATTR_CANDIDATES,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_INPUTS,
  ATTR_OUTCOME,
  ATTR_REPLICA,
  ATTR_ROUTES,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '../tracing/attributes.js';
import type { SpanAttributes, TraceSpan } from '../tracing/trace-span.js';
import type { Replica } from '../upstream/replica.js';
import type { Item } from './batch-item.js';

/** Set when a refused connection sent these inputs to another replica of the same backend. */
const ATTR_REPLICA_RETRY = 'magma.replica_retry';

/** The span's name: its backend, so a trace view lists the sub-requests by who answered them. */
export function attemptSpanName(replica: Replica): string {
  return `POST ${replica.backend}`;
}

export function replicaCallAttributes(replica: Replica, method: string, path: string): SpanAttributes {
  const u = new URL(replica.origin);
  return {
    [ATTR_BACKEND]: replica.backend,
    [ATTR_REPLICA]: replica.id,
    [ATTR_HTTP_REQUEST_METHOD]: method,
    // The origin carries no user info: a password in a backend url stays out of the trace.
    [ATTR_URL_FULL]: replica.origin + replica.path(path),
    // An IPv6 address without its brackets.
    [ATTR_SERVER_ADDRESS]: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    [ATTR_SERVER_PORT]: u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80,
  };
}

export function attemptAttributes(replica: Replica, items: readonly Item[], replicaRetry: boolean): SpanAttributes {
  let candidates = 0;
  const routes: string[] = [];
  for (const it of items) {
    candidates += it.count;
    if (!routes.includes(it.route)) routes.push(it.route);
  }
  return Object.assign({}, replicaCallAttributes(replica, 'POST', '/v1/responses'), {
    [ATTR_INPUTS]: items.length,
    [ATTR_CANDIDATES]: candidates,
    [ATTR_ROUTES]: routes,
    ...(replicaRetry ? { [ATTR_REPLICA_RETRY]: true } : {}),
  });
}

export function endAttemptSpan(span: TraceSpan, outcome: string | undefined, status: number | undefined, reason: string | undefined): void {
  span.set({ [ATTR_OUTCOME]: outcome, [ATTR_HTTP_RESPONSE_STATUS_CODE]: status });
  if (outcome === undefined) span.fail('exception', 'the sub-request ended without an outcome');
  else if (outcome !== 'ok') span.fail(outcome, reason);
  span.end();
}
