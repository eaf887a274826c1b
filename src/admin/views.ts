/**
 * What `GET /gateway/backends` and `GET /gateway/routes` show: the live view of one runtime (the one current
 * when the request came), built from the upstreams and the prober without changing either. Times are ISO 8601
 * strings, absent values are null (never omitted), so the shape is the same for every replica.
 */
import type { AgentInfo } from '../protocol/types.js';
import type { CompiledAgent } from '../routing/agents.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Replica, ReplicaState } from '../upstream/replica.js';
import { redactUrl } from './redact.js';

interface ReplicaView {
  id: string;
  index: number;
  url: string;
  state: ReplicaState;
  /** Whether the dispatcher would send it inputs now. */
  routable: boolean;
  last_probe: { at: string; ok: boolean; ms: number; error: string | null } | null;
  /** The agent's /v1/info as last read (lenient: extra fields kept), null before a probe got it. */
  info: AgentInfo | null;
  in_flight: { requests: number; inputs: number };
  /** The last failure while the replica is not ready or failing; null once it is ready and has succeeded again. */
  last_error: string | null;
  consecutive_failures: number;
  ejections: number;
  /** When the current ejection's backoff ends (it returns on the first good probe after). */
  ejected_until: string | null;
}

export interface BackendView {
  name: string;
  /** Some replica answered ready and compatible on its last probe. */
  ready: boolean;
  /** The default agent's routes that can send it inputs (members or fallbacks). */
  routes: string[];
  /** The same per virtual agent that has such routes (docs/routing.md#virtual-agents). */
  agents: Record<string, string[]>;
  timeout_s: number;
  max_in_flight: number | null;
  replicas: ReplicaView[];
}

export interface RouteView {
  name: string;
  kind: 'backend' | 'split' | 'ensemble';
  match: Record<string, unknown> | null;
  members: { backend: string; weight: number }[];
  fallback: string[];
  shadow: string[];
  sticky: boolean;
  /**
   * Members then fallbacks, each with whether it is ready: /health needs one per route (docs/operations.md#health-and-identity).
   */
  backends: { name: string; ready: boolean }[];
  ready: boolean;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function replicaView(runtime: GatewayRuntime, r: Replica): ReplicaView {
  const probe = runtime.prober.lastProbe(r);
  const routable = runtime.upstreams.routable(r.backend).includes(r);
  return {
    id: r.id,
    index: r.index,
    url: redactUrl(r.url),
    state: r.state,
    routable,
    last_probe: probe === undefined ? null : { at: iso(probe.at), ok: probe.ok, ms: probe.ms, error: probe.error ?? null },
    info: r.info ?? null,
    in_flight: { requests: r.inFlightRequests, inputs: r.inFlightInputs },
    // The last failure explains a state other than ready, or the failures counted since the last success. Once
    // the replica is ready and has succeeded again, the old error would only mislead (the upstream keeps it).
    last_error: r.state === 'ready' && r.consecutiveFailures === 0 ? null : (r.lastError ?? null),
    consecutive_failures: r.consecutiveFailures,
    ejections: r.ejections,
    ejected_until: r.state === 'ejected' ? iso(r.ejectedUntil) : null,
  };
}

/** The names of `agent`'s routes that can send inputs to `backend`. */
function routesTo(agent: CompiledAgent | undefined, backend: string): string[] {
  return agent === undefined ? [] : agent.routes.routes.filter((r) => r.backends.has(backend)).map((r) => r.name);
}

function agentRoutesTo(agents: readonly CompiledAgent[], backend: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const a of agents) {
    const routes = routesTo(a, backend);
    if (routes.length > 0) out[a.name] = routes;
  }
  return out;
}

export function backendsView(runtime: GatewayRuntime): BackendView[] {
  const { config, upstreams } = runtime;
  const virtual = runtime.agents.all.filter((a) => a.virtual);
  return [...upstreams.backends.values()].map((b) => ({
    name: b.name,
    ready: upstreams.isReady(b.name),
    routes: routesTo(runtime.agents.root, b.name),
    agents: agentRoutesTo(virtual, b.name),
    timeout_s: b.timeoutMs / 1000,
    max_in_flight: config.backends[b.name]?.max_in_flight ?? null,
    replicas: b.replicas.map((r) => replicaView(runtime, r)),
  }));
}

/** A virtual agent as `GET /gateway/routes` lists it, with its own routes. */
interface AgentView {
  name: string;
  /** Where it is served: `/agents/<name>/`. */
  path: string;
  agent_id: string;
  agent_version: string | null;
  memory_key: string;
  /** Every route has a ready backend: its /health answers 200. */
  ready: boolean;
  routes: RouteView[];
}

/** The default agent's routes (empty without top-level routes). */
export function routesView(runtime: GatewayRuntime): RouteView[] {
  return runtime.agents.root === undefined ? [] : agentRoutesView(runtime, runtime.agents.root);
}

/** Each virtual agent, in config order. */
export function agentsView(runtime: GatewayRuntime): AgentView[] {
  return runtime.agents.all
    .filter((a) => a.virtual)
    .map((a) => {
      const routes = agentRoutesView(runtime, a);
      return {
        name: a.name,
        path: `${a.prefix}/`,
        agent_id: a.agentId,
        agent_version: a.agentVersion ?? null,
        memory_key: a.routes.memoryKey,
        ready: routes.every((r) => r.ready),
        routes,
      };
    });
}

function agentRoutesView(runtime: GatewayRuntime, agent: CompiledAgent): RouteView[] {
  const { upstreams } = runtime;
  return agent.routes.routes.map((route) => {
    const source = agent.sources[route.index];
    const backends = [...route.backends].map((name) => ({ name, ready: upstreams.isReady(name) }));
    return {
      name: route.name,
      kind: route.kind,
      match: source?.match ?? null,
      members: route.members.map((m) => ({ backend: m.name, weight: m.weight })),
      fallback: [...route.fallback],
      shadow: [...route.shadow],
      sticky: route.sticky,
      backends,
      ready: backends.some((b) => b.ready),
    };
  });
}
