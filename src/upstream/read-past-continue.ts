/**
 * The second transport of a POST /v1/responses whose answer began with an unasked `100 Continue`: undici ends the
 * connection on it before any handler sees it, node:http reads past every 1xx
 * (docs/limits-and-edges.md#1xx-answers-from-backends). Rare by nature: a plain request, no pool.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AbortLike } from '../abort.js';
import type { AttemptFailure } from '../errors.js';
import { safeReason } from '../protocol/describe.js';
import { BodyBytes } from '../protocol/body-bytes.js';
import { cannotHold, timeoutFailure, tooLargeFailure } from './call-failure.js';
import type { AnswerCharge } from './call-types.js';
import type { Replica } from './replica.js';

export type ContinueResult = { ok: true; status: number; bytes: Buffer } | { ok: false; failure: AttemptFailure; status?: number };

export interface ContinueCall {
  body: string | Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  signal?: AbortLike;
  /** A 2xx answer is charged as the first transport charges it (answer-bounds.ts), waiting for room when over. */
  memory?: AnswerCharge;
}

/** POST `c.body` to the replica's /v1/responses under its max_response_mb, reading past any 1xx; never throws. */
export function postReadingPastContinue(replica: Replica, c: ContinueCall): Promise<ContinueResult> {
  return new Promise((resolve) => {
    let done = false;
    let status: number | undefined;
    let charged = 0;
    const finish = (r: ContinueResult): void => {
      if (done) return;
      done = true;
      if (!r.ok && charged > 0) c.memory?.shrink(charged);
      clearTimeout(timer);
      c.signal?.removeEventListener('abort', onAbort);
      resolve(r);
      req.destroy();
    };
    const fail = (failure: AttemptFailure): void => finish(status === undefined ? { ok: false, failure } : { ok: false, failure, status });
    const url = new URL(replica.path('/v1/responses'), replica.origin);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method: 'POST', headers: { ...replica.headers, ...c.headers }, ...replica.tls });
    const timer = setTimeout(() => fail(timeoutFailure(c.timeoutMs, 'timeout_s')), Math.max(1, c.timeoutMs));
    const onAbort = (): void => fail({ code: 'gateway_backend_timeout', message: 'cancelled before the answer was complete' });
    c.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err) => fail({ code: 'gateway_backend_unreachable', message: safeReason(`connection failed: ${'code' in err && typeof err.code === 'string' ? err.code : err.message}`) }));
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      const declared = Number(res.headers['content-length']);
      const max = replica.maxResponseBytes;
      const tooLarge = (): void => fail(tooLargeFailure(max, `backends.${replica.backend}.max_response_mb`));
      if (declared > max) return tooLarge();
      const memory = status < 300 ? c.memory : undefined;
      if (memory !== undefined && declared > memory.capacity()) return fail(cannotHold(declared, memory));
      const body = new BodyBytes({ declared, max, owner: memory });
      res.on('data', (chunk: Buffer) => {
        if (body.size + chunk.length > max) return tooLarge();
        if (memory !== undefined && body.size + chunk.length > memory.capacity()) return fail(cannotHold(body.size + chunk.length, memory));
        body.add(chunk);
        if (memory === undefined) return;
        charged += chunk.length;
        if (!memory.charge(chunk.length) && !done) {
          res.pause();
          memory.whenRoom(() => res.resume());
        }
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
