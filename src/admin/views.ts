/** What `GET /gateway/backends` and `/gateway/routes` show; absent values are null, so every replica has one shape. */
import type { AgentInfo } from '../protocol/types.js';
import type { CompiledAgent } from '../routing/agents.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Replica, ReplicaState } from '../upstream/replica.js';
import { redactUrl } from './redact.js';
import { histogramByLabel, type GatewayMetrics } from '../metrics.js';
import { quantileMs } from '../stats/histogram-quantile.js';

interface ReplicaView {
  id: string;
  index: number;
  url: string;
  state: ReplicaState;
  routable: boolean;
  last_probe: { at: string; ok: boolean; ms: number; error: string | null } | null;
  info: AgentInfo | null;
  in_flight: { requests: number; inputs: number };
  last_error: string | null;
  consecutive_failures: number;
  ejections: number;
  ejected_until: string | null;
}

export interface BackendView {
  name: string;
  ready: boolean;
  /** The default agent's routes that can send it inputs (members or fallbacks). */
  routes: string[];
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
  /** Members then fallbacks: /health needs one ready per route. */
  backends: { name: string; ready: boolean }[];
  ready: boolean;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function replicaView(runtime: GatewayRuntime, r: Replica): ReplicaView {
  const probe = runtime.prober.lastProbe(r);
  return {
    id: r.id,
    index: r.index,
    url: redactUrl(r.url),
    state: r.state,
    routable: runtime.upstreams.routable(r.backend).includes(r),
    last_probe: probe === undefined ? null : { at: iso(probe.at), ok: probe.ok, ms: probe.ms, error: probe.error ?? null },
    info: r.info ?? null,
    in_flight: { requests: r.inFlightRequests, inputs: r.inFlightInputs },
    // Once the replica is ready and has succeeded again, the old error would only mislead (the upstream keeps it).
    last_error: r.state === 'ready' && r.consecutiveFailures === 0 ? null : (r.lastError ?? null),
    consecutive_failures: r.consecutiveFailures,
    ejections: r.ejections,
    ejected_until: r.state === 'ejected' ? iso(r.ejectedUntil) : null,
  };
}

function routesTo(agent: CompiledAgent | undefined, backend: string): string[] {
  return agent === undefined ? [] : agent.routes.routes.filter((r) => r.backends.has(backend)).map((r) => r.name);
}

export function backendsView(runtime: GatewayRuntime): BackendView[] {
  const { config, upstreams } = runtime;
  const virtual = runtime.agents.all.filter((a) => a.virtual);
  return [...upstreams.backends.values()].map((b) => ({
    name: b.name,
    ready: upstreams.isReady(b.name),
    routes: routesTo(runtime.agents.root, b.name),
    agents: Object.fromEntries(virtual.map((a) => [a.name, routesTo(a, b.name)] as const).filter(([, routes]) => routes.length > 0)),
    timeout_s: b.timeoutMs / 1000,
    max_in_flight: config.backends[b.name]?.max_in_flight ?? null,
    replicas: b.replicas.map((r) => replicaView(runtime, r)),
  }));
}

interface AgentView {
  name: string;
  path: string;
  agent_id: string;
  agent_version: string | null;
  memory_key: string;
  ready: boolean;
  routes: RouteView[];
}

export function routesView(runtime: GatewayRuntime): RouteView[] {
  return runtime.agents.root === undefined ? [] : agentRoutesView(runtime, runtime.agents.root);
}

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

interface BackendStats {
  latency_ms: { samples: number; p50: number | null; p95: number | null };
  outcomes: Record<string, number>;
}

/** Per-backend latency quantiles and outcomes `GET /gateway/backends` adds for the console (docs/console.md#backends). */
export async function backendStats(metrics: GatewayMetrics): Promise<Map<string, BackendStats>> {
  const out = new Map<string, BackendStats>();
  const of = (name: string): BackendStats => {
    let s = out.get(name);
    if (s === undefined) out.set(name, (s = { latency_ms: { samples: 0, p50: null, p95: null }, outcomes: {} }));
    return s;
  };
  for (const [backend, { buckets, count }] of await histogramByLabel(metrics.backendDuration, 'backend')) {
    of(backend).latency_ms = { samples: count, p50: quantileMs(buckets, 0.5), p95: quantileMs(buckets, 0.95) };
  }
  for (const v of (await metrics.backendRequests.get()).values) {
    if (v.value > 0) of(String(v.labels.backend ?? '')).outcomes[String(v.labels.outcome ?? 'unknown')] = v.value;
  }
  return out;
}
