/**
 * One bench run: every selected scenario of bench/scenarios.ts in turn, the JSON floor, the soak, then the
 * thresholds; writes latest.json and latest.md to the options' directory. No side effect until runBench is called.
 */
import { execSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatSummary, summarize } from '../profile-summary.js';
import { COMPARE_THRESHOLDS, SCENARIOS, SOAK_THRESHOLDS, type Measured, type ScenarioSpec } from '../scenarios.js';
import { runAllocScenario } from './alloc.js';
import { compareResults } from './compare.js';
import { evaluate } from './evaluate.js';
import { runFloor, runSoakPhase } from './floor-soak.js';
import { runScenario, type Setup } from './measure.js';
import { runMemoryScenario } from './memory.js';
import type { Child } from './proc.js';
import { renderMarkdown } from './report.js';
import { errText, log, type BenchOptions, type RunContext } from './run-context.js';
import { setupEnsemble, setupProxyScenario, setupShard } from './setups.js';
import type { BenchResults, FloorResult, ScenarioResult, SoakResult } from './types.js';

/** dist/bench (the compiled bench scripts the runner starts as child processes). */
export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = resolve(BENCH_DIR, '..', '..');
/** Where results go without --out; gitignored: docs/performance.md#figures keeps the summary. */
export const DEFAULT_OUT = join(ROOT, 'bench', 'results');

function setupFor(run: RunContext, spec: ScenarioSpec): (() => Promise<Setup>) | undefined {
  const p = spec.params;
  if (p.kind === 'proxy') return () => setupProxyScenario(run, spec.id, p);
  if (p.kind === 'shard') return () => setupShard(run, p);
  if (p.kind === 'ensemble') return () => setupEnsemble(run, p);
  return undefined;
}

function gitInfo(): { commit: string; dirty: boolean } {
  try {
    const commit = execSync('git rev-parse --short HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain', { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}

function copyProfiles(profDir: string, outDir: string): BenchResults['profiles'] {
  const out: NonNullable<BenchResults['profiles']> = [];
  for (const f of readdirSync(profDir).filter((n) => n.endsWith('.cpuprofile')).sort()) {
    const dest = join(outDir, f);
    copyFileSync(join(profDir, f), dest);
    try {
      out.push({ scenario: f.replace('.cpuprofile', ''), file: dest, summary: formatSummary(summarize(dest, 25)) });
    } catch (err) {
      out.push({ scenario: f, file: dest, summary: `could not summarize: ${errText(err)}` });
    }
  }
  return out;
}

async function measureAll(run: RunContext, selected: Set<string>): Promise<{ scenarios: ScenarioResult[]; floor?: FloorResult & { error?: string }; soak?: SoakResult }> {
  const scenarios: ScenarioResult[] = [];
  for (const spec of SCENARIOS) {
    if (!selected.has(spec.id)) continue;
    const p = spec.params;
    if (p.kind === 'memory' || p.kind === 'alloc') {
      log(`${spec.id}: ${spec.title}`);
      try {
        scenarios.push(p.kind === 'memory' ? await runMemoryScenario(run, spec.id, spec.title, p) : await runAllocScenario(run, spec.id, spec.title, p));
      } catch (err) {
        run.harnessErrors.push(`${spec.id}: ${errText(err)}`);
        log(`${spec.id} failed: ${errText(err)}`);
      }
      continue;
    }
    const setup = setupFor(run, spec);
    if (setup === undefined) continue;
    log(`${spec.id}: ${spec.title}`);
    let s: Setup | undefined;
    try {
      s = await setup();
      scenarios.push(await runScenario(run, spec.id, spec.title, s));
    } catch (err) {
      run.harnessErrors.push(`${spec.id}: ${errText(err)}`);
      log(`${spec.id} failed: ${errText(err)}`);
    } finally {
      await s?.teardown();
    }
  }
  let floor: (FloorResult & { error?: string }) | undefined;
  // S2's CPU target is relative to the floor, so S2 brings it along.
  if (selected.has('S5') || selected.has('S2')) {
    log('S5: JSON floor');
    floor = await runFloor(run);
    if (floor.error !== undefined) run.harnessErrors.push(`S5: ${floor.error}`);
  }
  let soak: SoakResult | undefined;
  if (run.opts.soak) {
    soak = await runSoakPhase(run);
    if (soak.error !== undefined) run.harnessErrors.push(`soak: ${soak.error}`);
  }
  return { scenarios, floor, soak };
}

/** Every threshold of the table with the scenario it belongs to (the soak's: 'soak'). */
export function tableThresholds(): { scenario: string; threshold: ScenarioSpec['thresholds'][number] }[] {
  return [
    ...SCENARIOS.flatMap((s) => s.thresholds.map((threshold) => ({ scenario: s.id, threshold }))),
    ...SOAK_THRESHOLDS.map((threshold) => ({ scenario: 'soak', threshold })),
  ];
}

/** Runs the bench; resolves to the results. Every child process is stopped before it resolves or rejects. */
export async function runBench(opts: BenchOptions): Promise<BenchResults> {
  const t0 = Date.now();
  const loadStart = loadavg();
  const tmp = mkdtempSync(join(tmpdir(), 'magma-bench-'));
  const run: RunContext = {
    opts,
    harnessErrors: [],
    server: {
      tmp,
      benchDir: BENCH_DIR,
      gatewayCli: join(ROOT, 'dist', 'src', 'cli.js'),
      gatewayLogLevel: opts.logLevel,
      cpuProfDir: opts.cpuProf ? join(tmp, 'profiles') : undefined,
      nodeArgs: opts.gatewayNodeArgs,
      extraConfig: opts.gatewayExtra,
      children: new Set<Child>(),
    },
  };
  const stopChildren = async (): Promise<void> => {
    await Promise.all([...run.server.children].map((c) => c.stop(c.name.includes('gateway') ? 15_000 : 2000)));
    if (!opts.keepTmp) rmSync(tmp, { recursive: true, force: true });
  };
  const onSignal = (sig: NodeJS.Signals): void => {
    log(`${sig}: stopping`);
    void stopChildren().then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  const selected = new Set(opts.scenarios);
  log(`scenarios ${[...selected].join(',')}${opts.soak ? ' + soak' : ''}; ${opts.rounds} round(s) x ${opts.durationS} s (+${opts.warmupS} s warm-up); nginx ${opts.nginxPath ?? 'not used'}; scratch ${tmp}`);
  try {
    if (run.server.cpuProfDir !== undefined) mkdirSync(run.server.cpuProfDir, { recursive: true });
    const { scenarios, floor, soak } = await measureAll(run, selected);
    const measured: Measured = {
      scenario: (id: string) => scenarios.find((s) => s.id === id),
      floor: floor?.error === undefined ? floor : undefined,
      soak,
      nginx: opts.nginxPath !== undefined,
      soakS: opts.soakS,
    };
    const targets = evaluate([...SCENARIOS.flatMap((s) => s.thresholds), ...SOAK_THRESHOLDS], measured);
    if (opts.compare !== undefined) {
      measured.comparison = compareResults(opts.compare.before, { scenarios, targets, floor }, opts.compare.file, tableThresholds(), opts.compare.tolerancePct);
      targets.push(...evaluate(COMPARE_THRESHOLDS, measured));
    }
    const git = gitInfo();
    mkdirSync(opts.outDir, { recursive: true });
    return {
      meta: {
        date: new Date().toISOString(),
        node: process.version,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        memGb: totalmem() / 1024 ** 3,
        commit: git.commit,
        dirty: git.dirty,
        args: opts.argv,
        mode: opts.mode,
        durationS: opts.durationS,
        warmupS: opts.warmupS,
        rounds: opts.rounds,
        gatewayLogLevel: opts.logLevel,
        gatewayExtra: opts.gatewayExtra,
        gatewayNodeArgs: opts.gatewayNodeArgs,
        nginx: opts.nginxPath ?? null,
        loadAvgStart: loadStart,
        loadAvgEnd: loadavg(),
        wallS: (Date.now() - t0) / 1000,
      },
      scenarios,
      floor,
      soak,
      targets,
      harnessErrors: run.harnessErrors,
      profiles: run.server.cpuProfDir !== undefined ? copyProfiles(run.server.cpuProfDir, opts.outDir) : undefined,
      comparison: measured.comparison,
    };
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    await stopChildren();
  }
}

/** Writes latest.json and latest.md into dir; returns the markdown. */
export function writeResults(results: BenchResults, dir: string): string {
  mkdirSync(dir, { recursive: true });
  // NaN and Infinity are not JSON: a figure that could not be computed is written as null.
  writeFileSync(join(dir, 'latest.json'), JSON.stringify(results, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
  const md = renderMarkdown(results);
  writeFileSync(join(dir, 'latest.md'), md);
  return md;
}
