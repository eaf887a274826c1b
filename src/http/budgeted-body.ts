/** Bodies fastify reads, under the memory budget as the batch front's are (docs/memory-budget.md). */
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';
import type { BudgetHold } from '../memory/budget.js';
import { memoryBudgetDetail } from './front-rules.js';
import { BodyBytes } from '../protocol/body-bytes.js';

const holds = new WeakMap<IncomingMessage, BudgetHold>();

export function holdOf(req: FastifyRequest): BudgetHold | undefined {
  return holds.get(req.raw);
}

function tooLarge(bodyLimit: number): Error {
  return Object.assign(new Error(`request body exceeds ${bodyLimit} bytes`), { statusCode: 413 });
}

/** Without reading it. */
function firstByte(payload: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    if (payload.readableEnded || payload.readableLength > 0) {
      resolve();
      return;
    }
    const go = (): void => {
      payload.off('readable', go);
      payload.off('end', go);
      payload.off('close', go);
      resolve();
    };
    payload.on('readable', go);
    payload.on('end', go);
    payload.on('close', go);
  });
}

async function readBudgeted(app: FastifyInstance, req: FastifyRequest, payload: IncomingMessage, bodyLimit: number): Promise<Buffer> {
  const arrival = performance.now();
  const declared = Number(req.headers['content-length']);
  if (declared > bodyLimit) throw tooLarge(bodyLimit);
  if (declared !== 0) await firstByte(payload);
  const budget = app.gateway.memory;
  const reserved = Number.isFinite(declared) ? declared : Math.min(bodyLimit, budget.limit);
  const hold = await new Promise<BudgetHold | undefined>((resolve) => {
    budget.admit(reserved, resolve, () => resolve(undefined), arrival);
  });
  if (hold === undefined) {
    app.gateway.metrics.admissionTimeouts.inc();
    payload.resume();
    throw new GatewayError('GATEWAY_ERR_MEMORY_BUDGET', memoryBudgetDetail(app.gateway.current.config.server.admission_timeout_s));
  }
  holds.set(req.raw, hold);
  const body = new BodyBytes({ declared, max: bodyLimit, owner: hold });
  try {
    await new Promise<void>((resolve, reject) => {
      payload.on('data', (chunk: Buffer) => {
        if (body.size + chunk.length > bodyLimit) {
          body.drop();
          payload.removeAllListeners('data');
          payload.resume();
          reject(tooLarge(bodyLimit));
          return;
        }
        const over = body.size + chunk.length - Math.max(reserved, body.size);
        if (over > 0) hold.grow(over);
        body.add(chunk);
      });
      payload.once('end', resolve);
      payload.once('error', reject);
      payload.once('close', () => reject(Object.assign(new Error('the client closed the connection'), { statusCode: 400 })));
    });
  } catch (err) {
    hold.release();
    throw err;
  }
  if (body.size < reserved) hold.shrink(reserved - body.size);
  return body.received();
}

/** In `app`'s scope, for every content type: the body as UTF-8 text, or as `as` decodes it (which may throw a 4xx). */
export function budgetedBodies(app: FastifyInstance, bodyLimit: number, as: 'string' | ((bytes: Buffer) => string)): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (req: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, body?: unknown) => void) => {
    readBudgeted(app, req, payload, bodyLimit).then(
      (received) => {
        try {
          done(null, as === 'string' ? received.toString('utf8') : as(received));
        } catch (err) {
          done(err instanceof Error ? err : new Error(String(err)));
        }
      },
      (err: Error) => done(err),
    );
  });
  app.addHook('onRequest', async (req, reply) => {
    reply.raw.once('close', () => holds.get(req.raw)?.release());
  });
}
