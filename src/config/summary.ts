/** A config at a glance, for the start-up log and `validate`; secrets never appear. */
import { agentPrefix, agentTables } from './agents.js';
import type { GatewayConfig, RouteConfig } from './schema.js';

function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === '' && u.password === '') return url;
    u.username = '***';
    u.password = '';
    const out = u.toString();
    return out.endsWith('/') && !url.endsWith('/') ? out.slice(0, -1) : out;
  } catch {
    return '(unparsable URL)';
  }
}

function members(m: Record<string, number>): string {
  return Object.entries(m)
    .map(([b, w]) => `${b} ${w}`)
    .join(', ');
}

/** `default -> qwen (fallback gpt; shadow gpt-next)`, `ab -> split qwen 90, gpt 10`. */
function describeRoute(r: RouteConfig): string {
  const target =
    r.backend !== undefined ? r.backend : r.split !== undefined ? `split ${members(r.split)}` : `ensemble ${members(r.ensemble ?? {})}`;
  const extras: string[] = [];
  if (r.fallback.length > 0) extras.push(`fallback ${r.fallback.join(', ')}`);
  if (r.shadow.length > 0) extras.push(`shadow ${r.shadow.join(', ')}`);
  if (!r.sticky) extras.push('not sticky');
  if (r.match === undefined) extras.push('catch-all');
  return `${r.name} -> ${target}${extras.length > 0 ? ` (${extras.join('; ')})` : ''}`;
}

/** `team-a (max 4 batches in flight, 20000 candidates/min, waits up to 30 s)` */
function describeClient(name: string, c: NonNullable<GatewayConfig['clients']>[string]): string {
  const limits: string[] = [];
  if (c.max_batches_in_flight !== undefined) limits.push(`max ${c.max_batches_in_flight} batches in flight`);
  if (c.max_candidates_per_minute !== undefined) limits.push(`${c.max_candidates_per_minute} candidates/min`);
  if (limits.length > 0) limits.push(`waits up to ${c.max_wait_s} s`);
  return limits.length === 0 ? `${name} (no limits)` : `${name} (${limits.join(', ')})`;
}

interface ConfigSummary {
  routes: string[];
  agents: Record<string, { path: string; agent_id: string; routes: string[] }>;
  clients: string[];
  backends: Record<string, string[]>;
  replicas: number;
  store: string;
}

export function summarizeConfig(config: GatewayConfig): ConfigSummary {
  const backends: Record<string, string[]> = {};
  let replicas = 0;
  for (const [name, b] of Object.entries(config.backends)) {
    backends[name] = b.urls.map(safeUrl);
    replicas += b.urls.length;
  }
  const redis = config.state.redis;
  const store = redis === undefined ? 'memory' : `redis ${safeUrl(redis.url)} (key prefix "${redis.key_prefix}")`;
  const clients = Object.entries(config.clients ?? {}).map(([name, c]) => describeClient(name, c));
  const agents: ConfigSummary['agents'] = {};
  for (const t of agentTables(config)) {
    if (t.virtual) agents[t.name] = { path: `${agentPrefix(t)}/`, agent_id: t.agentId, routes: t.routes.map(describeRoute) };
  }
  return { routes: config.routes.map(describeRoute), agents, clients, backends, replicas, store };
}

export function formatSummary(config: GatewayConfig): string {
  const s = summarizeConfig(config);
  const lines = [
    `  listen   ${config.server.host}:${config.server.port}`,
    `  store    ${s.store}`,
    `  backends ${Object.keys(s.backends).length} (${s.replicas} replica${s.replicas === 1 ? '' : 's'})`,
    ...Object.entries(s.backends).map(([n, urls]) => `    ${n}: ${urls.join(', ')}`),
    `  routes   ${s.routes.length} (first match wins)${s.routes.length === 0 ? ': no default agent at /' : ''}`,
    ...s.routes.map((r) => `    ${r}`),
    ...Object.entries(s.agents).flatMap(([name, a]) => [
      `  agent    ${name} at ${a.path} (agent_id ${a.agent_id}): ${a.routes.length} route${a.routes.length === 1 ? '' : 's'}`,
      ...a.routes.map((r) => `    ${r}`),
    ]),
    ...(s.clients.length === 0 ? [] : [`  clients  ${s.clients.length} (a key on every agent endpoint)`, ...s.clients.map((c) => `    ${c}`)]),
  ];
  return lines.join('\n');
}
