/**
 * Route matching (docs/routing.md#routes), compiled once per config into closures: it runs for every input. A digit
 * segment of a dot path also indexes a list; `tools` is absent when the input has none; a repeated header is a list.
 */
import { DEFAULT_MEMORY_KEY, type Condition } from '../config/schema.js';
import { compileCondition, type Predicate } from './conditions.js';
import { GatewayError } from '../errors.js';
import { isJsonObject } from '../protocol/schemas.js';
import type { RoutingInput } from './routing-input.js';

export type Headers = Record<string, string | string[] | undefined>;
export type Matcher = (input: RoutingInput, headers: Headers) => boolean;
type Resolver = (input: RoutingInput, headers: Headers) => unknown;
type MatchSpec = Readonly<Record<string, Condition>>;

/** Own properties only, so `constructor` or `__proto__` never resolve to prototype members. */
function walk(root: unknown, segments: readonly string[]): unknown {
  let cur = root;
  for (const seg of segments) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[Number(seg)];
    else if (isJsonObject(cur) && Object.hasOwn(cur, seg)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

/** Case-insensitive header lookup; Node already lowercases incoming names, so the scan is only a fallback. */
function header(headers: Headers, lower: string): string | string[] | undefined {
  const direct = headers[lower];
  if (direct !== undefined) return direct;
  for (const name of Object.keys(headers)) {
    if (name.toLowerCase() === lower) return headers[name];
  }
  return undefined;
}

function toolNames(input: RoutingInput): string[] | undefined {
  const tools = input.tools;
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const names: string[] = [];
  for (const t of tools) if (isJsonObject(t) && typeof t.name === 'string') names.push(t.name);
  return names;
}

export function compileKey(key: string, memoryKey: string = DEFAULT_MEMORY_KEY): { resolve: Resolver; textual: boolean } {
  if (key === 'instruction_type') return { resolve: (i) => i.instruction.type, textual: false };
  if (key === 'tools') return { resolve: toolNames, textual: false };
  if (key === 'robots') return { resolve: (i) => i.member('attributes', 'known_robots'), textual: false };
  const dot = key.indexOf('.');
  const head = dot === -1 ? key : key.slice(0, dot);
  const rest = key.slice(dot + 1);
  if (dot !== -1 && head === 'header' && rest !== '') {
    const lower = rest.toLowerCase();
    return { resolve: (_i, h) => header(h, lower), textual: true };
  }
  const segments = rest.split('.');
  if (dot === -1 || segments.some((s) => s === '')) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `unknown match key "${key}"`);
  if (head !== 'attributes' && head !== 'extra_keys' && head !== 'memory') throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `unknown match key "${key}"`);
  const [first = '', ...below] = segments;
  // Routing reads the gateway's own key only as a sticky tag.
  if (head === 'memory' && first === memoryKey) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `"${key}" reads the gateway's own memory key`);
  return { resolve: (i) => walk(i.member(head, first), below), textual: false };
}

/** What `assign_by` and `experiments.stratify_by` read (`attributes.<path>` or `extra_keys.<path>`). */
export function compileInputPath(path: string): (input: RoutingInput) => unknown {
  const { resolve } = compileKey(path);
  return (input) => resolve(input, {});
}

const ALWAYS: Matcher = () => true;

/** All conditions must hold; no match (or an empty one) selects every input. */
export function compileMatch(match: MatchSpec | undefined, memoryKey: string = DEFAULT_MEMORY_KEY): Matcher {
  if (match === undefined) return ALWAYS;
  const tests: { resolve: Resolver; test: Predicate }[] = [];
  for (const [key, cond] of Object.entries(match)) {
    const { resolve, textual } = compileKey(key, memoryKey);
    tests.push({ resolve, test: compileCondition(cond, { textual }) });
  }
  if (tests.length === 0) return ALWAYS;
  return (input, headers) => {
    for (const t of tests) if (!t.test(t.resolve(input, headers))) return false;
    return true;
  };
}
