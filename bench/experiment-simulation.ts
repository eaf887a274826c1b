/**
 * The experiment report's methods on a seeded simulation of BENCH (bench/lib/experiment-model.ts): each
 * trajectory's success chance from Beta(2, 2) (intra-trajectory correlation 0.2), 3-6 env steps, 2 robot lines per
 * step, 16 slots (--slots) running at once, a fair coin per trajectory. Prints, per design, how often each method's 95%
 * interval excludes 0 with identical arms (at the end, and at any read after an env step), how often it does with
 * arm b from Beta(5, 2) (power), and how often it covers the true difference 5/7 - 1/2 at the end.
 *
 *   node dist/bench/experiment-simulation.js [--runs 2000] [--seed 1] [--trajectories 60] [--long 480]
 *     [--slots 16] [--burn-in 20] [--planned 200] [--srm-runs 10000]
 *
 * --trajectories sets the short design (about 30 per arm, read once at the end as a fixed design should be);
 * --long a BENCH-like stream watched throughout (0 skips it). Last, the SRM checks' false alarms under correct
 * assignment, read once and after every assignment.
 */
import { parseArgs } from 'node:util';
import { evaluateMethods, evaluateSrm, METHODS, type MethodName, type Tally } from './lib/experiment-evaluation.js';
import { beta22, beta52, TRUE_DIFFERENCE_52, type ExperimentModel } from './lib/experiment-model.js';

interface Settings {
  runs: number;
  slots: number;
  burnIn: number;
  planned: number;
}

function labels(s: Settings): Record<MethodName, string> {
  return {
    old: 'old: pooled z over robot lines',
    fixed: 'fixed: delta method, trajectory as unit',
    sequential: `always-valid: normal mixture, K*=${s.planned}, burn-in ${s.burnIn}`,
  };
}

function pct(n: number, of: number): string {
  return `${((100 * n) / of).toFixed(1)}%`.padStart(7);
}

function table(title: string, s: Settings, null_: Record<MethodName, Tally>, alt: Record<MethodName, Tally>): string[] {
  const label = labels(s);
  const out = [
    title,
    `  ${'method'.padEnd(50)} ${'FP end'.padStart(7)} ${'FP any'.padStart(7)} ${'pow end'.padStart(7)} ${'pow any'.padStart(7)} ${'cover'.padStart(7)} ${'cov all'.padStart(7)}`,
  ];
  for (const m of METHODS) {
    const h = null_[m];
    const a = alt[m];
    out.push(
      `  ${label[m].padEnd(50)} ${pct(h.excludedAtEnd, h.runs)} ${pct(h.excludedAtAnyLook, h.runs)} ${pct(a.excludedAtEnd, a.runs)} ${pct(a.excludedAtAnyLook, a.runs)} ${pct(a.coveredAtEnd, a.runs)} ${pct(a.coveredAtEveryLook, a.runs)}`,
    );
  }
  return out;
}

function design(trajectories: number, s: Settings, seed: number, observation: 'at-step' | 'next-step' = 'at-step'): string[] {
  const base: Omit<ExperimentModel, 'arms'> = { trajectories, slots: s.slots, observation };
  const common = { runs: s.runs, burnIn: s.burnIn, plannedTrajectories: s.planned };
  const null_ = evaluateMethods({ ...common, seed, model: { ...base, arms: [beta22, beta22] }, truth: 0 });
  const alt = evaluateMethods({ ...common, seed: seed + 1, model: { ...base, arms: [beta22, beta52] }, truth: TRUE_DIFFERENCE_52 });
  const seen = observation === 'next-step' ? ", lines seen as the gateway sees them (at the next step; the last step's never)" : '';
  return table(`${trajectories} trajectories (about ${trajectories / 2} per arm), ${s.slots} slots${seen}, ${s.runs} runs, seed ${seed}`, s, null_, alt);
}

function srmTable(runs: number, seed: number): string[] {
  const out = [
    `SRM false alarms at p < 0.001 under correct 50/50 assignment, ${runs} runs, seed ${seed}`,
    `  ${'trajectories'.padEnd(14)} ${'chi2 end'.padStart(9)} ${'chi2 any'.padStart(9)} ${'seq any'.padStart(9)}`,
  ];
  for (const [i, trajectories] of [200, 1000].entries()) {
    const r = evaluateSrm({ seed: seed + i, runs, weights: [1, 1], trajectories });
    const f = (n: number): string => `${((100 * n) / r.runs).toFixed(2)}%`.padStart(9);
    out.push(`  ${String(trajectories).padEnd(14)} ${f(r.chiSquareAtEnd)} ${f(r.chiSquareAtAnyLook)} ${f(r.sequentialAtAnyLook)}`);
  }
  return out;
}

function main(): number {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '2000' },
      seed: { type: 'string', default: '1' },
      trajectories: { type: 'string', default: '60' },
      long: { type: 'string', default: '480' },
      slots: { type: 'string', default: '16' },
      'burn-in': { type: 'string', default: '20' },
      planned: { type: 'string', default: '200' },
      // The SRM checks are cheap and their rates small (0.1%): more runs for the same Monte Carlo error.
      'srm-runs': { type: 'string', default: '10000' },
    },
  });
  const runs = Number(values.runs);
  const seed = Number(values.seed);
  const short = Number(values.trajectories);
  const long = Number(values.long);
  const s: Settings = { runs, slots: Number(values.slots), burnIn: Number(values['burn-in']), planned: Number(values.planned) };
  const srmRuns = Number(values['srm-runs']);
  const numbers = [runs, seed, short, long, s.slots, s.burnIn, s.planned, srmRuns];
  const bad = runs < 1 || short < 4 || long < 0 || s.slots < 1 || s.burnIn < 2 || s.planned < 1 || srmRuns < 0;
  if (!numbers.every(Number.isInteger) || bad) {
    process.stderr.write(
      'usage: node dist/bench/experiment-simulation.js [--runs N>=1] [--seed N] [--trajectories N>=4] [--long N>=0] [--slots N>=1] [--burn-in N>=2] [--planned N>=1] [--srm-runs N>=0]\n',
    );
    return 2;
  }
  const lines = [
    'FP = 95% interval excludes 0 with identical arms (Beta(2,2)); pow = the same with arm b from Beta(5,2);',
    'end = read once when every trajectory has finished; any = read after every env step; cover = the final',
    'interval covers 5/7 - 1/2 (arm b from Beta(5,2)); cov all = it covered it at every read that showed one.',
    `Binomial SE of a 5% rate over ${runs} runs: ${(100 * Math.sqrt(0.05 * 0.95 / runs)).toFixed(1)}%.`,
    '',
    ...design(short, s, seed),
    '',
    ...design(short, s, seed, 'next-step'),
  ];
  if (long > 0) lines.push('', ...design(long, s, seed + 100));
  if (srmRuns > 0) lines.push('', ...srmTable(srmRuns, seed + 200));
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}

process.exitCode = main();
