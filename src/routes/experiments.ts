/** The experiment endpoints of the admin listener (docs/experiments.md); admin.token is the auth plugin's. */
import type { FastifyInstance } from 'fastify';
import { experimentsReport } from '../experiments/report/report.js';
import { parseOutcomes, postOutcomes } from '../experiments/outcomes.js';
import { rowsAsCsv, rowsAsJsonLines, trajectoryRows } from '../experiments/report/export.js';
import { errorBody } from '../errors.js';
import { keepFinal, readFinals } from '../experiments/report/finals.js';
import { fieldOf } from '../http/request-fields.js';

/** The admin listener hands bodies over as text (admin-app.ts): the JSON value, empty = `{}`, or the problem. */
function jsonBody(body: unknown): { ok: true; value: unknown } | { ok: false; problem: string } {
  if (body === undefined || body === null || body === '') return { ok: true, value: {} };
  if (typeof body !== 'string') return { ok: true, value: body };
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch (err) {
    return { ok: false, problem: `the body is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

export async function experimentsRoute(app: FastifyInstance): Promise<void> {
  app.get('/gateway/experiments', async (_req, reply) => {
    const report = await experimentsReport(app.gateway);
    // Fresh numbers on every call: an experiment is watched while it runs.
    return reply.header('cache-control', 'no-store').send(report);
  });

  app.get('/gateway/experiments/earlier', async (_req, reply) =>
    reply.header('cache-control', 'no-store').send({ experiments: await readFinals(app.gateway.store) }),
  );

  app.get('/gateway/experiments/trajectories', async (req, reply) => {
    const format = fieldOf(req.query, 'format');
    const rows = await trajectoryRows(app.gateway);
    reply.header('cache-control', 'no-store');
    if (format === 'csv') return reply.type('text/csv; charset=utf-8').send(rowsAsCsv(rows));
    return reply.type('application/x-ndjson; charset=utf-8').send(rowsAsJsonLines(rows));
  });

  app.post(
    '/gateway/experiments/outcomes',
    // Read once at start: a reload does not re-register routes (docs/experiments.md#configuration).
    { bodyLimit: app.gateway.current.config.experiments.outcomes_max_bytes, config: { bodyLimitKey: 'experiments.outcomes_max_bytes' } },
    async (req, reply) => {
      const cfg = app.gateway.current.config.experiments;
      const json = jsonBody(req.body);
      if (!json.ok) return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', json.problem));
      const parsed = parseOutcomes(json.value, cfg.outcomes_max);
      if (!parsed.ok) return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', parsed.problem));
      // This replica's index writes first, so an outcome posted right after its episode's last step is found.
      await app.gateway.experiments.settled();
      return postOutcomes(app.gateway.store, parsed.items, cfg.index_ttl_s * 1000, (r) => app.gateway.metrics.outcomes.inc({ result: r }), parsed.dryRun);
    },
  );

  app.post('/gateway/experiments/reset', async (req, reply) => {
    const json = jsonBody(req.body);
    if (!json.ok) return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', json.problem));
    const body = json.value;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', 'the body must be empty or a JSON object {"agent"?, "route"?}'));
    }
    const agent = fieldOf(body, 'agent');
    const route = fieldOf(body, 'route');
    if ((agent !== undefined && typeof agent !== 'string') || (route !== undefined && typeof route !== 'string')) {
      return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', 'agent and route must be strings'));
    }
    // The experiments about to end keep their report as it is now: the console's earlier experiments.
    const before = await experimentsReport(app.gateway);
    const endedAt = new Date().toISOString();
    for (const e of before.experiments) {
      if ((agent === undefined || e.agent === agent) && (route === undefined || e.route === route)) await keepFinal(app.gateway.store, e, endedAt);
    }
    const reset = await app.gateway.experiments.reset(agent, route);
    if (reset.length === 0) {
      return reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', `no split or ensemble route matches${agent === undefined ? '' : ` agent "${agent}"`}${route === undefined ? '' : ` route "${route}"`}`));
    }
    return { reset };
  });
}
