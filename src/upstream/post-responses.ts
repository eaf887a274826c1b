/** The POST /v1/responses call of a sub-request (or a shadow), built on callReplica. */
import type { AbortLike } from '../abort.js';
import { codeForStatus, type AttemptFailure } from '../errors.js';
import { safeReason } from '../protocol/describe.js';
import { callReplica } from './call-replica.js';
import type { AnswerCharge, CallOptions, CallResult } from './call-types.js';
import { postReadingPastContinue, type ContinueResult } from './read-past-continue.js';
import type { Replica } from './replica.js';
import { textOf } from './text-body.js';

/** A 2xx answer of POST /v1/responses as its bytes (empty when `streamed`: they went to the tap), or a failure. */
export type ResponsesResult =
  | { ok: true; status: number; bytes: Buffer; streamed: boolean }
  | { ok: false; failure: AttemptFailure; status?: number; unaskedContinue?: boolean };

export interface ResponsesCall {
  body: string | Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  signal?: AbortLike;
  /** A long 2xx answer is streamed to a tap (CallOptions.stream). */
  stream?: CallOptions['stream'];
  /** Where the answer's bytes are counted (CallOptions.memory). */
  memory?: AnswerCharge;
}

/**
 * A POST /v1/responses call: non-2xx statuses become failures with their codes (decoded for their message); a
 * 2xx answer stays its bytes, which the caller indexes and checks, depth included (protocol/answer/answer-check.ts).
 */
export async function postResponses(replica: Replica, c: ResponsesCall): Promise<ResponsesResult> {
  const { timeoutMs, signal } = c;
  const started = performance.now();
  const call = (ms: number): Promise<CallResult> =>
    callReplica(replica, {
      method: 'POST',
      path: '/v1/responses',
      body: c.body,
      headers: { 'content-type': 'application/json', ...c.headers },
      timeoutMs: ms,
      signal,
      raw: true,
      stream: c.stream,
      memory: c.memory,
    });
  const first = await call(timeoutMs);
  let r: CallResult | ContinueResult = first;
  // An answer that began with an unasked `100 Continue` ended its connection before its body (undici cannot
  // skip it): asked once more through node:http, which reads past it, within what is left of the time
  // (docs/limits-and-edges.md#1xx-answers-from-backends).
  if (!first.ok && first.unaskedContinue === true && signal?.aborted !== true) {
    r = await postReadingPastContinue(replica, {
      path: '/v1/responses',
      body: c.body,
      headers: { 'content-type': 'application/json', ...c.headers },
      timeoutMs: timeoutMs - (performance.now() - started),
      maxBytes: replica.maxResponseBytes,
      maxBytesKey: `backends.${replica.backend}.max_response_mb`,
      timeoutKey: 'timeout_s',
      signal,
    });
  }
  if (!r.ok) return r;
  if (r.status >= 200 && r.status < 300) return { ok: true, status: r.status, bytes: r.bytes ?? Buffer.alloc(0), streamed: 'streamed' in r && r.streamed === true };
  const text = textOf(r.bytes);
  return {
    ok: false,
    status: r.status,
    failure: { code: codeForStatus(r.status), message: safeReason(`HTTP ${r.status}: ${text.slice(0, 200)}`) },
  };
}
