/** The agents one config makes (docs/routing.md#virtual-agents), walked the same way by every reader. */
import type { PathSegment } from './route-problems.js';
import { ROOT_AGENT, type GatewayConfig, type RouteConfig } from './schema.js';

export interface AgentTable {
  /** ROOT_AGENT or the virtual agent's name: the `agent` label of its metrics. */
  readonly name: string;
  readonly virtual: boolean;
  readonly at: readonly PathSegment[];
  readonly agentId: string;
  /** Undefined: DEFAULT_AGENT_VERSION (config/schema.ts), never the package version. */
  readonly agentVersion: string | undefined;
  readonly memoryKey: string;
  readonly routes: readonly RouteConfig[];
}

/** The default agent first (when it has routes), then the virtual agents in file order. */
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

export function agentPrefix(table: Pick<AgentTable, 'name' | 'virtual'>): string {
  return table.virtual ? `/agents/${table.name}` : '';
}
