/**
 * The names of the span attributes and events the gateway writes (docs/operations.md#tracing): OpenTelemetry's semantic
 * conventions where one exists (HTTP, server, URL, error), `magma.*` for what only a MAGMA gateway knows.
 */
// The stable semantic-convention names, written out rather than imported from
// @opentelemetry/semantic-conventions: that package costs about 1 MB of heap to load, and with tracing off the
// gateway loads no OpenTelemetry code (load-tracing.ts). test/tracing/otel-tracing.test.ts checks them against it.
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_SERVER_ADDRESS = 'server.address';
export const ATTR_SERVER_PORT = 'server.port';
export const ATTR_URL_FULL = 'url.full';

/** The client's `x-request-id` (semantic conventions: `http.request.header.<name>`, a list of values). */
export const ATTR_X_REQUEST_ID = 'http.request.header.x-request-id';

/** The AgentRequest's `request_id` (also the coaching request's). */
export const ATTR_REQUEST_ID = 'magma.request_id';
/** Inputs of the batch (server span) or of the sub-request (client span). */
export const ATTR_INPUTS = 'magma.inputs';
/** Candidates asked (server span: the whole batch; client span: this sub-request). */
export const ATTR_CANDIDATES = 'magma.candidates';
/** Candidates answered as error candidates. */
export const ATTR_ERROR_CANDIDATES = 'magma.error_candidates';
/** Distinct error codes among the answered candidates (`gateway_*` and the backends' own), at most MAX_LISTED. */
export const ATTR_ERROR_CODES = 'magma.error_codes';
/** Routes the inputs took, distinct, in first-seen order. */
export const ATTR_ROUTES = 'magma.routes';
/** Backends that were sent sub-requests (server span), or the one this sub-request went to (client span). */
export const ATTR_BACKENDS = 'magma.backends';
export const ATTR_BACKEND = 'magma.backend';
/** The replica's label, `<backend>#<index>` (as in the metrics). */
export const ATTR_REPLICA = 'magma.replica';
/** How a sub-request ended: `ok`, `cancelled` or a `gateway_*` candidate code. */
export const ATTR_OUTCOME = 'magma.outcome';
export const ATTR_ROUTE = 'magma.route';
/** Fallback events: the backend the inputs left and the one they went to. */
export const ATTR_FROM = 'magma.from';
export const ATTR_TO = 'magma.to';
/** `hit` when the batch was answered from a stored response (docs/deployment.md#several-gateway-replicas-redis). */
export const ATTR_REPLAY = 'magma.replay';
/** Inputs of the batch the response cache answered (docs/cache.md). */
export const ATTR_CACHE_HITS = 'magma.cache.hits';
/** The gateway's own time on the batch, milliseconds (x-gateway-overhead-ms). */
export const ATTR_OVERHEAD_MS = 'magma.overhead_ms';
/** A shadow's candidates whose decision agreed / disagreed with the primary's (docs/routing.md#shadow-traffic). */
export const ATTR_AGREED = 'magma.shadow.agreed';
export const ATTR_DISAGREED = 'magma.shadow.disagreed';
/** Coaching: the run, and what chose the backend (`memory tag` or `route <name>`). */
export const ATTR_RUN_ID = 'magma.run_id';
export const ATTR_VIA = 'magma.via';

export const EVENT_FALLBACK = 'fallback';
export const EVENT_REPLICA_RETRY = 'replica_retry';
export const EVENT_BUDGET_EXHAUSTED = 'retry_budget_exhausted';
export const EVENT_REPLAY_HIT = 'replay_hit';
export const EVENT_REPLAY_CONFLICT = 'replay_conflict';
export const EVENT_SHADOW_DROPPED = 'shadow_dropped';
export const EVENT_SHADOW_AGREEMENT = 'shadow_agreement';

/** Lists in attributes (error codes) keep at most this many entries: a batch of 4096 candidates is one span. */
export const MAX_LISTED = 32;
