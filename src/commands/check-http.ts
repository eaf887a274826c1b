/**
 * HTTP for `magma-gateway check`: bodies parsed with the exact codec (big integers and `1.0` survive), undici's
 * `request` because fetch refuses "bad ports" (6000, 10080 ...), one AbortSignal.timeout like BENCH's `requests`.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { JsonSyntaxError, parseExact } from '../protocol/json/exact-json.js';
import { isJsonObject } from '../protocol/schemas.js';
import { GatewayError } from '../errors.js';
import { CHECK_HEADER } from '../experiments/recorder.js';

/** No HTTP answer at all (refused, DNS, reset, timeout): every later check would fail the same way. */
export class TransportError extends GatewayError {
  constructor(message: string, options?: ErrorOptions) {
    super('GATEWAY_ERR_CHECK_TRANSPORT', message, options);
    this.name = 'TransportError';
  }
}

export interface Exchange {
  status: number;
  text: string;
}

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ProbeTarget {
  base: string;
  timeoutMs: number;
  dispatcher: Agent;
}

export function openTarget(base: string, timeoutMs: number): ProbeTarget {
  return { base, timeoutMs, dispatcher: new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } }) };
}

/** Errno of an error or of its causes (undici may nest them); DOMExceptions' numeric codes don't count. */
function errnoOf(err: Error): string | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code: unknown = 'code' in e ? e.code : undefined; // undici errors carry an errno code without declaring it
    // A GatewayError's code names the gateway's own error, not the transport's errno.
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED' && !(e instanceof GatewayError)) return code;
  }
  return undefined;
}

export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (err.name === 'TimeoutError' || (cause instanceof Error && cause.name === 'TimeoutError')) return 'timed out';
  const msg = err.message || err.name;
  const code = errnoOf(err);
  return code !== undefined && !msg.includes(code) ? `${code}: ${msg}` : msg;
}

export async function exchange(t: ProbeTarget, method: 'GET' | 'POST', path: string, body?: string): Promise<Exchange> {
  const signal = AbortSignal.timeout(t.timeoutMs);
  try {
    // Marked so a gateway under check keeps these requests out of its experiments (docs/experiments.md).
    const headers: Record<string, string> = { accept: 'application/json', [CHECK_HEADER]: '1' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await request(`${t.base}${path}`, { method, headers, body, signal, dispatcher: t.dispatcher });
    return { status: res.statusCode, text: await res.body.text() };
  } catch (err) {
    const why = describeError(err);
    throw new TransportError(`${method} ${path}: ${why === 'timed out' ? `no answer within ${t.timeoutMs} ms` : why}`, {
      cause: err,
    });
  }
}

export function excerpt(text: string, max = 160): string {
  const one = text.replace(/\s+/g, ' ').trim();
  if (one.length === 0) return '(empty body)';
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function parseBodyExact(ex: Exchange, what: string): unknown {
  let parsed;
  try {
    parsed = parseExact(ex.text);
  } catch (err) {
    const msg = err instanceof JsonSyntaxError ? err.message : describeError(err);
    throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `${what} is not JSON (${msg}): ${excerpt(ex.text)}`, { cause: err });
  }
  // The contract requires finite numbers: `1e400` parses but is not a valid contract value.
  if (parsed.nonFinite) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `${what} holds a non-finite number (e.g. 1e400)`);
  return parsed.value;
}

/** The reason quotes the body, where FastAPI-style servers explain themselves. */
export function require2xx(ex: Exchange, what: string): void {
  if (ex.status < 200 || ex.status > 299) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `${what}: HTTP ${ex.status}: ${excerpt(ex.text)}`);
}

export function hasDetail(text: string): boolean {
  try {
    const v = parseExact(text).value;
    return isJsonObject(v) && 'detail' in v;
  } catch {
    return false;
  }
}

/** Fresh per request, so a cached or replayed answer shows. */
export function requestId(tag: string): string {
  return `check-${tag}-${randomBytes(8).toString('hex')}`;
}
