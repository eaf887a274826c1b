/**
 * Every answer of a fastify app (the agent app, the admin app) counted and timed by endpoint, the URL path
 * pattern (docs/operations.md#metrics); the raw batch front (http/batch-front.ts) records its own answers the same way.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** `clientOf` names the request's client label (docs/operations.md#client-keys). */
export function countAnswers(app: FastifyInstance, clientOf: (req: FastifyRequest) => string): void {
  app.addHook('onResponse', async (req, reply) => {
    app.gateway.metrics.observeHttp(req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000, clientOf(req));
  });
}
