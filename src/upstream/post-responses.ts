/** The POST /v1/responses call of a sub-request or a shadow. */
import { codeForStatus, type AttemptFailure } from '../errors.js';
import { safeReason } from '../protocol/describe.js';
import { callReplica } from './call-replica.js';
import type { CallOptions, CallResult } from './call-types.js';
import { postReadingPastContinue, type ContinueCall, type ContinueResult } from './read-past-continue.js';
import type { Replica } from './replica.js';
import { textOf } from './text-body.js';

/** A 2xx answer of POST /v1/responses as its bytes (empty when `streamed`: they went to the tap), or a failure. */
type ResponsesResult =
  | { ok: true; status: number; bytes: Buffer; streamed: boolean }
  | { ok: false; failure: AttemptFailure; status?: number; unaskedContinue?: boolean };

interface ResponsesCall extends ContinueCall {
  stream?: CallOptions['stream'];
}

export async function postResponses(replica: Replica, c: ResponsesCall): Promise<ResponsesResult> {
  const { body, timeoutMs, signal, stream, memory } = c;
  const headers = { 'content-type': 'application/json', ...c.headers };
  const started = performance.now();
  const first = await callReplica(replica, {
    method: 'POST', path: '/v1/responses', body, headers, timeoutMs, signal, raw: true, stream, memory,
  });
  let r: CallResult | ContinueResult = first;
  // undici cannot read past an unasked `100 Continue`: asked once more through node:http, in the time left.
  if (!first.ok && first.unaskedContinue === true && signal?.aborted !== true) {
    r = await postReadingPastContinue(replica, { body, headers, timeoutMs: timeoutMs - (performance.now() - started), signal, memory });
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
