/** The operator API under /gateway/ on the admin listener (docs/operations.md#admin-api); its token is auth.ts's. */
import type { FastifyInstance } from 'fastify';
import { passthrough } from './admin-passthrough.js';
import { backendStats } from '../admin/backend-stats.js';
import { redactConfig } from '../admin/redact.js';
import { agentsView, backendsView, routesView } from '../admin/views.js';
import { reloadGateway } from '../reload.js';
import { errorBody } from '../errors.js';
import { cacheRoutes } from './admin-cache.js';

const ADMIN_ENDPOINTS = [
  { method: 'GET', path: '/gateway/backends', what: 'every replica: url, state, last probe, info, in flight, last error' },
  { method: 'GET', path: '/gateway/routes', what: 'each route (and each virtual agent\'s), its backends and whether it can serve' },
  { method: 'GET', path: '/gateway/config', what: 'the running config, secrets redacted' },
  { method: 'POST', path: '/gateway/reload', what: 're-read the config file' },
  { method: 'GET', path: '/gateway/experiments', what: 'the A/B and ensemble experiment report' },
  { method: 'GET', path: '/gateway/experiments/history', what: 'experiment report snapshots over time (the console\'s chart)' },
  { method: 'GET', path: '/gateway/overview', what: 'version, uptime, listeners, store, last reload, batch rate, error candidates, overhead' },
  { method: 'GET', path: '/gateway/batches', what: 'the last batches (admin.recent_batches), newest first; ?limit=N' },
  { method: 'POST', path: '/gateway/experiments/outcomes', what: 'episode outcomes, by trajectory id or trace hash' },
  { method: 'POST', path: '/gateway/experiments/reset', what: 'start experiments afresh (body {agent?, route?})' },
  { method: 'GET', path: '/gateway/experiments/trajectories', what: 'one row per trajectory, JSON lines or ?format=csv' },
  { method: 'DELETE', path: '/gateway/cache', what: 'empty the response cache (?agent=<name>, ?backend=<name>: only theirs)' },
  { method: 'ANY', path: '/gateway/backends/{name}/...', what: 'passthrough to a ready replica of that backend' },
] as const;

interface AdminRoutesOptions {
  /** The agent app: a reload swaps its runtime and sets its log level (the admin app logs through a child). */
  main: FastifyInstance;
}

export async function adminRoutes(app: FastifyInstance, opts: AdminRoutesOptions): Promise<void> {
  const index = async (): Promise<{ endpoints: typeof ADMIN_ENDPOINTS }> => ({ endpoints: ADMIN_ENDPOINTS });
  app.get('/gateway', index);
  app.get('/gateway/', index);

  app.get('/gateway/backends', async () => {
    const stats = await backendStats(app.gateway.metrics);
    const none = { latency_ms: { samples: 0, p50: null, p95: null }, outcomes: {} };
    return { backends: backendsView(app.gateway.current).map((b) => ({ ...b, ...(stats.get(b.name) ?? none) })) };
  });

  app.get('/gateway/routes', async () => ({ routes: routesView(app.gateway.current), agents: agentsView(app.gateway.current) }));

  app.get('/gateway/config', async () => ({
    config_path: app.gateway.configPath ?? null,
    config: redactConfig(app.gateway.current.config),
  }));

  app.post('/gateway/reload', async (_req, reply) => {
    const outcome = await reloadGateway(opts.main, 'api');
    if (outcome.ok) return outcome.report;
    return reply.code(outcome.status).send({ reloaded: false, ...errorBody('GATEWAY_ERR_RELOAD_REFUSED', outcome.detail) });
  });

  await app.register(cacheRoutes);

  await app.register(passthrough);
}
