/** Every agent of a config compiled for the hot path (docs/routing.md#virtual-agents), immutable. */
import { agentPrefix, agentTables, type AgentTable } from '../config/agents.js';
import type { GatewayConfig, RouteConfig } from '../config/schema.js';
import { assertRouteInvariants, compileRouteTable, routeBackends, type CompiledRoutes } from './routes.js';

export interface CompiledAgent extends Pick<AgentTable, 'name' | 'virtual' | 'agentId' | 'agentVersion'> {
  /** Empty for the default agent, `/agents/<name>` otherwise. */
  readonly prefix: string;
  readonly routes: CompiledRoutes;
  readonly sources: readonly RouteConfig[];
  /** Members and fallbacks (shadows only observe), in first-use order. */
  readonly reachable: readonly string[];
}

export interface CompiledAgents {
  readonly root: CompiledAgent | undefined;
  /** A Map: names come from URLs, and must never reach an object's prototype. */
  readonly virtual: ReadonlyMap<string, CompiledAgent>;
  readonly all: readonly CompiledAgent[];
}

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

export function findAgent(agents: CompiledAgents, name: string | undefined): CompiledAgent | undefined {
  return name === undefined ? agents.root : agents.virtual.get(name);
}

/** Routes of `agent` none of whose backends can serve now: its /health is not ready while there is one. */
export function routesLacking(agent: CompiledAgent, isReady: (backend: string) => boolean): string[] {
  return agent.routes.routes.filter((r) => ![...r.backends].some(isReady)).map((r) => r.name);
}

/** The arms of `all_arms_ready` splits with no ready replica (docs/routing.md#a-split-that-needs-every-arm). */
export function armsLacking(agent: CompiledAgent, isReady: (backend: string) => boolean): string[] {
  const where = agent.virtual ? `${agent.name}/` : '';
  return agent.routes.routes
    .filter((r) => r.kind === 'split' && r.allArmsReady)
    .flatMap((r) => r.members.filter((m) => !isReady(m.name)).map((m) => `${where}${r.name}: ${m.name}`));
}
