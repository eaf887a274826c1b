/** The optional bearer token (`admin.token`, docs/operations.md#admin-api): on the admin listener, every request. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { bearerToken, tokenMatches } from '../clients/key-compare.js';
import { errorBody } from '../errors.js';
import { pathOfUrl } from '../http/agent-path.js';

/** What a client without the right token learns: nothing about why (missing, malformed and wrong look alike). */
const DENIED = errorBody('GATEWAY_ERR_UNAUTHORIZED', 'unauthorized');

/** The matched route pattern is the authority; the raw and decoded paths are checked as well so no spelling slips by. */
export function isMetricsPath(req: FastifyRequest): boolean {
  const rawPath = pathOfUrl(req.url);
  let decoded = rawPath;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    // An undecodable path cannot match a route; the raw form is checked alone.
  }
  return [req.routeOptions.url, rawPath, decoded].some((p) => p?.toLowerCase() === '/metrics');
}

interface AuthOptions {
  /** `admin`: every request needs the token; `agent`: only /metrics, and only with admin.protect_metrics. */
  listener: 'admin' | 'agent';
  /** Admin listener: route paths served to anyone on GET and HEAD (the console's files, which hold no data). */
  open?: ReadonlySet<string>;
}

async function authPlugin(app: FastifyInstance, opts: AuthOptions): Promise<void> {
  let warnedEmpty = false;
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const { admin } = app.gateway.current.config;
    if (opts.listener === 'agent' && !(admin.protect_metrics && isMetricsPath(req))) return;
    if (opts.open !== undefined && (req.method === 'GET' || req.method === 'HEAD') && opts.open.has(req.routeOptions.url ?? '')) return;
    if (admin.token === undefined) return;
    if (admin.token === '') {
      // `${GATEWAY_ADMIN_TOKEN:-}` with the variable empty on a loopback admin listener (config validation
      // refuses it elsewhere): the operator chose no token; say so once.
      if (!warnedEmpty) app.log.warn('admin.token is empty: the admin listener is not protected');
      warnedEmpty = true;
      return;
    }
    const given = bearerToken(req.headers.authorization);
    if (given !== undefined && tokenMatches(given, admin.token)) return;
    req.log.warn({ path: req.routeOptions.url ?? 'unmatched', method: req.method }, 'admin request refused: bad or missing token');
    return reply.code(401).header('www-authenticate', 'Bearer realm="magma-gateway"').send(DENIED);
  });
}

export default fp(authPlugin, { name: 'magma-gateway-auth', fastify: '5.x', decorators: { fastify: ['gateway'] } });
