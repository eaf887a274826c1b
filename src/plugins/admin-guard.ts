/**
 * What a browser can make the admin listener do, refused whatever the token (docs/operations.md#admin-security).
 * The rules are read per request: a reload can change them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isLoopback, parseHostPort } from '../config/schema.js';
import { errorBody, type GatewayErrCode } from '../errors.js';

export interface RequestFacts {
  method: string;
  /** Absent on HTTP/1.0, which no browser speaks. */
  host: string | undefined;
  origin: string | undefined;
  fetchSite: string | undefined;
  contentType: string | undefined;
  hasBody: boolean;
  /** A request to the backend passthrough: any method reaches the agent. */
  passthrough: boolean;
}

export interface ServedHosts {
  listenHost: string | undefined;
  /** The listener may be bound to 0.0.0.0. */
  localAddress: string | undefined;
  allowed: readonly string[];
}

interface Refusal {
  status: 403 | 415 | 421;
  code: GatewayErrCode;
  detail: string;
}

const MAX_QUOTED = 128;

const quote = (s: string): string => JSON.stringify(s.length > MAX_QUOTED ? `${s.slice(0, MAX_QUOTED)}...` : s);

/** Lowercased, without its port, brackets or a trailing dot; undefined if malformed. */
export function hostName(host: string): string | undefined {
  const at = parseHostPort(host) ?? (/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/.test(host) ? { host: host.replace(/^\[|\]$/g, '') } : undefined);
  return at?.host.toLowerCase().replace(/\.$/, '');
}

/** `::ffff:127.0.0.1` (an IPv4 connection on a dual-stack socket) as `127.0.0.1`. */
function plainAddress(addr: string): string {
  return addr.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}

/** Never a name a rebinding page can make a browser send. */
function servesHost(name: string, served: ServedHosts): boolean {
  // `*.localhost` resolves to loopback in the browser itself (RFC 6761), never through DNS.
  if (isLoopback(name) || name.endsWith('.localhost')) return true;
  const own = [served.listenHost, served.localAddress].flatMap((a) => (a === undefined ? [] : [plainAddress(a)]));
  if (own.includes(name)) return true;
  return served.allowed.some((h) => h.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '') === name);
}

function sameOrigin(origin: string, host: string): boolean {
  try {
    const o = new URL(origin);
    // URL drops a scheme's default port from `host`; `Host` omits it too. A TLS proxy in front may change the scheme.
    return (o.protocol === 'http:' || o.protocol === 'https:') && o.host === new URL(`${o.protocol}//${host}`).host;
  } catch {
    return false; // `null` (a sandboxed frame, a file), or malformed
  }
}

export function refusal(req: RequestFacts, served: ServedHosts): Refusal | undefined {
  if (req.host !== undefined) {
    const name = hostName(req.host);
    if (name === undefined || !servesHost(name, served)) {
      const detail = `this admin listener does not serve Host ${quote(req.host)}: use its address or a loopback name, or add the name to admin.allowed_hosts`;
      return { status: 421, code: 'GATEWAY_ERR_HOST_NOT_SERVED', detail };
    }
  }
  const changes = req.method !== 'GET' && req.method !== 'HEAD';
  if (!changes && !req.passthrough) return undefined;
  if (req.origin !== undefined && (req.host === undefined || !sameOrigin(req.origin, req.host))) {
    return { status: 403, code: 'GATEWAY_ERR_CROSS_SITE', detail: `refused: Origin ${quote(req.origin)} is not this admin listener's own` };
  }
  if (req.fetchSite === 'cross-site' || req.fetchSite === 'same-site') {
    return { status: 403, code: 'GATEWAY_ERR_CROSS_SITE', detail: `refused: sent from another site (Sec-Fetch-Site: ${req.fetchSite})` };
  }
  if (changes && req.hasBody) {
    const type = (req.contentType ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      const got = req.contentType === undefined ? 'none' : quote(req.contentType);
      return { status: 415, code: 'GATEWAY_ERR_CONTENT_TYPE', detail: `a ${req.method} body to the admin listener must be content-type: application/json (got ${got})` };
    }
  }
  return undefined;
}

function isPassthrough(req: FastifyRequest): boolean {
  const url = req.routeOptions.url ?? '';
  return url === '/gateway/backends/:name' || url.startsWith('/gateway/backends/:name/');
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

function factsOf(req: FastifyRequest): RequestFacts {
  const h = req.headers;
  const length = header(h['content-length']);
  return {
    method: req.method,
    host: header(h.host),
    origin: header(h.origin),
    fetchSite: header(h['sec-fetch-site'])?.toLowerCase(),
    contentType: header(h['content-type']),
    hasBody: h['transfer-encoding'] !== undefined || (length !== undefined && length !== '0'),
    passthrough: isPassthrough(req),
  };
}

/** The console's CSP: never framed (clickjacking); it sets styles through the DOM (allowed), loads nothing from outside. */
const CONSOLE_CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";
/** An agent's page through the passthrough: a unique origin of its own, so it never acts as the console. */
const PASSTHROUGH_CSP = `${CONSOLE_CSP}; sandbox`;

async function adminGuard(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const { admin } = app.gateway.current.config;
    const listenHost = admin.listen === undefined ? undefined : parseHostPort(admin.listen)?.host;
    const refused = refusal(factsOf(req), { listenHost, localAddress: req.socket.localAddress, allowed: admin.allowed_hosts });
    if (refused === undefined) return;
    req.log.warn(
      { method: req.method, path: req.routeOptions.url ?? 'unmatched', host: header(req.headers.host)?.slice(0, MAX_QUOTED), origin: header(req.headers.origin)?.slice(0, MAX_QUOTED) },
      `admin request refused: ${refused.code}`,
    );
    // The body, if any, is not read: the connection ends with the answer.
    return reply.code(refused.status).header('connection', 'close').send(errorBody(refused.code, refused.detail));
  });
  app.addHook('onSend', async (req, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    // Another origin may not embed the answers (a <script> or <img> of a JSON endpoint).
    reply.header('cross-origin-resource-policy', 'same-origin');
    reply.header('content-security-policy', isPassthrough(req) ? PASSTHROUGH_CSP : CONSOLE_CSP);
    return payload;
  });
}

export default fp(adminGuard, { name: 'magma-gateway-admin-guard', fastify: '5.x', decorators: { fastify: ['gateway'] } });
