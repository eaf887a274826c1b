/**
 * GET /gateway/experiments (admin listener): the A/B and ensemble report as JSON, for people (through
 * `magma-gateway report`) and for scripts. Counts come from the store, so with Redis every replica answers
 * the same cluster-wide numbers. Protection (admin.token) is applied by the auth plugin, not here.
 */
import type { FastifyInstance } from 'fastify';
import { experimentsReport } from '../experiments/report.js';

export async function experimentsRoute(app: FastifyInstance): Promise<void> {
  app.get('/gateway/experiments', async (_req, reply) => {
    const report = await experimentsReport(app.gateway);
    // Fresh numbers on every call: an experiment is watched while it runs.
    return reply.header('cache-control', 'no-store').send(report);
  });
}
