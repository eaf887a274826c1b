/**
 * Optional bearer token for the operator surface (README "Admin API"): every `/gateway/*` path, whoever registers it
 * (admin, experiments, the passthrough), and `/metrics` when `admin.protect_metrics` is set. The contract's own
 * endpoints (/health, /v1/info, /v1/responses) are never protected: BENCH and GEN do not send a token.
 *
 * One root onRequest hook (fastify-plugin, so it is not encapsulated) rather than a hook per admin plugin: a
 * route added later under /gateway/ by another plugin is covered without knowing about this file. The token is
 * read from the runtime current at each request, so a reload can set, change or remove it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** What a client without the right token learns: nothing about why (missing, malformed and wrong look alike). */
const DENIED = { detail: 'unauthorized' };

/**
 * Constant-time comparison. Hashing first gives both sides the same length (timingSafeEqual needs it), so
 * neither the token's length nor the position of the first differing byte shows in the timing.
 */
export function tokenMatches(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The token from `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750), else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m?.[1];
}

function underGateway(path: string): boolean {
  return path === '/gateway' || path.startsWith('/gateway/');
}

/**
 * Whether a request needs the token. The matched route pattern is the authority (the router has already
 * decoded `%67ateway` and friends into it); the raw path is checked as well so an unmatched /gateway/ URL gets
 * the same 401 as a matched one and does not reveal which admin paths exist.
 */
export function isProtected(req: FastifyRequest, protectMetrics: boolean): boolean {
  const pattern = req.routeOptions.url;
  const rawPath = req.url.split('?', 1)[0]!;
  let decoded = rawPath;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    // An undecodable path cannot match a route; the raw form is checked alone.
  }
  const paths = [pattern, rawPath, decoded].filter((p): p is string => p !== undefined).map((p) => p.toLowerCase());
  if (paths.some(underGateway)) return true;
  return protectMetrics && paths.includes('/metrics');
}

async function authPlugin(app: FastifyInstance): Promise<void> {
  let warnedEmpty = false;
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const { admin } = app.gateway.current.config;
    if (admin.token === undefined) return;
    if (admin.token === '') {
      // `${GATEWAY_ADMIN_TOKEN:-}` with the variable empty: the operator chose no token; say so once.
      if (!warnedEmpty) app.log.warn('admin.token is empty: /gateway/* is not protected');
      warnedEmpty = true;
      return;
    }
    if (!isProtected(req, admin.protect_metrics)) return;
    const given = bearerToken(req.headers.authorization);
    if (given !== undefined && tokenMatches(given, admin.token)) return;
    req.log.warn({ path: req.routeOptions.url ?? 'unmatched', method: req.method }, 'admin request refused: bad or missing token');
    return reply.code(401).header('www-authenticate', 'Bearer realm="magma-gateway"').send(DENIED);
  });
}

export default fp(authPlugin, { name: 'magma-gateway-auth', fastify: '5.x', dependencies: ['magma-gateway'] });
