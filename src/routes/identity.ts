/**
 * GET /health and GET /v1/info, as README "Point BENCH at the gateway" and "Coaching routing" describe them:
 * ready only when every route has a ready, compatible backend (and not while draining for shutdown);
 * capabilities other than inference true only when every backend reachable through routes has them.
 */
import type { FastifyInstance } from 'fastify';
import type { AgentInfo } from '../protocol/types.js';
import type { GatewayRuntime } from '../runtime.js';

export function routesLackingBackend(runtime: GatewayRuntime): string[] {
  return runtime.config.routes
    .filter((r) => !runtime.routeBackends(r.name).some((b) => runtime.upstreams.isReady(b)))
    .map((r) => r.name);
}

export function gatewayInfo(runtime: GatewayRuntime, agentVersion: string): AgentInfo {
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
  const withCoaching = infos.filter(({ info }) => info?.capabilities.coaching === true).map((x) => x.backend);
  const without = infos.filter(({ info }) => info?.capabilities.coaching !== true).map((x) => x.backend);
  const reason =
    !coaching && withCoaching.length > 0
      ? `coaching needs every routed backend to support it; ${without.join(', ')} ${without.length === 1 ? 'does' : 'do'} not`
      : null;
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

export interface IdentityOptions {
  /** True while the gateway drains for shutdown: not ready, so load balancers and BENCH stop sending. */
  draining?: () => boolean;
}

export async function identityRoutes(app: FastifyInstance, opts: IdentityOptions): Promise<void> {
  app.get('/health', async (_req, reply) => {
    if (opts.draining?.() === true) return reply.code(503).send({ detail: 'shutting down: finishing the batches in flight' });
    const lacking = routesLackingBackend(app.gateway.current);
    if (lacking.length > 0) {
      return reply.code(503).send({ detail: `not ready: no ready, compatible backend for route(s) ${lacking.join(', ')}` });
    }
    return { status: 'ready' };
  });

  app.get('/v1/info', async () => gatewayInfo(app.gateway.current, app.gateway.version));
}
