/**
 * The route invariants that relate parts of the config (docs/routing.md#virtual-agents), read leniently from the
 * raw value so the loader reports them with the schema's problems.
 */
import { compileRegex, globToRegExp } from '../patterns/glob.js';
import { isJsonObject } from '../protocol/schemas.js';
import { ROOT_AGENT } from './schema.js';

export type PathSegment = string | number;

export interface Problem {
  path: PathSegment[];
  message: string;
  atKey?: boolean;
}

/** `routes[1].split.qwenx`, `match["attributes.scenario"]`. */
export function formatPath(path: readonly PathSegment[]): string {
  if (path.length === 0) return '(root)';
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

type Obj = Record<string, unknown>;

function isCatchAll(route: { match?: unknown }): boolean {
  const m = route.match;
  // `match:` left empty is a schema error of its own; counting it as a catch-all avoids a second, misleading one.
  return m === undefined || m === null || (isJsonObject(m) && Object.keys(m).length === 0);
}

/** Each table on its own against the one backends map; `memoryKey` is the top-level one. */
export function routeProblems(raw: unknown, memoryKey: string): Problem[] {
  const out: Problem[] = [];
  if (!isJsonObject(raw)) return out;
  const defined = isJsonObject(raw.backends) ? Object.keys(raw.backends) : undefined;
  const agents = isJsonObject(raw.agents) ? raw.agents : undefined;
  if (Array.isArray(raw.routes)) out.push(...tableProblems(raw.routes, ['routes'], defined, memoryKey));
  const hasRoutes = Array.isArray(raw.routes) ? raw.routes.length > 0 : raw.routes !== undefined; // not a list: the schema says so
  if (!hasRoutes && (agents === undefined || Object.keys(agents).length === 0)) {
    const message = 'no routes: give the top-level "routes" (the agent at /) or an "agents" section naming at least one agent';
    out.push({ path: ['routes'], atKey: raw.routes !== undefined, message });
  }
  out.push(...clientAgentProblems(raw, agents));
  for (const [name, agent] of Object.entries(agents ?? {})) {
    // zod's records drop this key without a word (assigning it would replace the prototype): say so here.
    if (name === '__proto__') out.push({ path: ['agents', name], atKey: true, message: '"__proto__" is reserved: choose another name' });
    if (!isJsonObject(agent) || !Array.isArray(agent.routes)) continue; // the schema reports it
    const key = typeof agent.memory_key === 'string' ? agent.memory_key : memoryKey;
    out.push(...tableProblems(agent.routes, ['agents', name, 'routes'], defined, key));
  }
  return out;
}

function clientAgentProblems(raw: Obj, agents: Obj | undefined): Problem[] {
  const out: Problem[] = [];
  if (!isJsonObject(raw.clients)) return out;
  const known = [...(Array.isArray(raw.routes) && raw.routes.length > 0 ? [ROOT_AGENT] : []), ...Object.keys(agents ?? {})];
  for (const [client, c] of Object.entries(raw.clients)) {
    if (!isJsonObject(c) || !Array.isArray(c.agents)) continue; // the schema reports it
    c.agents.forEach((a: unknown, i) => {
      if (typeof a === 'string' && !known.includes(a)) {
        out.push({ path: ['clients', client, 'agents', i], message: `unknown agent "${a}" (agents: ${known.join(', ') || 'none'})` });
      }
    });
  }
  return out;
}

/** A catch-all must be last (first match wins), names unique (metric labels, memory tags), backends defined. */
function tableProblems(routes: unknown[], base: PathSegment[], defined: string[] | undefined, memoryKey: string): Problem[] {
  const out: Problem[] = [];
  const known = new Set(defined);
  const where = formatPath(base);

  const ref = (name: unknown, path: PathSegment[], atKey = false): void => {
    // Without a backends map the schema already reports it; every reference would only repeat that.
    if (defined === undefined || typeof name !== 'string' || known.has(name)) return;
    out.push({ path, atKey, message: `unknown backend "${name}" (defined: ${defined.join(', ') || 'none'})` });
  };

  const names = new Map<string, number>();
  const catchAlls: number[] = [];
  routes.forEach((route, i) => {
    if (!isJsonObject(route)) return;
    const at = (...p: PathSegment[]): PathSegment[] => [...base, i, ...p];
    if (typeof route.name === 'string') {
      const prev = names.get(route.name);
      if (prev === undefined) names.set(route.name, i);
      else out.push({ path: at('name'), message: `route name "${route.name}" is already used by ${where}[${prev}]` });
    }
    ref(route.backend, at('backend'));
    for (const kind of ['split', 'ensemble'] as const) {
      const members = route[kind];
      if (isJsonObject(members)) for (const m of Object.keys(members)) ref(m, at(kind, m), true);
    }
    for (const kind of ['fallback', 'shadow'] as const) {
      const list = route[kind];
      if (!Array.isArray(list)) continue;
      const seen = new Set<unknown>();
      list.forEach((b: unknown, j) => {
        ref(b, at(kind, j));
        if (seen.has(b)) out.push({ path: at(kind, j), message: `backend "${String(b)}" is listed twice` });
        seen.add(b);
      });
    }
    if (isCatchAll(route)) catchAlls.push(i);
    else if (isJsonObject(route.match)) out.push(...matchProblems(route.match, at('match'), memoryKey));
  });

  if (routes.length === 0) return out; // an empty table: routeProblems or the schema reports it
  const first = catchAlls[0];
  if (first === undefined) {
    out.push({ path: base, atKey: true, message: 'no catch-all route: the last route must have no "match", so that every input has a route' });
  } else {
    const route = routes[first];
    const label = `"${String(isJsonObject(route) ? route.name : undefined)}" (${where}[${first}])`; // an object: catch-alls are objects
    const message = `unreachable: the catch-all route ${label} before it takes every input; the catch-all must be the last route`;
    for (let k = first + 1; k < routes.length; k++) out.push({ path: [...base, k], message });
  }
  return out;
}

function matchProblems(match: Obj, at: PathSegment[], memoryKey: string): Problem[] {
  const out: Problem[] = [];
  const own = `memory.${memoryKey}`;
  for (const [key, cond] of Object.entries(match)) {
    if (key === own || key.startsWith(own + '.')) {
      const message = `"${key}" reads the gateway's own memory key "${memoryKey}", which routing uses for stickiness; match on another key`;
      out.push({ path: [...at, key], atKey: true, message });
    }
    if (!isJsonObject(cond)) continue;
    for (const [op, compile] of [
      ['glob', globToRegExp],
      ['regex', compileRegex],
    ] as const) {
      const source = cond[op];
      if (typeof source !== 'string') continue;
      try {
        compile(source);
      } catch (err) {
        out.push({ path: [...at, key, op], message: err instanceof Error ? err.message : String(err) });
      }
    }
  }
  return out;
}
