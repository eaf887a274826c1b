/**
 * POST /v1/responses as a fastify route (DESIGN.md §2). The listening server answers this path on its raw
 * front (routes/batch-front.ts) without entering fastify; this route serves what reaches fastify anyway:
 * `app.inject()`, and requests the front leaves to fastify (a query string, a gateway that is closing).
 * Both call the same handleBatch.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { stringifyExact } from '../protocol/exact-json.js';
import type { ValidationIssue } from '../protocol/types.js';
import { handleBatch, type BatchAnswer } from './batch-handler.js';

export function send422(reply: FastifyReply, detail: ValidationIssue[]): FastifyReply {
  return reply.code(422).header('content-type', 'application/json').send(stringifyExact({ detail }));
}

/** The answer's headers besides content-type and content-length, the same on both fronts. */
export function answerHeaders(a: BatchAnswer, elapsedMs: number): Record<string, string> {
  const h: Record<string, string> = {
    'x-gateway-overhead-ms': (a.overheadMs ?? elapsedMs).toFixed(2),
  };
  if (a.requestId !== undefined) h['x-request-id'] = a.requestId;
  if (a.replayHit === true) h['x-gateway-replay'] = 'hit';
  return h;
}

export async function responsesRoute(app: FastifyInstance): Promise<void> {
  // In this route's scope the body stays raw bytes: hashed for replay and, when a sub-request is the whole
  // request, forwarded as is, so megabytes are never re-encoded. It is decoded once for parsing.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.post('/v1/responses', async (req, reply) => {
    const a = await handleBatch(app.gateway, {
      body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      headers: req.headers,
      log: req.log,
      onClientGone(fn) {
        // The response stream closing before we wrote it means the client went away. (The request stream's
        // own 'close' fires as soon as its body is read, so it cannot tell us that.)
        const onClose = (): void => {
          if (!reply.raw.writableEnded) fn();
        };
        reply.raw.once('close', onClose);
        return () => reply.raw.off('close', onClose);
      },
    });
    return reply
      .code(a.status)
      .headers(answerHeaders(a, reply.elapsedTime))
      .header('content-type', 'application/json')
      .send(a.body);
  });
}
