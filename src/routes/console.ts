/** The console (docs/console.md): a route per built file and no catch-all, so other paths keep the admin API's 404. */
import type { FastifyInstance } from 'fastify';
import { CONSOLE_ROOT, consoleFiles } from '../admin/console-assets.js';
import { overview, type Overview } from '../admin/overview.js';
import { errorBody } from '../errors.js';

interface ConsoleOptions {
  /** Known only once listening. */
  listeners: () => Overview['listeners'];
  root?: string;
}

export async function consoleRoutes(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  const root = opts.root ?? CONSOLE_ROOT;
  if (consoleFiles(root).length > 0) {
    // Loaded here: only a gateway with an admin listener pays for it (the import measured half a second under load).
    const { default: fastifyStatic } = await import('@fastify/static');
    await app.register(fastifyStatic, {
      root,
      wildcard: false,
      index: 'index.html',
      // The page is small and changes with each build: the browser asks again rather than guess.
      cacheControl: false,
      setHeaders: (res, path) => {
        res.setHeader('cache-control', 'no-cache');
        if (path.endsWith('.md')) res.setHeader('content-type', 'text/plain; charset=utf-8');
      },
    });
  } else {
    app.get('/', async (_req, reply) =>
      reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', 'the console was not built: run `npm run build` (it bundles console/src into dist/console)')),
    );
  }

  app.get('/gateway/overview', async (_req, reply) => reply.header('cache-control', 'no-store').send(await overview(app.gateway, opts.listeners())));

  app.get<{ Querystring: { limit?: string } }>('/gateway/batches', async (req, reply) => {
    const raw = req.query.limit;
    const limit = raw === undefined ? Infinity : Number(raw);
    if (raw !== undefined && (!Number.isInteger(limit) || limit < 1)) {
      return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', `query parameter limit: expected a whole number >= 1, got ${JSON.stringify(raw.slice(0, 32))}`));
    }
    const { recent_batches } = app.gateway.current.config.admin;
    return reply.header('cache-control', 'no-store').send({ capacity: recent_batches, batches: app.gateway.activity.recent(limit) });
  });

  app.get<{ Params: { seq: string } }>('/gateway/batches/:seq', async (req, reply) => {
    const seq = Number(req.params.seq);
    if (!Number.isInteger(seq) || seq < 1) {
      return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', `path parameter seq: expected a whole number >= 1 (a batch's seq), got ${JSON.stringify(req.params.seq.slice(0, 32))}`));
    }
    const batch = app.gateway.activity.batch(seq);
    if (batch === undefined) return reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', `batch ${seq} is not among the last ${app.gateway.current.config.admin.recent_batches} kept (admin.recent_batches)`));
    return reply.header('cache-control', 'no-store').send(batch);
  });

  app.get('/gateway/pulse', async (_req, reply) => reply.header('cache-control', 'no-store').send(await app.gateway.pulse.view()));

  app.get('/gateway/experiments/history', async (_req, reply) => {
    const { snapshot_interval_s, snapshot_points } = app.gateway.current.config.experiments;
    const points = await app.gateway.history.read();
    return reply
      .header('cache-control', 'no-store')
      .send({ interval_s: snapshot_interval_s, capacity: snapshot_points, store_up: app.gateway.store.isUp(), points });
  });
}
