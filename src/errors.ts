/** The registries of error codes (docs/errors.md; a test checks it). */
export const GATEWAY_ERROR_CODES = [
  'gateway_backend_timeout',
  'gateway_client_closed',
  'gateway_backend_unreachable',
  'gateway_backend_not_ready',
  'gateway_backend_rejected',
  'gateway_backend_http_error',
  'gateway_backend_invalid_response',
  'gateway_no_backend',
  'gateway_memory_budget',
  'gateway_overloaded',
] as const;

export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

const OWN_CODES: ReadonlySet<string> = new Set(GATEWAY_ERROR_CODES);

export function isGatewayErrorCode(code: string): code is GatewayErrorCode {
  return OWN_CODES.has(code);
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

/** Thrown errors and the HTTP error answers of every listener, named like fastify's FST_ERR_*. */
export const GATEWAY_ERR = {
  GATEWAY_ERR_CONFIG_INVALID: {},
  GATEWAY_ERR_ROUTES_INVALID: {},
  GATEWAY_ERR_RELOAD_REFUSED: {},
  GATEWAY_ERR_USAGE: {},
  GATEWAY_ERR_CHECK_FAILED: {},
  GATEWAY_ERR_CHECK_TRANSPORT: {},
  GATEWAY_ERR_STATE_UNAVAILABLE: {},
  GATEWAY_ERR_JSON_INVALID: {},
  GATEWAY_ERR_INVALID_REQUEST: { status: 422 },
  GATEWAY_ERR_BAD_REQUEST: { status: 400 },
  GATEWAY_ERR_BODY_ENCODING: { status: 400 },
  GATEWAY_ERR_UNAUTHORIZED: { status: 401 },
  GATEWAY_ERR_AGENT_FORBIDDEN: { status: 403 },
  GATEWAY_ERR_CROSS_SITE: { status: 403 },
  GATEWAY_ERR_CONTENT_TYPE: { status: 415 },
  GATEWAY_ERR_HOST_NOT_SERVED: { status: 421 },
  GATEWAY_ERR_NOT_FOUND: { status: 404 },
  GATEWAY_ERR_UNKNOWN_AGENT: { status: 404 },
  GATEWAY_ERR_METHOD_NOT_ALLOWED: { status: 405 },
  GATEWAY_ERR_REQUEST_TIMEOUT: {
    status: 408,
    message: (part: 'headers' | 'body', seconds: number) => `request ${part} not received within server.${part}_timeout_s (${seconds} s)`,
  },
  GATEWAY_ERR_BODY_TOO_LARGE: {
    status: 413,
    message: (limitKey: string, limit: string) => `request body exceeds ${limitKey} (${limit})`,
  },
  GATEWAY_ERR_HEADERS_TOO_LARGE: { status: 431, message: () => 'request headers too large' },
  GATEWAY_ERR_EXPECTATION_FAILED: { status: 417 },
  GATEWAY_ERR_NOT_READY: { status: 503 },
  GATEWAY_ERR_MEMORY_BUDGET: { status: 503 },
  GATEWAY_ERR_COACHING_UNAVAILABLE: { status: 503 },
  GATEWAY_ERR_COACHING_BACKEND: {},
  GATEWAY_ERR_NO_READY_REPLICA: { status: 503 },
  GATEWAY_ERR_CACHE_UNAVAILABLE: { status: 503 },
  GATEWAY_ERR_BACKEND_UNANSWERED: { status: 502 },
  GATEWAY_ERR_RESPONSE_ORDER: { status: 500 },
  GATEWAY_ERR_INTERNAL: { status: 500, message: () => 'internal gateway error' },
} as const satisfies Record<string, ErrSpec>;

/** Code, status and message template as one value, as fastify's createError keeps them: no message written twice. */
interface ErrSpec {
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
