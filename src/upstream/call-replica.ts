/** One HTTP call to a backend replica, bounded in time and bytes. Never throws: a failure is a value to route on. */
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import { BackendCall } from './backend-call.js';
import type { CallOptions, CallResult } from './call-types.js';
import type { Replica } from './replica.js';

/**
 * The call a request()'s options stand for, carried on the options themselves. Not a WeakMap from options to call:
 * a long-lived table's young values survive scavenges, and with them the whole batch each call reaches
 * (docs/performance.md#what-the-young-generation-keeps).
 */
const CALL = Symbol('backend call');
type StreamingOptions = Dispatcher.DispatchOptions & { [CALL]?: BackendCall };
const composed = new WeakMap<Dispatcher, Dispatcher>();

/** Composed once, not per call: a composition is a bound dispatch, a wrapper and a Proxy, built for every batch. */
function streamingDispatcher(pool: Dispatcher): Dispatcher {
  let d = composed.get(pool);
  if (d === undefined) {
    d = pool.compose((dispatch) => (o: StreamingOptions, tail) => {
      const call = o[CALL];
      if (call === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'a streaming call without its handler');
      return dispatch(o, call.endingIn(tail));
    });
    composed.set(pool, d);
  }
  return d;
}

/**
 * Any HTTP status is ok:true; only transport failures and the bounds fail. One timer bounds the whole attempt:
 * undici's headers/body timeouts only bound the silence between bytes, which a backend trickling a byte a second
 * never trips. A dispatch handler, not `pool.request()`: that wraps every answer in a Readable; here the answer is
 * collected into bytes. A call that may stream is a request() with the chain composed in front of its handler, which
 * is handed only an answer long enough to stream (its callback never runs for another).
 */
export function callReplica(replica: Replica, opts: CallOptions): Promise<CallResult> {
  const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
  return new Promise<CallResult>((resolve) => {
    const handler = new BackendCall(replica, opts, timeoutMs, resolve);
    if (handler.settled) return;
    const call: Dispatcher.RequestOptions & StreamingOptions = {
      method: opts.method,
      path: replica.path(opts.path),
      headers: opts.headers === undefined ? replica.headers : Object.assign({}, replica.headers, opts.headers),
      body: opts.body,
      // Also undici's idle timeouts: a silent backend is noticed by undici itself too.
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    };
    const tap = opts.stream?.tap;
    if (tap === undefined) replica.pool.dispatch(call, handler);
    else {
      call[CALL] = handler;
      streamingDispatcher(replica.pool).request(call, (err, data) => {
        if (err === null) tap.take(data.body, (failure) => handler.stop(failure));
        else handler.onResponseError(null, err);
      });
    }
  });
}
