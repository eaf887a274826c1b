/**
 * A POST of raw bytes on a fresh connection (no keep-alive), sent as a client streams a large body: in 1 MiB
 * writes, with a Content-Length or chunked. For the tests that need the bytes on the wire exactly so (fetch would
 * buffer or re-frame them).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';

/** POST `body` (bytes, sent as they are) on a fresh connection; chunked when `chunked`. */
export function post(url: string, body: Buffer, opts: { path?: string; chunked?: boolean } = {}): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path: opts.path ?? '/v1/responses',
        method: 'POST',
        agent: false,
        headers: opts.chunked === true ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    // In pieces, as a client streams a large body: the test process never copies it whole.
    for (let at = 0; at < body.length; at += 1 << 20) req.write(body.subarray(at, at + (1 << 20)));
    req.end();
  });
}

