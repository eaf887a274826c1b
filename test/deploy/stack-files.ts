/**
 * Helpers for the monitoring stack test: reading the compose file, the Dockerfile, Prometheus and Grafana files
 * as plain data (no Docker engine needed), and a small PromQL checker that names every metric and label an
 * expression uses so they can be compared with what the gateway really exports.
 */
import { Copy as CopyInstruction, DockerfileParser, From } from 'dockerfile-ast';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, posix } from 'node:path';
import { Registry } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { GatewayMetrics } from '../../src/metrics.js';

/** The tests run from the repo root (`npm test`, `node --test dist/test/...`). */
export const ROOT = process.cwd();

export type Obj = Record<string, unknown>;

export function repoPath(rel: string): string {
  return isAbsolute(rel) ? rel : join(ROOT, rel);
}

export function readText(rel: string): string {
  return readFileSync(repoPath(rel), 'utf8');
}

export function readYaml(rel: string): unknown {
  return parseYaml(readText(rel)) as unknown;
}

export function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function obj(v: unknown, what: string): Obj {
  if (!isObj(v)) throw new Error(`${what}: expected a mapping, got ${JSON.stringify(v)}`);
  return v;
}

export function arr(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new Error(`${what}: expected a list, got ${JSON.stringify(v)}`);
  return v;
}

export function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new Error(`${what}: expected a string, got ${JSON.stringify(v)}`);
  return v;
}

export function exists(rel: string): boolean {
  return existsSync(repoPath(rel));
}

// ---------------------------------------------------------------------------------------------------------------
// docker-compose.yml

export interface Mount {
  source: string;
  target: string;
  /** A bind mount of a repo path (`./x:/y`), as opposed to a named volume. */
  bind: boolean;
}

/** Short (`./src:/dst:ro`, `name:/dst`) and long (`{type, source, target}`) volume syntax. */
export function mounts(service: Obj): Mount[] {
  const out: Mount[] = [];
  for (const v of (service.volumes as unknown[] | undefined) ?? []) {
    if (typeof v === 'string') {
      const [source = '', target = ''] = v.split(':');
      out.push({ source, target, bind: /^[./~]/.test(source) });
    } else {
      const m = obj(v, 'volume');
      out.push({ source: str(m.source, 'volume source'), target: str(m.target, 'volume target'), bind: m.type === 'bind' });
    }
  }
  return out;
}

export interface PortMapping {
  published: number | undefined;
  container: number;
}

/** `"8888:8888"`, `"127.0.0.1:8888:8888/tcp"`, `"8888"`, or the long syntax. */
export function ports(service: Obj): PortMapping[] {
  return ((service.ports as unknown[] | undefined) ?? []).map((p) => {
    if (isObj(p)) return { published: p.published === undefined ? undefined : Number(p.published), container: Number(p.target) };
    const parts = String(p).replace(/\/(tcp|udp)$/, '').split(':');
    const container = Number(parts[parts.length - 1]);
    return { published: parts.length > 1 ? Number(parts[parts.length - 2]) : undefined, container };
  });
}

export function dependsOn(service: Obj): Map<string, string> {
  const d = service.depends_on;
  const out = new Map<string, string>();
  if (Array.isArray(d)) for (const name of d) out.set(String(name), 'service_started');
  else if (isObj(d)) {
    for (const [name, spec] of Object.entries(d)) {
      out.set(name, isObj(spec) && typeof spec.condition === 'string' ? spec.condition : 'service_started');
    }
  }
  return out;
}

export function environment(service: Obj): Record<string, string> {
  const e = service.environment;
  const out: Record<string, string> = {};
  if (Array.isArray(e)) {
    for (const item of e) {
      const s = String(item);
      const i = s.indexOf('=');
      if (i > 0) out[s.slice(0, i)] = s.slice(i + 1);
    }
  } else if (isObj(e)) for (const [k, v] of Object.entries(e)) out[k] = v === null ? '' : String(v);
  return out;
}

/** `command`/`entrypoint` in exec form (a list) or shell form (split on blanks, enough for these files). */
export function argv(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v)) return v.map(String);
  return String(v).trim().split(/\s+/);
}

/** The value of `--name value` or `--name=value` in an argument list. */
export function flagValue(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i !== -1) return args[i + 1];
  return args.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

/** The port of the first `http://host:port/health` in a healthcheck's test command. */
export function healthcheckPort(test: unknown): number | undefined {
  const text = Array.isArray(test) ? test.join(' ') : String(test ?? '');
  const m = /https?:\/\/[^/:\s'"]+:(\d+)\/health/.exec(text);
  return m === null ? undefined : Number(m[1]);
}

// ---------------------------------------------------------------------------------------------------------------
// Dockerfile

export interface Instruction {
  keyword: string;
  /** The arguments after the keyword (flags such as --from left out), continuation lines joined. */
  rest: string;
  /** COPY --from=<stage>. */
  from?: string;
}

export interface Stage {
  base: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Stages of a Dockerfile, read by dockerfile-ast (the parser of the Docker language server). */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const i of DockerfileParser.parse(text).getInstructions()) {
    const keyword = i.getKeyword().toUpperCase();
    if (i instanceof From) {
      const tag = i.getImageTag();
      stages.push({ base: i.getImageName() + (tag === undefined ? '' : `:${tag}`), name: i.getBuildStage() ?? undefined, instructions: [] });
    } else {
      const from = i instanceof CopyInstruction ? (i.getFromFlag()?.getValue() ?? undefined) : undefined;
      stages.at(-1)?.instructions.push({ keyword, rest: i.getArgumentsContent() ?? '', ...(from === undefined ? {} : { from }) });
    }
  }
  return stages;
}

/** JSON (exec) form of CMD/ENTRYPOINT/HEALTHCHECK CMD, or undefined for shell form. */
export function execForm(rest: string): string[] | undefined {
  const t = rest.trim();
  if (!t.startsWith('[')) return undefined;
  const v = JSON.parse(t) as unknown;
  return Array.isArray(v) ? v.map(String) : undefined;
}

export interface Copy {
  from: string | undefined;
  sources: string[];
  dest: string;
}

export function copies(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')
    .map((i) => {
      const paths = execForm(i.rest) ?? i.rest.split(/\s+/);
      return { from: i.from, sources: paths.slice(0, -1), dest: paths[paths.length - 1] ?? '' };
    });
}

export function workdir(stage: Stage): string {
  let dir = '/';
  for (const i of stage.instructions) if (i.keyword === 'WORKDIR') dir = posix.resolve(dir, i.rest.trim());
  return dir;
}

/**
 * Whether `.dockerignore` keeps `path` (a repo-relative path) out of the build context. Patterns are matched the
 * way Docker does for the simple forms this repo uses: a path or glob matches the path itself and everything
 * under it; `**` spans directories; a `!` line re-includes.
 */
export function dockerIgnored(patterns: readonly string[], path: string): boolean {
  let ignored = false;
  const clean = path.replace(/^\.\//, '').replace(/\/+$/, '');
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\.?\//, '').replace(/\/+$/, '');
    if (pattern === '') continue;
    const re = new RegExp(
      '^' +
        pattern
          .split('**')
          .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]'))
          .join('.*')
          .replace(/\.\*\//g, '(?:.*/)?') +
        '(?:/.*)?$',
    );
    if (re.test(clean)) ignored = !negate;
  }
  return ignored;
}

export function dockerignorePatterns(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

// ---------------------------------------------------------------------------------------------------------------
// Grafana dashboard

export interface Panel {
  id?: number;
  type?: string;
  title?: string;
  datasource?: unknown;
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: { expr?: string; refId?: string; datasource?: unknown }[];
  panels?: Panel[];
}

/** Every panel, rows' nested (collapsed) panels included. */
export function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

export function datasourceUid(ds: unknown): string | undefined {
  if (typeof ds === 'string') return ds; // legacy: a name or uid as a string
  return isObj(ds) && typeof ds.uid === 'string' ? ds.uid : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// What the gateway exports

export interface MetricInfo {
  type: string;
  labels: readonly string[];
}

async function catalogOf(registry: Registry): Promise<Map<string, MetricInfo>> {
  const out = new Map<string, MetricInfo>();
  for (const m of await registry.getMetricsAsJSON()) {
    // prom-client keeps a metric's label names on the instance (not in its public typings).
    const labels = (registry.getSingleMetric(m.name) as unknown as { labelNames?: readonly string[] }).labelNames ?? [];
    out.set(m.name, { type: String(m.type), labels });
  }
  return out;
}

/** Every metric the gateway's registry exports (its own and prom-client's defaults), with type and labels. */
export async function gatewayCatalog(): Promise<Map<string, MetricInfo>> {
  const metrics = new GatewayMetrics();
  try {
    return await catalogOf(metrics.registry);
  } finally {
    metrics.registry.clear();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// PromQL labels. The real Prometheus run (dashboard-prometheus.test.ts) proves every query parses and returns
// series; it cannot see a matcher or a grouping on a label the metric lacks: `{arm=~".*"}` and `by (arm)` still
// return series. This checks exactly that, against the labels the registry declares.

const CLAUSE = /\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g;
const SELECTOR = /(magma_gateway_[a-z0-9_]+)\s*\{([^}]*)\}/g;
const MATCHER_LABEL = /([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)/g;

/** Labels a series has: its metric's, plus `le` for a histogram's buckets and the labels Prometheus adds. */
function seriesLabels(series: string, catalog: ReadonlyMap<string, MetricInfo>): string[] | undefined {
  const base = series.replace(/_(bucket|sum|count)$/, '');
  const info = catalog.get(series) ?? catalog.get(base);
  if (info === undefined) return undefined; // an unknown metric returns no series: the real run catches it
  return [...info.labels, ...(series.endsWith('_bucket') ? ['le'] : []), ...(info.type === 'summary' ? ['quantile'] : [])];
}

export function labelProblems(expr: string, catalog: ReadonlyMap<string, MetricInfo>, targetLabels: ReadonlySet<string>): string[] {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""'); // label values never look like label names
  const problems: string[] = [];
  const used = new Map<string, string[]>();
  for (const name of new Set(text.match(/magma_gateway_[a-z0-9_]+/g) ?? [])) {
    const labels = seriesLabels(name, catalog);
    if (labels !== undefined) used.set(name, labels);
  }
  for (const m of text.matchAll(SELECTOR)) {
    for (const l of m[2]!.matchAll(MATCHER_LABEL)) {
      const label = l[1]!;
      if (!targetLabels.has(label) && !(used.get(m[1]!) ?? [label]).includes(label)) problems.push(`${m[1]} has no label "${label}"`);
    }
  }
  for (const m of text.matchAll(CLAUSE)) {
    for (const label of m[1]!.split(',').map((x) => x.trim()).filter((x) => x !== '' && !targetLabels.has(x))) {
      for (const [name, labels] of used) if (!labels.includes(label)) problems.push(`grouping by "${label}": ${name} has no such label`);
    }
  }
  return problems;
}
