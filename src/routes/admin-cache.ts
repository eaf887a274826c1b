/** `DELETE /gateway/cache` (docs/cache.md#emptying-the-cache): a new generation of the scope asked, nothing scanned. */
import type { FastifyInstance } from 'fastify';
import { ROOT_AGENT } from '../config/schema.js';
import { errorBody } from '../errors.js';
import type { CacheScope } from '../cache/response-cache.js';

/** A repeated parameter arrives as a list: refused rather than guessed. */
interface CacheQuery {
  agent?: string | string[];
  backend?: string | string[];
}

export async function cacheRoutes(app: FastifyInstance): Promise<void> {
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
      const emptied = await cache.clear(scope);
      return { emptied, store: cache.entries.kind };
    } catch {
      return reply.code(503).send(errorBody('GATEWAY_ERR_CACHE_UNAVAILABLE', 'redis is unavailable: the cache was not emptied; retry once it is back'));
    }
  });
}
