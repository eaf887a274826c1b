/**
 * GET /health and GET /v1/info, as README "Point BENCH at the gateway" and "Coaching routing" describe them:
 * ready only when every route has a ready, compatible backend (and not while draining for shutdown);
 * capabilities other than inference true only when every backend reachable through routes has them.
 */
import type { FastifyInstance } from 'fastify';
import type { AgentInfo } from '../protocol/types.js';
import type { GatewayRuntime } from '../runtime.js';
import { errorBody } from '../errors.js';

/** The plural or singular verb for a list of backend names. */
function verb(names: readonly string[], one: string, many: string): string {
  return `${names.join(', ')} ${names.length === 1 ? one : many}`;
}

/**
 * Why coaching is off, naming the backends: a client deciding whether to use coaching (and an operator reading
 * /v1/info) needs to know which backend to fix, and whether it is only not probed yet.
 */
function coachingOffReason(infos: readonly { backend: string; info: AgentInfo | undefined }[]): string {
  const unknown = infos.filter(({ info }) => info === undefined).map((x) => x.backend);
  const lacking = infos.filter(({ info }) => info !== undefined && info.capabilities.coaching !== true).map((x) => x.backend);
  const some = infos.some(({ info }) => info?.capabilities.coaching === true);
  const parts: string[] = [];
  if (lacking.length > 0) parts.push(some ? verb(lacking, 'does not', 'do not') : verb(lacking, 'does not advertise it', 'do not advertise it'));
  if (unknown.length > 0) parts.push(`${verb(unknown, 'has', 'have')} not answered /v1/info yet`);
  if (infos.length === 0) return 'no backend is reachable through the routes';
  return some
    ? `coaching needs every routed backend to support it; ${parts.join('; ')}`
    : `no backend reachable through the routes supports coaching: ${parts.join('; ')}`;
}

function gatewayInfo(runtime: GatewayRuntime, agentVersion: string): AgentInfo {
  const backends = runtime.reachableBackends();
  const infos = backends.map((b) => {
    const replicas = runtime.upstreams.backends.get(b)?.replicas ?? [];
    return { backend: b, info: (replicas.find((r) => r.state === 'ready') ?? replicas.find((r) => r.info))?.info };
  });
  const names = new Set<string>();
  for (const { info } of infos) for (const k of Object.keys(info?.capabilities ?? {})) names.add(k);
  names.delete('inference');
  const capabilities: Record<string, boolean> = { inference: true };
  for (const k of [...names].sort()) capabilities[k] = infos.every(({ info }) => info?.capabilities[k] === true);

  const coaching = capabilities.coaching === true;
  let specialized: string[] = [];
  if (coaching) {
    const lists = infos.map(({ info }) => new Set(info?.specialized_coaching ?? []));
    specialized = [...(lists[0] ?? [])].filter((k) => lists.every((l) => l.has(k)));
  }
  const reason = coaching ? null : coachingOffReason(infos);
  return {
    protocol_version: '2.0',
    agent_id: runtime.config.agent.agent_id,
    agent_version: runtime.config.agent.agent_version ?? agentVersion,
    capabilities,
    specialized_coaching: specialized,
    coaching_resume: coaching && infos.every(({ info }) => info?.coaching_resume === true),
    coaching_unavailable_reason: reason,
  };
}

interface IdentityOptions {
  /** True while the gateway drains for shutdown: not ready, so load balancers and BENCH stop sending. */
  draining?: () => boolean;
}

export async function identityRoutes(app: FastifyInstance, opts: IdentityOptions): Promise<void> {
  app.get('/health', async (_req, reply) => {
    if (opts.draining?.() === true) return reply.code(503).send(errorBody('GATEWAY_ERR_NOT_READY', 'shutting down: finishing the batches in flight'));
    const lacking = app.gateway.current.routesLackingBackend();
    if (lacking.length > 0) {
      return reply
        .code(503)
        .send(errorBody('GATEWAY_ERR_NOT_READY', `not ready: no ready, compatible backend for route(s) ${lacking.join(', ')}`));
    }
    return { status: 'ready' };
  });

  app.get('/v1/info', async () => gatewayInfo(app.gateway.current, app.gateway.version));
}
