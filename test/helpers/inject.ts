/**
 * Batches injected into the agent listener's front (http/batch-front.ts) with light-my-request, the library
 * fastify's own `app.inject` uses: `app.inject` reaches fastify's router only, and every `POST /v1/responses`
 * is the front's.
 */
import type { FastifyInstance } from 'fastify';
import inject from 'light-my-request';

export async function injectBatch(app: FastifyInstance, opts: inject.InjectOptions): Promise<inject.Response> {
  await app.ready();
  return inject(app.front.listener, opts);
}
