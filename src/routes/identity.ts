/** GET /health and GET /v1/info per agent (docs/operations.md#health-and-identity). */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AgentInfo } from '../protocol/types.js';
import type { CompiledAgent } from '../routing/agents.js';
import type { GatewayRuntime } from '../runtime.js';
import { errorBody } from '../errors.js';
import { DEFAULT_AGENT_VERSION } from '../config/schema.js';
import { AGENT_PREFIX_PATTERN, sendUnknownAgent, type AgentParams } from '../http/agent-path.js';

function verb(names: readonly string[], one: string, many: string): string {
  return `${names.join(', ')} ${names.length === 1 ? one : many}`;
}

/** Names the backends: an operator needs to know which to fix, and whether it is only not probed yet. */
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

function gatewayInfo(runtime: GatewayRuntime, agent: CompiledAgent): AgentInfo {
  const infos = agent.reachable.map((b) => {
    const replicas = runtime.upstreams.backends.get(b)?.replicas ?? [];
    return { backend: b, info: (replicas.find((r) => r.state === 'ready') ?? replicas.find((r) => r.info))?.info };
  });
  const names = new Set<string>();
  for (const { info } of infos) for (const k of Object.keys(info?.capabilities ?? {})) names.add(k);
  names.delete('inference');
  const capabilities: Record<string, boolean> = { inference: true };
  for (const k of [...names].sort()) capabilities[k] = infos.every(({ info }) => info?.capabilities[k] === true);

  const coaching = capabilities.coaching === true;
  const lists = infos.map(({ info }) => new Set(info?.specialized_coaching ?? []));
  const specialized = coaching ? [...(lists[0] ?? [])].filter((k) => lists.every((l) => l.has(k))) : [];
  return {
    protocol_version: '2.0',
    agent_id: agent.agentId,
    // Not the package version: a resumed BENCH run needs the same identity after a gateway upgrade.
    agent_version: agent.agentVersion ?? DEFAULT_AGENT_VERSION,
    capabilities,
    specialized_coaching: specialized,
    coaching_resume: coaching && infos.every(({ info }) => info?.coaching_resume === true),
    coaching_unavailable_reason: coaching ? null : coachingOffReason(infos),
  };
}

interface IdentityOptions {
  /** True while the gateway drains for shutdown: not ready, so load balancers and BENCH stop sending. */
  draining?: () => boolean;
}

const SHUTTING_DOWN = 'shutting down: finishing the batches in flight';

export async function identityRoutes(app: FastifyInstance, opts: IdentityOptions): Promise<void> {
  /** The root path is the gateway's own readiness: one agent's backends being down takes no traffic off the others. */
  function health(agent: CompiledAgent | undefined, reply: FastifyReply, root = false): FastifyReply | { status: 'ready' } {
    const notReady = (detail: string): FastifyReply => reply.code(503).send(errorBody('GATEWAY_ERR_NOT_READY', detail));
    if (opts.draining?.() === true) return notReady(SHUTTING_DOWN);
    const runtime = app.gateway.current;
    const lacking = agent === undefined ? [] : runtime.routesLackingBackend(agent);
    if (lacking.length > 0) return notReady(`not ready: no ready, compatible backend for route(s) ${lacking.join(', ')}`);
    const agents = root ? runtime.agents.all : agent === undefined ? [] : [agent];
    const arms = agents.flatMap((a) => runtime.armsLackingReplica(a));
    if (arms.length > 0) return notReady(`not ready: a split with all_arms_ready has an arm with no ready replica (${arms.join(', ')})`);
    return { status: 'ready' };
  }

  app.get('/health', async (_req, reply) => health(app.gateway.current.agents.root, reply, true));

  app.get<{ Params: AgentParams }>(`${AGENT_PREFIX_PATTERN}/health`, async (req, reply) => {
    const agent = app.gateway.current.agents.virtual.get(req.params.agent);
    if (agent === undefined) return sendUnknownAgent(reply, req.params.agent);
    return health(agent, reply);
  });

  for (const prefix of ['', AGENT_PREFIX_PATTERN]) {
    app.get<{ Params: Partial<AgentParams> }>(`${prefix}/v1/info`, async (req, reply) => {
      const runtime = app.gateway.current;
      const name = prefix === '' ? undefined : req.params.agent;
      const agent = runtime.agent(name);
      if (agent === undefined) return sendUnknownAgent(reply, name);
      return gatewayInfo(runtime, agent);
    });
  }
}
