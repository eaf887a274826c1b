/**
 * The one registry of error codes the gateway itself produces inside error candidates
 * (docs/gateway-behaviour.md "Failures and error codes"; docs/agent-contract.md "Agent and HTTP errors": an
 * AgentError has a nonempty code and message,
 * component names the backend). Every code here is documented in the README; a test checks it.
 */
export const GATEWAY_ERRORS = {
  gateway_backend_timeout: 'The backend did not answer within its timeout_s (or the batch deadline ran out).',
  gateway_backend_unreachable: 'The gateway could not connect to any replica of the backend, or the connection broke.',
  gateway_backend_not_ready: 'The backend answered HTTP 503 (not ready).',
  gateway_backend_rejected: 'The backend answered an HTTP 4xx (422, 429, ...) to the sub-request.',
  gateway_backend_http_error: 'The backend answered an HTTP 5xx other than 503.',
  gateway_backend_invalid_response:
    'The backend answered 2xx with a body that is not a valid AgentResponse for this candidate (not JSON, missing or malformed candidate, wrong request_id).',
  gateway_no_backend: 'No backend of the route can serve the input (all ejected, incompatible or unknown).',
  gateway_overloaded: 'The backend is at max_in_flight and no permit came free in time, or the retry budget is spent.',
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

export const GATEWAY_ERROR_CODES = Object.keys(GATEWAY_ERRORS) as GatewayErrorCode[];

/** An HTTP status answered by a backend, mapped to the candidate error code it becomes. */
export function codeForStatus(status: number): GatewayErrorCode {
  if (status === 503) return 'gateway_backend_not_ready';
  if (status >= 500) return 'gateway_backend_http_error';
  if (status >= 400) return 'gateway_backend_rejected';
  return 'gateway_backend_invalid_response';
}

/** A failure of one sub-request attempt: what happened, said once for every candidate it covers. */
export interface AttemptFailure {
  code: GatewayErrorCode;
  message: string;
  /** True when nothing reached the backend (connect refused): safe to retry on another replica. */
  notSent?: boolean;
}
