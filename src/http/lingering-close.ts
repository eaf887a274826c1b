/**
 * nginx's lingering close (docs/limits-and-edges.md#bodies-over-the-limit): a client that sends its whole body
 * before reading (python's requests) would meet a reset, which can throw away the unread answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mbToBytes, type GatewayConfig } from '../config/schema.js';

export interface LingerBounds {
  maxBytes: number;
  maxMs: number;
}

export function lingerBounds(server: Pick<GatewayConfig['server'], 'body_discard_mb' | 'body_discard_s'>): LingerBounds {
  return { maxBytes: mbToBytes(server.body_discard_mb), maxMs: server.body_discard_s * 1000 };
}

const noop = (): void => undefined;

/** `headers` include the connection's end; the response is destroyed past the bounds or when the client leaves. */
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
  // Ending the response is what closes the connection, so it waits for the body's end.
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
