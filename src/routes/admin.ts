/** The operator API under /gateway/ on the admin listener (docs/operations.md#admin-api); its token is auth.ts's. */
import type { FastifyInstance } from 'fastify';
import { passthrough } from './admin-passthrough.js';
import { redactConfig } from '../admin/redact.js';
import { agentsView, backendStats, backendsView, routesView } from '../admin/views.js';
import { reloadGateway } from '../reload.js';
import { errorBody } from '../errors.js';
import type { CacheScope } from '../cache/response-cache.js';
import { ROOT_AGENT } from '../config/schema.js';

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

/** A repeated parameter arrives as a list: refused rather than guessed. */
interface CacheQuery {
  agent?: string | string[];
  backend?: string | string[];
}

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

  // docs/cache.md#emptying-the-cache: a new generation of the scope asked, nothing scanned.
  app.delete<{ Querystring: CacheQuery }>('/gateway/cache', async (req, reply) => {
    const cache = app.gateway.cache;
    if (cache === undefined) {
      return reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', 'no response cache: the config has no top-level "cache"'));
    }
    const { agent, backend } = req.query;
    if (Array.isArray(agent) || Array.isArray(backend)) {
      return reply.code(400).send(errorBody('GATEWAY_ERR_BAD_REQUEST', 'give "agent" and "backend" at most once each'));
    }
    const runtime = app.gateway.current;
    if (agent !== undefined && agent !== ROOT_AGENT && !runtime.agents.virtual.has(agent)) {
      return reply.code(404).send(errorBody('GATEWAY_ERR_UNKNOWN_AGENT', `unknown agent ${JSON.stringify(agent.slice(0, 128))}: use "${ROOT_AGENT}" or a name under "agents"`));
    }
    if (backend !== undefined && !Object.hasOwn(runtime.config.backends, backend)) {
      return reply.code(404).send(errorBody('GATEWAY_ERR_NOT_FOUND', `unknown backend ${JSON.stringify(backend.slice(0, 128))}`));
    }
    const scope: CacheScope = {};
    if (agent !== undefined) scope.agent = agent;
    if (backend !== undefined) scope.backend = backend;
    try {
      return { emptied: await cache.clear(scope), store: cache.entries.kind };
    } catch {
      return reply.code(503).send(errorBody('GATEWAY_ERR_CACHE_UNAVAILABLE', 'redis is unavailable: the cache was not emptied; retry once it is back'));
    }
  });

  await app.register(passthrough);
}
