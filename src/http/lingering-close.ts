/**
 * A refusal a client can read while it is still sending (docs/limits-and-edges.md#bodies-over-the-limit):
 * nginx's lingering close. The answer (a 413, a 408) is written whole at once, with `Connection: close`; then
 * the rest of the body is read and thrown away, for at most `server.body_discard_s` and
 * `server.body_discard_mb`, and only then is the connection closed.
 *
 * Why both halves: a client that stops to read after its headers or part of its body (curl, undici) reads the
 * answer at once. A client that sends its whole body before it reads (python's http.client, requests) would
 * meet a reset if the connection closed while it was sending, and a reset can throw away the answer still
 * unread in its receive buffer; reading what it sends lets it finish writing, then read. The bounds keep a
 * client that never stops from holding the connection: past them it is closed anyway. Nothing read is kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mbToBytes, type GatewayConfig } from '../config/schema.js';

export interface LingerBounds {
  /** Bytes of the rest of the body read and thrown away before the connection is cut. */
  maxBytes: number;
  /** Milliseconds the connection stays open for the rest of the body. */
  maxMs: number;
}

/** The bounds in force: server.body_discard_mb and server.body_discard_s. */
export function lingerBounds(server: Pick<GatewayConfig['server'], 'body_discard_mb' | 'body_discard_s'>): LingerBounds {
  return { maxBytes: mbToBytes(server.body_discard_mb), maxMs: server.body_discard_s * 1000 };
}

const noop = (): void => undefined;

/**
 * Write `status` with `headers` (the connection's end among them) and `body` at once, then linger as above.
 * The response ends when the request's body has ended; it is destroyed past the bounds or when the client
 * leaves.
 */
export function answerAndLinger(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string,
  bounds: LingerBounds,
): void {
  res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  if (req.complete || req.readableEnded || req.destroyed) {
    res.end(body);
    return;
  }
  // The whole answer, by its content-length: the client can read it now. Ending the response is what
  // closes the connection, so it waits for the body's end.
  res.write(body);
  let dropped = 0;
  const stop = (): void => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', ended);
  };
  const cut = (): void => {
    stop();
    res.destroy();
  };
  const ended = (): void => {
    stop();
    res.end();
  };
  const onData = (chunk: Buffer): void => {
    dropped += chunk.length;
    if (dropped > bounds.maxBytes) cut();
  };
  const timer = setTimeout(cut, bounds.maxMs);
  req.on('data', onData);
  req.on('end', ended);
  req.on('error', noop); // a client that resets: 'close' ends the exchange
  res.once('close', stop);
  req.resume();
}
