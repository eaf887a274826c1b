/**
 * A 413 the client can read (docs/limits-and-edges.md#bodies-over-the-limit). A client that sends its
 * whole body before it reads the answer (python's http.client, requests) never sees a 413 written while it
 * is still sending: the gateway closes the connection after the answer, and the client's next write meets a
 * reset (BrokenPipe), the answer unread. So the rest of the body is read and thrown away, up to
 * `server.body_discard_mb`, and only then is the answer written and the connection closed.
 *
 * Nothing read here is kept; the receive deadline (server.body_timeout_s) still bounds the time.
 */
import type { IncomingMessage } from 'node:http';

/**
 * Read and drop the rest of `req`'s body, then call `then` once: when the body ended (`true`), or when more than
 * `maxBytes` were dropped (`false`: the client is still sending, the answer goes out and the connection
 * closes). A client that leaves calls nothing. `received`: the body bytes already read before this call,
 * to tell at once whether a declared length can be drained at all.
 */
export function discardBody(req: IncomingMessage, maxBytes: number, received: number, then: (ended: boolean) => void): void {
  if (req.complete || req.readableEnded) {
    then(true);
    return;
  }
  const declared = Number(req.headers['content-length']);
  // A declared length past the bound is not drained: the client learns at once instead of after the bound.
  if (Number.isFinite(declared) && declared - received > maxBytes) {
    then(false);
    return;
  }
  let dropped = 0;
  let called = false;
  const finish = (ended: boolean): void => {
    if (called) return;
    called = true;
    req.off('data', onData);
    req.off('end', onEnd);
    then(ended);
  };
  const onData = (chunk: Buffer): void => {
    dropped += chunk.length;
    if (dropped > maxBytes) finish(false);
  };
  const onEnd = (): void => finish(true);
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', () => undefined); // a client that resets: 'close' ends the exchange, nothing to answer
  req.resume();
}
