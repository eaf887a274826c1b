/**
 * The registries of error codes: the gateway's own inside error candidates (docs/protocol-fidelity.md#failures),
 * and every other error it raises or answers. Each code is documented in docs/errors.md; a test checks it.
 */
const GATEWAY_ERRORS = {
  gateway_backend_timeout: 'The backend did not answer within its timeout_s (or the batch deadline ran out).',
  gateway_backend_unreachable: 'The gateway could not connect to any replica of the backend, or the connection broke.',
  gateway_backend_not_ready: 'The backend answered HTTP 503 (not ready).',
  gateway_backend_rejected: 'The backend answered an HTTP 4xx (422, 429, ...) to the sub-request.',
  gateway_backend_http_error: 'The backend answered an HTTP 5xx other than 503.',
  gateway_backend_invalid_response:
    'The backend answered 2xx with a body that is not a valid AgentResponse for this candidate (not JSON, missing or malformed candidate, wrong request_id).',
  gateway_no_backend: 'No backend of the route can serve the input (all ejected, incompatible or unknown).',
  gateway_memory_budget:
    'The backend\'s answer could not be held under server.memory_budget_mb (larger than the whole budget, or no room came before the batch deadline); the backend is not blamed.',
  gateway_overloaded:
    'The backend is at max_in_flight and no permit came free in time, the retry budget is spent, or the client stayed over its clients.<name> limits for max_wait_s.',
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

export const GATEWAY_ERROR_CODES = Object.keys(GATEWAY_ERRORS) as GatewayErrorCode[]; // Object.keys types its result string[]

export function isGatewayErrorCode(code: string): code is GatewayErrorCode {
  return Object.hasOwn(GATEWAY_ERRORS, code);
}

/** Where the gateway counts a backend's own code (labels, logs, the report): it is bounded by nothing else. */
export const MAX_CODE_LABEL_CHARS = 64;

export function countedCode(code: string): string {
  return code.length <= MAX_CODE_LABEL_CHARS ? code : `${code.slice(0, MAX_CODE_LABEL_CHARS)}...`;
}

export function codeForStatus(status: number): GatewayErrorCode {
  if (status === 503) return 'gateway_backend_not_ready';
  if (status >= 500) return 'gateway_backend_http_error';
  if (status >= 400) return 'gateway_backend_rejected';
  return 'gateway_backend_invalid_response';
}

export interface AttemptFailure {
  code: GatewayErrorCode;
  message: string;
  /** Nothing reached the backend (connect refused): safe to retry on another replica. */
  notSent?: boolean;
}

/**
 * Thrown errors and the HTTP error answers of every listener (`{"detail": ..., "code": ...}`), named like
 * fastify's FST_ERR_*; a test checks that every `throw` in src uses a code from here.
 */
export const GATEWAY_ERR = {
  GATEWAY_ERR_CONFIG_INVALID: {
    meaning: 'The config file cannot be read, is not YAML, or fails the schema; the message lists every problem with file:line:col.',
  },
  GATEWAY_ERR_ROUTES_INVALID: {
    meaning: 'The routes section is valid YAML but not a valid route table (unknown backend, bad match key, glob or regex, empty split or ensemble).',
  },
  GATEWAY_ERR_RELOAD_REFUSED: {
    meaning: 'A config reload was refused (invalid file, a change that needs a restart, or a reload already running); POST /gateway/reload answers 400, 409 or 503 and the running config keeps serving.',
  },
  GATEWAY_ERR_USAGE: { meaning: 'A mistake in the command line (unknown option, missing value, bad URL or number); exit status 2.' },
  GATEWAY_ERR_CHECK_FAILED: { meaning: '`magma-gateway check`: the agent under test answered, but not as the contract requires.' },
  GATEWAY_ERR_CHECK_TRANSPORT: { meaning: '`magma-gateway check`: the agent under test could not be reached or did not answer in time.' },
  GATEWAY_ERR_STATE_UNAVAILABLE: { meaning: 'Redis is down or not serving; the caller falls back to local state (never seen by a client).' },
  GATEWAY_ERR_JSON_INVALID: {
    meaning: 'A body is not valid JSON or nests deeper than server.max_json_depth; in a request it becomes a 422 detail, from a backend gateway_backend_invalid_response.',
  },
  GATEWAY_ERR_INVALID_REQUEST: {
    meaning: 'The AgentRequest is invalid or over a batch limit. The 422 body keeps FastAPI\'s exact shape `{"detail": [...]}` with no `code` field (BENCH and GEN parse it); the code is in the log line.',
    status: 422,
  },
  GATEWAY_ERR_BAD_REQUEST: {
    meaning: 'A malformed HTTP request (400), or any other 4xx fastify answers before a handler, with its status (e.g. 415 for a Content-Type it does not parse).',
    status: 400,
  },
  GATEWAY_ERR_BODY_ENCODING: {
    meaning: 'A POST /v1/responses or coaching body is not valid UTF-8 (FastAPI answers 400 "There was an error parsing the body"); the detail names the offset of the first invalid byte. Nothing is forwarded.',
    status: 400,
  },
  GATEWAY_ERR_UNAUTHORIZED: {
    meaning: 'The admin listener (or a protected path) was asked without the right bearer token, or an agent endpoint without a valid client key when clients: is configured.',
    status: 401,
  },
  GATEWAY_ERR_AGENT_FORBIDDEN: {
    meaning: 'A valid client key asked for an agent its `clients.<name>.agents` list does not hold; the detail names the client and its agents.',
    status: 403,
  },
  GATEWAY_ERR_CROSS_SITE: {
    meaning: 'The admin listener refused a state-changing request (or a passthrough request) that a browser page on another origin sent: its `Origin` is not the listener\'s own, or `Sec-Fetch-Site` says same-site or cross-site. Whatever the token.',
    status: 403,
  },
  GATEWAY_ERR_CONTENT_TYPE: {
    meaning: 'A state-changing admin request carries a body that is not `content-type: application/json` (a browser sends text/plain and form bodies without asking first).',
    status: 415,
  },
  GATEWAY_ERR_HOST_NOT_SERVED: {
    meaning: 'The admin listener was asked with a `Host` it does not serve (its own address, loopback names, admin.allowed_hosts): how a DNS-rebinding page would reach it. Whatever the token.',
    status: 421,
  },
  GATEWAY_ERR_NOT_FOUND: {
    meaning: 'No route serves this path, an admin path names an unknown backend or replica, or an address carries /k/<key> while no clients: is configured.',
    status: 404,
  },
  GATEWAY_ERR_UNKNOWN_AGENT: {
    meaning: 'The path names a virtual agent the running config does not have (`/agents/<name>/...`), or `/` was asked while the config has no top-level routes (no default agent); the detail names the agent.',
    status: 404,
  },
  GATEWAY_ERR_METHOD_NOT_ALLOWED: { meaning: 'The path exists but not with this method; the `Allow` header lists the methods.', status: 405 },
  GATEWAY_ERR_REQUEST_TIMEOUT: {
    meaning: 'The request headers or body were not received within server.headers_timeout_s / server.body_timeout_s; the connection closes.',
    status: 408,
    message: (part: 'headers' | 'body', seconds: number) => `request ${part} not received within server.${part}_timeout_s (${seconds} s)`,
  },
  GATEWAY_ERR_BODY_TOO_LARGE: {
    meaning: 'The request body exceeds the limit its endpoint has, named with its value (server.body_limit_mb, experiments.outcomes_max_bytes); the connection closes.',
    status: 413,
    message: (limitKey: string, limit: string) => `request body exceeds ${limitKey} (${limit})`,
  },
  GATEWAY_ERR_HEADERS_TOO_LARGE: {
    meaning: 'The request headers exceed node\'s header size limit.',
    status: 431,
    message: () => 'request headers too large',
  },
  GATEWAY_ERR_EXPECTATION_FAILED: {
    meaning: 'The request carries an `Expect` header other than `100-continue` (e.g. `Expect: 200-ok`), which the gateway cannot meet; the connection closes.',
    status: 417,
  },
  GATEWAY_ERR_NOT_READY: {
    meaning: 'GET /health: no ready, compatible backend for some route, or the gateway is shutting down and finishing its batches.',
    status: 503,
  },
  GATEWAY_ERR_MEMORY_BUDGET: {
    meaning: 'A request waited server.admission_timeout_s for room under server.memory_budget_mb (docs/memory-budget.md) and got none; `Retry-After` says when to try again. The only 5xx the gateway answers on purpose to a valid request.',
    status: 503,
  },
  GATEWAY_ERR_COACHING_UNAVAILABLE: {
    meaning: 'No backend offers coaching, or the backend chosen for the session does not or has no ready replica that does.',
    status: 503,
  },
  GATEWAY_ERR_COACHING_BACKEND: {
    meaning: 'A coaching request failed on one or more backends; the status is the backend\'s (or 502), and `backends` names each outcome.',
  },
  GATEWAY_ERR_NO_READY_REPLICA: { meaning: 'Admin passthrough: the backend has no ready replica to ask.', status: 503 },
  GATEWAY_ERR_CACHE_UNAVAILABLE: { meaning: '`DELETE /gateway/cache` could not reach Redis: nothing was emptied; retry once Redis is back.', status: 503 },
  GATEWAY_ERR_BACKEND_UNANSWERED: { meaning: 'Admin passthrough: the replica did not answer (502) or not in time (504).', status: 502 },
  GATEWAY_ERR_RESPONSE_ORDER: {
    meaning: 'Internal invariant: the assembled AgentResponse is not in the contract order (inputs order, then candidate_index); answered 500.',
    status: 500,
  },
  GATEWAY_ERR_INTERNAL: {
    meaning: 'Any other internal invariant broken (a bug): logged with its stack, answered 500 `internal gateway error` without internals.',
    status: 500,
    message: () => 'internal gateway error',
  },
} as const satisfies Record<string, ErrSpec>;

/** Code, status and message template as one value, as fastify's createError keeps them: no message written twice. */
interface ErrSpec {
  meaning: string;
  status?: number;
  message?: (...args: never[]) => string;
}

export type GatewayErrCode = keyof typeof GATEWAY_ERR;

export function statusOf(code: GatewayErrCode): number | undefined {
  const spec: ErrSpec = GATEWAY_ERR[code];
  return spec.status;
}

export class GatewayError extends Error {
  readonly statusCode: number | undefined;

  constructor(
    readonly code: GatewayErrCode,
    message: string,
    options?: ErrorOptions & { statusCode?: number },
  ) {
    super(message, options);
    this.name = 'GatewayError';
    this.statusCode = options?.statusCode ?? statusOf(code);
  }
}

type Registry = typeof GATEWAY_ERR;
type TemplatedCode = { [C in GatewayErrCode]: Registry[C] extends { message: (...args: never[]) => string } ? C : never }[GatewayErrCode];
type TemplateArgs<C extends TemplatedCode> = Registry[C] extends { message: (...args: infer A) => string } ? A : never;

export function messageOf<C extends TemplatedCode>(code: C, ...args: TemplateArgs<C>): string {
  // TypeScript types a generic key's entry as the union of every template, not the one of `code`.
  const template = GATEWAY_ERR[code].message as (...a: TemplateArgs<C>) => string;
  return template(...args);
}

export function registeredBody<C extends TemplatedCode>(code: C, ...args: TemplateArgs<C>): { detail: string; code: C } {
  return { detail: messageOf(code, ...args), code };
}

/** Every HTTP error answer's but the 422 for an invalid AgentRequest. */
export interface ErrorBody {
  detail: string;
  code: GatewayErrCode;
}

export function errorBody(code: GatewayErrCode, detail: string): ErrorBody {
  return { detail, code };
}

export function internalCode(err: unknown): GatewayErrCode {
  return err instanceof GatewayError ? err.code : 'GATEWAY_ERR_INTERNAL';
}
