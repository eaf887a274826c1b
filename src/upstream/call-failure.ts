/** A failed backend call classified into the gateway's error codes (docs/errors.md#candidate-error-codes). */
import { errors } from 'undici';
import type { AttemptFailure } from '../errors.js';
import { safeReason } from '../protocol/describe.js';

const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  // undici errors carry `code` and `cause` without declaring them on every class: read where present.
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const code = 'code' in e ? e.code : undefined;
    if (typeof code === 'string') return code;
    e = 'cause' in e ? e.cause : undefined;
  }
  return undefined;
}

export function timeoutFailure(timeoutMs: number, key: string): AttemptFailure {
  return { code: 'gateway_backend_timeout', message: `no complete answer within ${Math.round(timeoutMs)} ms (${key})` };
}

export function tooLargeFailure(maxBytes: number, key: string): AttemptFailure {
  return { code: 'gateway_backend_invalid_response', message: `the answer is larger than ${maxBytes} bytes (${key})` };
}

/** The backend is not blamed for this failure. */
export function cannotHold(bytes: number, memory: { capacity(): number }): AttemptFailure {
  return { code: 'gateway_memory_budget', message: `the answer (${bytes} bytes and more) cannot be held under server.memory_budget_mb (${memory.capacity()} bytes)` };
}

/** undici's error for an answer that began with an unasked `100 Continue` (docs/limits-and-edges.md#1xx-answers-from-backends). */
export function isUnaskedContinue(err: unknown): boolean {
  return err instanceof errors.SocketError && err.message === 'bad response';
}

export function classifyError(err: unknown, timedOut: boolean, timeoutMs: number, timeoutKey = 'timeout_s'): AttemptFailure {
  if (timedOut) return timeoutFailure(timeoutMs, timeoutKey);
  const code = errorCode(err);
  const msg = err instanceof Error ? err.message : String(err);
  if (code !== undefined && CONNECT_CODES.has(code)) {
    return { code: 'gateway_backend_unreachable', message: `cannot connect: ${code}`, notSent: true };
  }
  if (err instanceof errors.RequestAbortedError) return { code: 'gateway_backend_timeout', message: 'aborted' };
  // undici (client-h1.js) ends the connection so on an unasked `100 Continue` or bytes with no request running:
  // the backend connected and answered, wrongly: an invalid answer, not an unreachable backend.
  if (isUnaskedContinue(err)) {
    return { code: 'gateway_backend_invalid_response', message: 'the answer began with 100 Continue (unasked) or bytes came with no request running' };
  }
  return { code: 'gateway_backend_unreachable', message: safeReason(`connection failed: ${code ?? msg}`) };
}
