/**
 * GET /gateway/experiments: the A/B and ensemble report (README "Execution feedback and the experiment report") as
 * JSON, for people (through
 * `magma-gateway report`) and for scripts. Counts come from the store, so with Redis every replica answers
 * the same cluster-wide numbers. Protection of /gateway/* (admin.token) is applied by the admin hook, not here.
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
