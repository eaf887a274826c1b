/** The config's routes compiled once for the hot path; immutable and shared by every request. */
import type { GatewayConfig, RouteConfig } from '../config/schema.js';
import type { RoutingInput } from './routing-input.js';
import { compileInputPath, compileMatch, type Headers, type Matcher } from './match.js';
import { formatPath, routeProblems } from '../config/route-problems.js';
import { GatewayError } from '../errors.js';

/** A split arm or an ensemble member: its weight is a split's weight or an ensemble's candidate share. */
export interface Member {
  readonly name: string;
  readonly weight: number;
}

export interface CompiledRoute {
  readonly name: string;
  readonly index: number;
  readonly matches: Matcher;
  readonly sticky: boolean;
  readonly kind: 'backend' | 'split' | 'ensemble';
  /** `backend`: one member of weight 1. In file order. */
  readonly members: readonly Member[];
  readonly backends: ReadonlySet<string>;
  readonly fallback: readonly string[];
  readonly shadow: readonly string[];
  readonly experiment: { readonly name?: string; readonly primary?: 'tool_success' | 'outcome'; readonly control?: string };
  readonly cache: RouteConfig['cache'];
  readonly assignBy?: AssignBy;
  readonly allArmsReady: boolean;
}

interface AssignBy {
  readonly path: string;
  readonly read: (input: RoutingInput) => unknown;
  /** What names the route's experiment, reset aside: a new name, arm or weight draws every key afresh. */
  readonly salt: string;
}

export interface CompiledRoutes {
  readonly agent: string;
  readonly routes: readonly CompiledRoute[];
  readonly memoryKey: string;
  /** Every configured backend, not only this table's. */
  readonly backends: ReadonlySet<string>;
}

function members(route: RouteConfig): Member[] {
  if (route.backend !== undefined) return [{ name: route.backend, weight: 1 }];
  return Object.entries(route.split ?? route.ensemble ?? {}).map(([name, weight]) => ({ name, weight }));
}

/** Members then fallbacks, without duplicates: /health needs one of them ready per route. */
export function routeBackends(route: RouteConfig): string[] {
  return [...new Set([...members(route).map((m) => m.name), ...route.fallback])];
}

/** For a config built in code (loadConfigFile has already reported them with locations). */
export function assertRouteInvariants(config: GatewayConfig): void {
  const problems = routeProblems(config, config.memory_key);
  if (problems.length > 0) {
    const lines = problems.map((p) => `${formatPath(p.path)}: ${p.message}`);
    throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid routes:\n  ${lines.join('\n  ')}`);
  }
}

export function compileRouteTable(
  agent: string,
  table: readonly RouteConfig[],
  memoryKey: string,
  backendNames: readonly string[],
): CompiledRoutes {
  const routes = table.map(
    (route, index): CompiledRoute =>
      Object.freeze({
        ...(route.assign_by === undefined ? {} : { assignBy: assignByOf(agent, route, route.assign_by) }),
        name: route.name,
        index,
        matches: compileMatch(route.match, memoryKey),
        sticky: route.sticky,
        allArmsReady: route.all_arms_ready,
        kind: route.backend !== undefined ? 'backend' : route.split !== undefined ? 'split' : 'ensemble',
        members: Object.freeze(members(route)),
        backends: new Set(routeBackends(route)),
        fallback: Object.freeze([...route.fallback]),
        shadow: Object.freeze([...route.shadow]),
        experiment: Object.freeze({ ...route.experiment }),
        cache: route.cache,
      }),
  );
  return Object.freeze({
    agent,
    routes: Object.freeze(routes),
    memoryKey,
    backends: new Set(backendNames),
  });
}

function assignByOf(agent: string, route: RouteConfig, path: string): AssignBy {
  const salt = JSON.stringify([agent, route.name, members(route).map((m) => [m.name, m.weight]), route.experiment?.name ?? null]);
  return Object.freeze({ path, read: compileInputPath(path), salt });
}

/** The first route whose match holds; the catch-all is last, so there always is one. */
export function selectRoute(compiled: CompiledRoutes, input: RoutingInput, headers: Headers): CompiledRoute {
  const routes = compiled.routes;
  const last = routes.at(-1);
  for (const r of routes) if (r === last || r.matches(input, headers)) return r;
  throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `agent ${compiled.agent} has no route`);
}
