/**
 * Summarize a V8 .cpuprofile (from `node --cpu-prof`): top functions by self time, mapped back to the
 * TypeScript source through the compiled files' source maps, and self time per package / area.
 *
 *   node dist/bench/profile-summary.js FILE.cpuprofile [--top 25]
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface HotFunction {
  name: string;
  /** file:line, in TypeScript source when a source map is found. */
  location: string;
  selfMs: number;
  selfPct: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Non-idle sampled time. */
  busyMs: number;
  top: HotFunction[];
  /** Self time per area: gateway src, a node_modules package, node internals, GC, ... */
  areas: { area: string; selfMs: number; selfPct: number }[];
  /** Gateway functions (dist/src) by inclusive time: the time spent in them and everything they call. */
  inclusive: HotFunction[];
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const maps = new Map<string, SourceMap | null>();

function sourceMapFor(path: string): SourceMap | null {
  let m = maps.get(path);
  if (m !== undefined) return m;
  m = null;
  const mapPath = `${path}.map`;
  if (existsSync(mapPath)) {
    try {
      m = new SourceMap(JSON.parse(readFileSync(mapPath, 'utf8')) as SourceMapPayload);
    } catch {
      m = null;
    }
  }
  maps.set(path, m);
  return m;
}

function locate(cf: CallFrame): string {
  if (cf.url === '') return '';
  let path = cf.url;
  if (path.startsWith('file://')) path = fileURLToPath(path);
  const line = cf.lineNumber + 1;
  if (path.includes('/dist/') && !path.includes('node_modules')) {
    const map = sourceMapFor(path);
    if (map) {
      const e = map.findEntry(cf.lineNumber, cf.columnNumber);
      if ('originalSource' in e && typeof e.originalSource === 'string') {
        const src = e.originalSource.startsWith('file://') ? fileURLToPath(e.originalSource) : resolve(dirname(path), e.originalSource);
        return `${relative(ROOT, src)}:${e.originalLine + 1}`;
      }
    }
  }
  return `${path.startsWith('/') ? relative(ROOT, path) : path}:${line}`;
}

function areaOf(cf: CallFrame): string {
  const u = cf.url;
  if (u === '') {
    if (cf.functionName === '(garbage collector)') return 'GC';
    if (cf.functionName === '(idle)') return 'idle';
    if (cf.functionName === '(program)') return 'program (native, unattributed)';
    return `native ${cf.functionName}`;
  }
  if (u.startsWith('node:')) return 'node internals';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm) return nm[1]!;
  const d = /\/dist\/(src|bench|test|demo)\//.exec(u);
  if (d) return `gateway ${d[1]}`;
  return 'other';
}

export function summarize(file: string, top = 25): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const funcs = new Map<string, { name: string; location: string; us: number }>();
  const areas = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const cf = byId.get(id)!.callFrame;
    total += us;
    const area = areaOf(cf);
    if (area === 'idle') {
      idle += us;
      continue;
    }
    areas.set(area, (areas.get(area) ?? 0) + us);
    const location = locate(cf);
    const key = `${cf.functionName}@${location}`;
    const f = funcs.get(key);
    if (f) f.us += us;
    else funcs.set(key, { name: cf.functionName || '(anonymous)', location, us });
  }
  const busy = total - idle;

  // Inclusive time of gateway source functions: each sample counts once for every distinct gateway frame on its stack.
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const incl = new Map<string, { name: string; location: string; us: number }>();
  for (const [id, us] of self) {
    if (areaOf(byId.get(id)!.callFrame) === 'idle') continue;
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      if (areaOf(cf) !== 'gateway src') continue;
      const location = locate(cf);
      const key = `${cf.functionName}@${location}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const f = incl.get(key);
      if (f) f.us += us;
      else incl.set(key, { name: cf.functionName || '(anonymous)', location, us });
    }
  }
  const pct = (us: number): number => (busy > 0 ? (100 * us) / busy : 0);
  return {
    file,
    totalMs: total / 1000,
    busyMs: busy / 1000,
    top: [...funcs.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, location: f.location, selfMs: f.us / 1000, selfPct: pct(f.us) })),
    areas: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, selfMs: us / 1000, selfPct: pct(us) })),
    inclusive: [...incl.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, location: f.location, selfMs: f.us / 1000, selfPct: pct(f.us) })),
  };
}

export function formatSummary(s: ProfileSummary): string {
  const lines: string[] = [];
  lines.push(`profile ${relative(ROOT, s.file)}: ${s.busyMs.toFixed(0)} ms busy of ${s.totalMs.toFixed(0)} ms sampled`);
  lines.push('', '| self % | self ms | function | location |', '|---:|---:|---|---|');
  for (const f of s.top) lines.push(`| ${f.selfPct.toFixed(1)} | ${f.selfMs.toFixed(0)} | \`${f.name}\` | ${f.location} |`);
  lines.push('', '| area | self % | self ms |', '|---|---:|---:|');
  for (const a of s.areas.slice(0, 15)) lines.push(`| ${a.area} | ${a.selfPct.toFixed(1)} | ${a.selfMs.toFixed(0)} |`);
  if (s.inclusive.length > 0) {
    lines.push('', '| inclusive % | inclusive ms | gateway function | location |', '|---:|---:|---|---|');
    for (const f of s.inclusive) lines.push(`| ${f.selfPct.toFixed(1)} | ${f.selfMs.toFixed(0)} | \`${f.name}\` | ${f.location} |`);
  }
  return lines.join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
  if (positionals.length === 0) {
    process.stderr.write('usage: node dist/bench/profile-summary.js FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  for (const f of positionals) console.log(formatSummary(summarize(resolve(f), Number(values.top))) + '\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
