/**
 * The second transport of a POST /v1/responses whose answer began with an unasked `100 Continue`
 * (docs/limits-and-edges.md#1xx-answers-from-backends). undici ends the connection on such an answer before any
 * handler sees it, and no option changes that; node:http reads past every 1xx (its 'information' event) to the
 * answer that follows. So the call is asked once more through node:http, within what is left of its time, bounded
 * by the same byte cap, and the candidate completes. Rare by nature (a misbehaving backend or proxy): a plain
 * request per call, no pool, the answer collected whole.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AbortLike } from '../abort.js';
import type { AttemptFailure } from '../errors.js';
import { safeReason } from '../protocol/describe.js';
import { BodyBytes } from '../protocol/body-bytes.js';
import type { Replica } from './replica.js';

export type ContinueResult = { ok: true; status: number; bytes: Buffer } | { ok: false; failure: AttemptFailure; status?: number };

export interface ContinueCall {
  path: string;
  body: string | Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  maxBytes: number;
  maxBytesKey: string;
  timeoutKey: string;
  signal?: AbortLike;
}

/** POST `c.body` to `replica` through node:http, reading past any 1xx; never throws. */
export function postReadingPastContinue(replica: Replica, c: ContinueCall): Promise<ContinueResult> {
  return new Promise((resolve) => {
    let done = false;
    let status: number | undefined;
    const finish = (r: ContinueResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      c.signal?.removeEventListener('abort', onAbort);
      resolve(r);
      req.destroy();
    };
    const fail = (failure: AttemptFailure): void => finish(status === undefined ? { ok: false, failure } : { ok: false, failure, status });
    const url = new URL(replica.path(c.path), replica.origin);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method: 'POST', headers: { ...replica.headers, ...c.headers }, ...replica.tls });
    const timer = setTimeout(() => fail({ code: 'gateway_backend_timeout', message: `no complete answer within ${Math.round(c.timeoutMs)} ms (${c.timeoutKey})` }), Math.max(1, c.timeoutMs));
    const onAbort = (): void => fail({ code: 'gateway_backend_timeout', message: 'cancelled before the answer was complete' });
    c.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err) => fail({ code: 'gateway_backend_unreachable', message: safeReason(`connection failed: ${'code' in err && typeof err.code === 'string' ? err.code : err.message}`) }));
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      const declared = Number(res.headers['content-length']);
      const tooLarge = (): void => fail({ code: 'gateway_backend_invalid_response', message: `the answer is larger than ${c.maxBytes} bytes (${c.maxBytesKey})` });
      if (declared > c.maxBytes) return tooLarge();
      const body = new BodyBytes({ declared, max: c.maxBytes });
      res.on('data', (chunk: Buffer) => {
        if (body.size + chunk.length > c.maxBytes) tooLarge();
        else body.add(chunk);
      });
      res.on('end', () => finish({ ok: true, status: status ?? 0, bytes: body.received() }));
      // Cut before its end: the backend broke off, as undici would report it.
      res.on('close', () => {
        if (!res.complete) fail({ code: 'gateway_backend_unreachable', message: 'connection failed: the answer broke off' });
      });
    });
    if (c.signal?.aborted === true) onAbort();
    else req.end(c.body);
  });
}
