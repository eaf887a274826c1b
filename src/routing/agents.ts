/**
 * Every agent of a config compiled for the hot path (docs/routing.md#virtual-agents): the default agent of the
 * top-level routes at `/`, and each `agents.<name>` at `/agents/<name>/`. Each has its own identity, compiled
 * route table and memory key; a batch plans with the table of the agent it was sent to. Pure and immutable,
 * like the route tables themselves.
 */
import { agentPrefix, agentTables } from '../config/agents.js';
import type { GatewayConfig, RouteConfig } from '../config/schema.js';
import { assertRouteInvariants, compileRouteTable, routeBackends, type CompiledRoutes } from './routes.js';

export interface CompiledAgent {
  /** ROOT_AGENT or the virtual agent's name: the `agent` label of its metrics. */
  readonly name: string;
  readonly virtual: boolean;
  /** The URL path prefix it is served under: empty for the default agent, `/agents/<name>` otherwise. */
  readonly prefix: string;
  readonly agentId: string;
  /** Undefined: DEFAULT_AGENT_VERSION (config/schema.ts), never the package version. */
  readonly agentVersion: string | undefined;
  readonly routes: CompiledRoutes;
  /** The routes as configured, in table order (CompiledRoute.index points here). */
  readonly sources: readonly RouteConfig[];
  /** Backends reachable through its routes (members and fallbacks; shadows only observe), in first-use order. */
  readonly reachable: readonly string[];
}

export interface CompiledAgents {
  /** The default agent at `/`; undefined when the config has no top-level routes. */
  readonly root: CompiledAgent | undefined;
  /** The virtual agents by name (a Map: names come from URLs, and must never reach an object's prototype). */
  readonly virtual: ReadonlyMap<string, CompiledAgent>;
  /** The default agent (when there is one), then the virtual agents in file order. */
  readonly all: readonly CompiledAgent[];
}

/** Compile every agent of a validated config; throws GATEWAY_ERR_ROUTES_INVALID for a config built in code that breaks the route invariants. */
export function compileAgents(config: GatewayConfig): CompiledAgents {
  assertRouteInvariants(config);
  const backends = Object.keys(config.backends);
  const all = agentTables(config).map(
    (t): CompiledAgent =>
      Object.freeze({
        name: t.name,
        virtual: t.virtual,
        prefix: agentPrefix(t),
        agentId: t.agentId,
        agentVersion: t.agentVersion,
        routes: compileRouteTable(t.name, t.routes, t.memoryKey, backends),
        sources: t.routes,
        reachable: Object.freeze([...new Set(t.routes.flatMap(routeBackends))]),
      }),
  );
  return Object.freeze({
    root: all.find((a) => !a.virtual),
    virtual: new Map(all.filter((a) => a.virtual).map((a) => [a.name, a])),
    all: Object.freeze(all),
  });
}

/** The agent a request is for: `undefined` names the default agent. Undefined when there is no such agent. */
export function findAgent(agents: CompiledAgents, name: string | undefined): CompiledAgent | undefined {
  return name === undefined ? agents.root : agents.virtual.get(name);
}

/** Routes of `agent` none of whose backends can serve now: its /health is not ready while there is one. */
export function routesLacking(agent: CompiledAgent, isReady: (backend: string) => boolean): string[] {
  return agent.routes.routes.filter((r) => ![...r.backends].some(isReady)).map((r) => r.name);
}

/**
 * The arms of `agent`'s `all_arms_ready` splits that have no ready replica, as `<route>: <arm>` (a virtual agent's
 * prefixed `<agent>/`): its /health, and the gateway root's, are not ready while there is one, so that a run never
 * starts one-armed (docs/routing.md#a-split-that-needs-every-arm).
 */
export function armsLacking(agent: CompiledAgent, isReady: (backend: string) => boolean): string[] {
  const where = agent.virtual ? `${agent.name}/` : '';
  return agent.routes.routes
    .filter((r) => r.kind === 'split' && r.allArmsReady)
    .flatMap((r) => r.members.filter((m) => !isReady(m.name)).map((m) => `${where}${r.name}: ${m.name}`));
}
