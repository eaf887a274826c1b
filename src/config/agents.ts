/**
 * The agents one config makes (docs/routing.md#virtual-agents): the default agent of the top-level `routes`, served at
 * `/`, and each `agents.<name>`, served at `/agents/<name>/`. Each has its own identity, route table and memory
 * key; everything else in the config is shared. Read by routing (one compiled table per agent), metrics (series
 * per agent), warnings and the summaries, so every one of them walks the agents the same way.
 */
import type { PathSegment } from './route-problems.js';
import { ROOT_AGENT, type GatewayConfig, type RouteConfig } from './schema.js';

interface AgentTable {
  /** ROOT_AGENT for the top-level routes, else the key under `agents`: the `agent` label of its metrics. */
  readonly name: string;
  readonly virtual: boolean;
  /** Where its routes are in the file: `routes`, or `agents.<name>.routes`. */
  readonly at: readonly PathSegment[];
  readonly agentId: string;
  /** Undefined: DEFAULT_AGENT_VERSION (config/schema.ts), never the package version. */
  readonly agentVersion: string | undefined;
  readonly memoryKey: string;
  readonly routes: readonly RouteConfig[];
}

/** The default agent first (when the top-level routes are not empty), then the virtual agents in file order. */
export function agentTables(config: GatewayConfig): AgentTable[] {
  const out: AgentTable[] = [];
  if (config.routes.length > 0) {
    out.push({
      name: ROOT_AGENT,
      virtual: false,
      at: ['routes'],
      agentId: config.agent.agent_id,
      agentVersion: config.agent.agent_version,
      memoryKey: config.memory_key,
      routes: config.routes,
    });
  }
  for (const [name, a] of Object.entries(config.agents)) {
    out.push({
      name,
      virtual: true,
      at: ['agents', name, 'routes'],
      agentId: a.agent.agent_id,
      agentVersion: a.agent.agent_version,
      memoryKey: a.memory_key ?? config.memory_key,
      routes: a.routes,
    });
  }
  return out;
}

/** The URL path prefix an agent is served under: empty for the default agent, `/agents/<name>` otherwise. */
export function agentPrefix(table: Pick<AgentTable, 'name' | 'virtual'>): string {
  return table.virtual ? `/agents/${table.name}` : '';
}
