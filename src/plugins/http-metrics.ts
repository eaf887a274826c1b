/** Every answer of a fastify app counted and timed by its URL path pattern (docs/operations.md#metrics). */
import type { FastifyInstance, FastifyRequest } from 'fastify';

export function countAnswers(app: FastifyInstance, clientOf: (req: FastifyRequest) => string): void {
  app.addHook('onResponse', async (req, reply) => {
    app.gateway.metrics.observeHttp(req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000, clientOf(req));
  });
}
