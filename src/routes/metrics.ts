/** GET /metrics: Prometheus text format (docs/operations.md#metrics). */
import type { FastifyInstance } from 'fastify';

export async function metricsRoute(app: FastifyInstance): Promise<void> {
  app.get('/metrics', async (_req, reply) => {
    const { registry } = app.gateway.metrics;
    return reply.header('content-type', registry.contentType).send(await registry.metrics());
  });
}
