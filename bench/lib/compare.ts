/**
 * This run against an earlier one (`--compare FILE`, a latest.json written before): every target's figures and
 * every threshold's value, before and after. Absolute figures drift with the machine's load between runs; the
 * thresholds' values are ratios taken within one run (the gateway against baselines measured in the same
 * rounds), so "a scenario got slower" is decided on those: a speed threshold of the table (bench/scenarios.ts,
 * `speed`) that moved the wrong way by more than the tolerance.
 */
import { readFileSync } from 'node:fs';
import type { Threshold } from '../scenarios.js';
import type { BenchResults, ComparedFigure, Comparison, FloorResult, ScenarioResult, TargetCheck } from './types.js';

/** The parts of a results file the comparison reads (older files may lack figures added since: they read as missing). */
export type Comparable = Pick<BenchResults, 'scenarios' | 'targets'> & { floor?: Pick<FloorResult, 'cpuMs'> & { error?: string } };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads a results file written by an earlier run; throws naming the file and what is wrong with it. */
export function readResults(file: string): BenchResults {
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`--compare ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (!isObject(v) || !isObject(v.meta) || !Array.isArray(v.scenarios) || !Array.isArray(v.targets)) {
    throw new Error(`--compare ${file}: not a bench results file (expected the latest.json of a run: meta, scenarios, targets)`);
  }
  // Checked above: the keys the comparison reads are there; each figure is read as a number or missing.
  return v as unknown as BenchResults;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The figures compared per target, in the order of the report's columns. */
const FIGURES = ['req/s', 'p50 ms', 'p99 ms', 's/wave', 'CPU ms/batch', 'peak RSS MB'] as const;
type FigureName = (typeof FIGURES)[number];

/** Figures of one target, by name, with the direction that is better. */
function targetFigures(t: ScenarioResult['targets'][number]): { figure: FigureName; value: number | null; better: 'higher' | 'lower' }[] {
  const m = t.median;
  const mem = t.memory;
  if (mem !== undefined) {
    return [
      { figure: 's/wave', value: num(mem.waveS), better: 'lower' },
      { figure: 'CPU ms/batch', value: num(mem.cpuMsPerBatch), better: 'lower' },
      { figure: 'peak RSS MB', value: num(mem.hwmMb), better: 'lower' },
    ];
  }
  if (m === undefined) return [];
  return [
    { figure: 'req/s', value: num(m.rps), better: 'higher' },
    { figure: 'p50 ms', value: num(m.p50), better: 'lower' },
    { figure: 'p99 ms', value: num(m.p99), better: 'lower' },
    { figure: 'CPU ms/batch', value: num(m.frontCpuMsPerBatch), better: 'lower' },
    { figure: 'peak RSS MB', value: num(m.frontHwmMb), better: 'lower' },
  ];
}

function figuresOf(r: Comparable): Map<string, { scenario: string; what: string; figure: string; value: number | null; better: 'higher' | 'lower' }> {
  const out = new Map<string, { scenario: string; what: string; figure: string; value: number | null; better: 'higher' | 'lower' }>();
  for (const s of r.scenarios) {
    for (const t of s.targets) {
      for (const f of targetFigures(t)) out.set(`${s.id}\u0000${t.id}\u0000${f.figure}`, { scenario: s.id, what: t.label, ...f });
    }
  }
  if (r.floor !== undefined && r.floor.error === undefined) {
    out.set('S5\u0000floor\u0000CPU ms/batch', { scenario: 'S5', what: 'JSON floor', figure: 'CPU ms/batch', value: num(r.floor.cpuMs), better: 'lower' });
  }
  return out;
}

function verdictOf(before: number | null, after: number | null, better: 'higher' | 'lower', tolerancePct: number): Pick<ComparedFigure, 'changePct' | 'verdict'> {
  if (before === null && after === null) return { changePct: null, verdict: 'same' };
  if (before === null) return { changePct: null, verdict: 'new' };
  if (after === null) return { changePct: null, verdict: 'gone' };
  if (before === 0) return { changePct: null, verdict: after === 0 ? 'same' : better === 'higher' ? 'better' : 'worse' };
  const changePct = (after / before - 1) * 100;
  const up = changePct > tolerancePct;
  const down = changePct < -tolerancePct;
  if (!up && !down) return { changePct, verdict: 'same' };
  return { changePct, verdict: up === (better === 'higher') ? 'better' : 'worse' };
}

/**
 * Compares `after` with `before`. `thresholds` are the table's, each with its scenario ('soak' for the soak's):
 * they say which values are speed figures and which direction is better.
 */
export function compareResults(
  before: BenchResults,
  after: Comparable,
  file: string,
  thresholds: { scenario: string; threshold: Threshold }[],
  tolerancePct: number,
): Comparison {
  const figures: ComparedFigure[] = [];
  const byId = (list: TargetCheck[], id: string): TargetCheck | undefined => list.find((t) => t.id === id);
  for (const { scenario, threshold } of thresholds) {
    const b = byId(before.targets, threshold.id);
    const a = byId(after.targets, threshold.id);
    if (b === undefined && a === undefined) continue;
    const better = threshold.op === '<=' ? 'lower' : 'higher';
    const bv = num(b?.value);
    const av = num(a?.value);
    if (bv === null && av === null) continue;
    figures.push({
      scenario,
      what: threshold.id,
      figure: threshold.description,
      before: bv,
      after: av,
      better,
      speed: threshold.speed === true,
      ...verdictOf(bv, av, better, tolerancePct),
    });
  }
  const b = figuresOf(before);
  const a = figuresOf(after);
  for (const key of new Set([...b.keys(), ...a.keys()])) {
    const x = b.get(key);
    const y = a.get(key);
    const base = y ?? x;
    if (base === undefined) continue;
    const bv = x?.value ?? null;
    const av = y?.value ?? null;
    if (bv === null && av === null) continue;
    figures.push({ scenario: base.scenario, what: base.what, figure: base.figure, before: bv, after: av, better: base.better, speed: false, ...verdictOf(bv, av, base.better, tolerancePct) });
  }
  const slower = [...new Set(figures.filter((f) => f.speed && f.verdict === 'worse').map((f) => f.scenario))];
  const m = before.meta;
  return {
    file,
    before: { date: m.date, commit: m.commit, dirty: m.dirty, mode: m.mode, loadAvgStart: m.loadAvgStart },
    tolerancePct,
    figures,
    slower,
  };
}

function f(v: number | null, digits = 2): string {
  return v === null ? '–' : v.toFixed(digits);
}

function pct(v: number | null): string {
  return v === null ? '' : `${v >= 0 ? '+' : ''}${v.toFixed(1)}%`;
}

/** The comparison as Markdown: the thresholds' values, then each target's figures (one row per target). */
export function renderComparison(c: Comparison): string[] {
  const b = c.before;
  const lines: string[] = [
    `## Compared with ${c.file}`,
    '',
    `before: ${b.date} · commit ${b.commit}${b.dirty ? ' (dirty tree)' : ''} · mode ${b.mode} · load avg ${b.loadAvgStart.map((x) => x.toFixed(2)).join('/')}; ` +
      `a change beyond ±${c.tolerancePct}% counts as better or worse. ` +
      (c.slower.length > 0 ? `**Slower: ${c.slower.join(', ')}**` : 'No scenario slower.'),
    '',
    '| scenario | target | before | after | change | |',
    '|---|---|---:|---:|---:|---|',
  ];
  const isThreshold = (x: ComparedFigure): boolean => !(FIGURES as readonly string[]).includes(x.figure);
  for (const x of c.figures.filter(isThreshold)) {
    const mark = x.verdict === 'worse' ? (x.speed ? '**slower**' : 'worse') : x.verdict === 'same' ? '' : x.verdict;
    lines.push(`| ${x.scenario} | ${x.what}: ${x.figure} | ${f(x.before)} | ${f(x.after)} | ${pct(x.changePct)} | ${mark} |`);
  }
  lines.push('', `| scenario | target | ${FIGURES.join(' | ')} |`, `|---|---|${FIGURES.map(() => '---:').join('|')}|`);
  const rows = new Map<string, Map<string, ComparedFigure>>();
  for (const x of c.figures.filter((y) => !isThreshold(y))) {
    const key = `${x.scenario} | ${x.what}`;
    const row = rows.get(key) ?? new Map<string, ComparedFigure>();
    row.set(x.figure, x);
    rows.set(key, row);
  }
  for (const [key, row] of rows) {
    const cells = FIGURES.map((name) => {
      const x = row.get(name);
      if (x === undefined) return '';
      const digits = name === 'req/s' ? 1 : 2;
      return `${f(x.before, digits)} → ${f(x.after, digits)}${x.changePct === null ? '' : ` (${pct(x.changePct)})`}`;
    });
    lines.push(`| ${key} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  return lines;
}
