/** The span attribute and event names the gateway writes (docs/operations.md#tracing). */
// Written out rather than imported from @opentelemetry/semantic-conventions: that package costs about 1 MB of heap
// to load, and with tracing off the gateway loads no OpenTelemetry code. A test checks them against it.
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_SERVER_ADDRESS = 'server.address';
export const ATTR_SERVER_PORT = 'server.port';
export const ATTR_URL_FULL = 'url.full';

/** The client's `x-request-id` (semantic conventions: `http.request.header.<name>`, a list of values). */
export const ATTR_X_REQUEST_ID = 'http.request.header.x-request-id';

export const ATTR_REQUEST_ID = 'magma.request_id';
export const ATTR_INPUTS = 'magma.inputs';
export const ATTR_CANDIDATES = 'magma.candidates';
export const ATTR_ERROR_CANDIDATES = 'magma.error_candidates';
export const ATTR_ERROR_CODES = 'magma.error_codes';
export const ATTR_ROUTES = 'magma.routes';
export const ATTR_BACKENDS = 'magma.backends';
export const ATTR_BACKEND = 'magma.backend';
export const ATTR_REPLICA = 'magma.replica';
export const ATTR_OUTCOME = 'magma.outcome';
export const ATTR_ROUTE = 'magma.route';
export const ATTR_FROM = 'magma.from';
export const ATTR_TO = 'magma.to';
export const ATTR_REPLAY = 'magma.replay';
export const ATTR_CACHE_HITS = 'magma.cache.hits';
export const ATTR_OVERHEAD_MS = 'magma.overhead_ms';
export const ATTR_AGREED = 'magma.shadow.agreed';
export const ATTR_DISAGREED = 'magma.shadow.disagreed';
/** Coaching: what chose the backend (`memory tag` or `route <name>`). */
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
