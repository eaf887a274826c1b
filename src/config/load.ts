/** YAML -> `${VAR}` substitution -> `configSchema` -> route cross-checks -> deep-frozen; problems carry line:column. */
import { readFileSync } from 'node:fs';
import { isAlias, isMap, isNode, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { closest } from './nearest-name.js';
import { configSchema, DEFAULT_MEMORY_KEY, type GatewayConfig } from './schema.js';
import { formatPath, routeProblems, type PathSegment, type Problem } from './route-problems.js';
import { GatewayError } from '../errors.js';

export type Env = Record<string, string | undefined>;

interface ConfigIssue {
  /** `routes[1].split.qwenx`; `(root)` for the whole document. */
  path: string;
  line: number;
  column: number;
  message: string;
}

export class ConfigError extends GatewayError {
  constructor(
    readonly source: string,
    readonly issues: readonly ConfigIssue[],
    detail?: string,
    options?: ErrorOptions,
  ) {
    const n = issues.length;
    const lines = issues.map((i) => `\n  ${source}:${i.line}:${i.column}: ${i.path}: ${i.message}`);
    super('GATEWAY_ERR_CONFIG_INVALID', detail ?? `invalid config file ${source} (${n} problem${n === 1 ? '' : 's'}):${lines.join('')}`, options);
    this.name = 'ConfigError';
  }
}

export function deepFreeze<T>(value: T, seen: WeakSet<object> = new WeakSet()): T {
  if (value === null || typeof value !== 'object' || seen.has(value)) return value;
  seen.add(value);
  for (const key of Reflect.ownKeys(value)) deepFreeze<unknown>(Reflect.get(value, key), seen);
  return Object.freeze(value);
}

export function loadConfigFile(path: string, env: Env = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, [], `cannot read config file ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  return parseConfigText(text, path, env);
}

export function parseConfigText(text: string, sourceName: string, env: Env = process.env): GatewayConfig {
  const lineCounter = new LineCounter();
  // prettyErrors off: messages stay one line, positions come from the LineCounter like every other issue.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const at = (offset: number): { line: number; column: number } => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  if (doc.errors.length > 0) throw new ConfigError(sourceName, syntaxIssues(doc, text, at));
  if (doc.contents === null) {
    const message = 'the file is empty: a config needs at least "backends" and "routes"';
    throw new ConfigError(sourceName, [{ path: '(root)', line: 1, column: 1, message }]);
  }

  const problems: Problem[] = [];
  const substituted: Substitution[] = [];
  substituteEnv(doc.contents, [], env, problems, substituted);
  const envPaths = problems.map((p) => formatPath(p.path));
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });

  let parsed = configSchema.safeParse(raw);
  if (!parsed.success && coerceSubstituted(raw, parsed.error.issues, substituted)) parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    for (const p of flattenZodIssues(parsed.error.issues, [])) {
      // A value whose variable is missing fails validation too: only the missing variable is reported.
      const path = formatPath(p.path);
      if (!envPaths.some((e) => path === e || path.startsWith(e + '.') || path.startsWith(e + '['))) problems.push(p);
    }
  }
  // Cross-checks read the raw value leniently, so they are reported alongside schema problems, not after a fix.
  problems.push(...routeProblems(raw, memoryKeyOf(raw)));

  if (problems.length > 0 || !parsed.success) {
    const issues = problems
      .map((p) => ({ path: formatPath(p.path), ...at(locate(doc, p.path, p.atKey === true)), message: p.message }))
      .sort((a, b) => a.line - b.line || a.column - b.column);
    throw new ConfigError(sourceName, dedupe(issues));
  }
  return deepFreeze(parsed.data);
}

/** After the first structural error the parser reports every following token as unexpected: echoes, dropped. */
function syntaxIssues(doc: Document, text: string, at: (offset: number) => Omit<ConfigIssue, 'path' | 'message'>): ConfigIssue[] {
  return doc.errors
    .filter((e, i) => i === 0 || e.code !== 'UNEXPECTED_TOKEN')
    .map((e) => {
      const offset = e.pos[0];
      // `${VAR}` unquoted inside `{ }` or `[ ]` reads as a nested flow map: say so, the parser's words do not.
      const quote = text.slice(Math.max(offset - 1, 0), offset + 1) === '${';
      const hint = quote ? ' (inside { } or [ ], write "${VAR}" in quotes)' : '';
      return { path: '(yaml)', ...at(offset), message: e.message + hint };
    });
}

function memoryKeyOf(raw: unknown): string {
  const mk = raw !== null && typeof raw === 'object' && 'memory_key' in raw ? raw.memory_key : undefined;
  return typeof mk === 'string' ? mk : DEFAULT_MEMORY_KEY;
}

function dedupe(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => !seen.has(`${i.path}\n${i.message}`) && seen.add(`${i.path}\n${i.message}`));
}

/** Source offset of the node at `path`: its key when `atKey` or for a collection, else its value. */
function locate(doc: Document, path: readonly PathSegment[], atKey: boolean): number {
  const start = (n: unknown): number | undefined => (isNode(n) ? n.range?.[0] : undefined);
  let node: unknown = doc.contents;
  let offset = start(node) ?? 0;
  for (const [i, seg] of path.entries()) {
    if (isAlias(node)) node = node.resolve(doc);
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (pair === undefined) return offset;
      node = pair.value;
      if (last && (atKey || isMap(node) || isSeq(node) || start(node) === undefined)) return start(pair.key) ?? offset;
    } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
      node = node.items[seg];
    } else return offset;
    offset = start(node) ?? offset;
  }
  return offset;
}

const VAR_REF = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{/g;

interface Substitution {
  path: PathSegment[];
  text: string;
}

/** `${VAR}` / `${VAR:-default}` in string values (never keys). Messages never quote a value: often a secret. */
function substituteEnv(node: unknown, path: PathSegment[], env: Env, problems: Problem[], out: Substitution[]): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : '?';
      substituteEnv(pair.value, [...path, key], env, problems, out);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => substituteEnv(item, [...path, i], env, problems, out));
  } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('${')) {
    const errors: string[] = [];
    const text = node.value.replace(VAR_REF, (m: string, name: string | undefined, dflt: string | undefined) => {
      if (m === '$${') return '${';
      if (name === undefined) {
        errors.push('malformed "${" reference: write ${NAME} or ${NAME:-default}, or $${ for a literal "${"');
        return m;
      }
      if (dflt?.includes('${')) {
        errors.push(`nested reference in the default of \${${name}:-...} is not supported`);
        return m;
      }
      const value = env[name];
      if (dflt !== undefined) return value === undefined || value === '' ? dflt : value;
      if (value === undefined) errors.push(`environment variable ${name} is not set (use \${${name}:-default} for a default)`);
      return value ?? m;
    });
    for (const message of errors) problems.push({ path, message });
    if (errors.length > 0) return;
    node.value = text;
    out.push({ path, text });
  }
}

const NUMBER_TEXT = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
const BOOLEAN_TEXT: Record<string, boolean> = { true: true, True: true, TRUE: true, false: false, False: false, FALSE: false };

/** A substituted string where the schema wants a number or a boolean becomes one; true if any changed. */
function coerceSubstituted(raw: unknown, issues: readonly z.core.$ZodIssue[], substituted: readonly Substitution[]): boolean {
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type' || (issue.expected !== 'number' && issue.expected !== 'boolean')) continue;
    const key = formatPath(segments(issue.path));
    const sub = substituted.find((s) => formatPath(s.path) === key);
    if (sub === undefined) continue;
    const text = sub.text.trim();
    const value = issue.expected === 'number' ? (NUMBER_TEXT.test(text) ? Number(text) : undefined) : BOOLEAN_TEXT[text];
    if (value === undefined) continue;
    const parent = sub.path.slice(0, -1).reduce<unknown>((o, seg) => (isObjectLike(o) ? Reflect.get(o, seg) : undefined), raw);
    const last = sub.path.at(-1);
    if (!isObjectLike(parent) || last === undefined) continue;
    Reflect.set(parent, last, value);
    changed = true;
  }
  return changed;
}

function isObjectLike(v: unknown): v is object {
  return v !== null && typeof v === 'object';
}

function segments(path: readonly PropertyKey[]): PathSegment[] {
  return path.map((s) => (typeof s === 'number' ? s : String(s)));
}

type Schema = z.core.$ZodType;

/** The schemas a value at this level may be checked against (several for a union). */
function unwrap(s: Schema): Schema[] {
  if (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault || s instanceof z.ZodPrefault) return unwrap(s.unwrap());
  if (s instanceof z.ZodPipe) return unwrap(s.in);
  if (s instanceof z.ZodUnion) return s.options.flatMap(unwrap);
  return [s];
}

function step(s: Schema, seg: PathSegment): Schema[] {
  // Own keys only: a segment such as "constructor" names no field.
  if (s instanceof z.ZodObject && typeof seg === 'string' && Object.hasOwn(s.shape, seg)) return [s.shape[seg]];
  if (s instanceof z.ZodRecord) return [s.valueType];
  if (s instanceof z.ZodArray && typeof seg === 'number') return [s.element];
  return [];
}

/** The keys the schema allows at a path, for "did you mean ...?", read from the one zod schema. */
export function knownKeysAt(path: readonly PathSegment[]): string[] {
  let level = unwrap(configSchema);
  for (const seg of path) level = level.flatMap((s) => step(s, seg)).flatMap(unwrap);
  const keys = new Set<string>();
  for (const s of level) if (s instanceof z.ZodObject) for (const k of Object.keys(s.shape)) keys.add(k);
  return [...keys];
}

/** Refused with their replacement named rather than silently doing nothing (docs/configuration.md#removed-keys). */
const REMOVED_KEYS: ReadonlyMap<string, string> = new Map([
  [
    'server.heap_growing_percent',
    "the gateway sets a V8 heap growth of 150% itself; for another, pass --heap-growing-percent=N on node's command line",
  ],
  ['server.memory_reclaim_share', "nothing: a finished batch's large bodies and answers are given back to the system when it ends, with no collection forced"],
]);

function unknownKeyMessage(path: readonly PathSegment[], key: string): string {
  const replacement = REMOVED_KEYS.get([...path, key].join('.'));
  if (replacement !== undefined) return `key "${key}" was removed: ${replacement}`;
  const near = closest(key, knownKeysAt(path));
  return `unknown key "${key}"${near === undefined ? '' : ` (did you mean "${near}"?)`}`;
}

/** One problem per unknown key; unions reduced to the alternative the value was meant for. */
function flattenZodIssues(issues: readonly z.core.$ZodIssue[], prefix: PathSegment[]): Problem[] {
  const out: Problem[] = [];
  // An object with an unknown key usually lacks the key that was meant: its refinement failing says it twice.
  const unknownAt = new Set(issues.filter((i) => i.code === 'unrecognized_keys').map((i) => i.path.join('\0')));
  for (const issue of issues) {
    if (issue.code === 'custom' && unknownAt.has(issue.path.join('\0'))) continue;
    const path = [...prefix, ...segments(issue.path)];
    switch (issue.code) {
      case 'unrecognized_keys':
        for (const key of issue.keys) out.push({ path: [...path, key], atKey: true, message: unknownKeyMessage(path, key) });
        break;
      case 'invalid_key':
        out.push({ path, atKey: true, message: issue.issues.map((i) => i.message).join('; ') });
        break;
      case 'invalid_union': {
        // An alternative that failed only because the value has another type was not the one meant.
        const meant = issue.errors.filter((alt) => !alt.every((i) => i.code === 'invalid_type' && i.path.length === 0));
        const [only] = meant;
        if (meant.length === 1 && only !== undefined) out.push(...flattenZodIssues(only, path));
        else out.push({ path, message: issue.message });
        break;
      }
      default:
        out.push({ path, message: issue.message.replace(/^Invalid input: /, '') });
    }
  }
  return out;
}
