/**
 * One HTTP call to a backend replica, bounded in time and bytes, its outcome classified into the gateway's error
 * codes (docs/errors.md#candidate-error-codes). Nothing here throws: a failed call is a value the dispatcher can route on.
 */
import { BackendCall } from './backend-call.js';
import type { CallOptions, CallResult } from './call-types.js';
import type { Replica } from './replica.js';

/**
 * Raw call: any HTTP status comes back as ok:true with its text; only transport failures and the bounds are
 * failures. One timer per call bounds the whole attempt (undici's own headers/body timeouts only bound the
 * silence between bytes, so a backend trickling one byte a second would never trip them); the caller's signal
 * (client gone, batch deadline) can end it sooner.
 *
 * Why a dispatch handler and not `pool.request()`: request() wraps every answer in a Readable stream and
 * listens on an AbortSignal; here the answer is collected straight into bytes and a cancel just calls the
 * dispatch controller's abort. Only an answer that proves long enough to stream becomes a Readable
 * (answer-stream.ts), once it has.
 */
export function callReplica(replica: Replica, opts: CallOptions): Promise<CallResult> {
  const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
  return new Promise<CallResult>((resolve) => {
    const handler = new BackendCall(replica, opts, timeoutMs, resolve);
    if (handler.settled) return;
    replica.pool.dispatch(
      {
        method: opts.method,
        path: replica.path(opts.path),
        headers: opts.headers === undefined ? replica.headers : { ...replica.headers, ...opts.headers },
        body: opts.body,
        // Also undici's idle timeouts: a silent backend is noticed by undici itself too.
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      handler,
    );
  });
}
