/**
 * Error rates of the report's methods on the seeded experiment model (bench/lib/experiment-model.ts): how often
 * each interval excludes 0 at the end and at any look (read after every env step), and how often it covers the
 * true difference at the end. The methods:
 *   old        robot lines as independent trials: the pooled two-proportion z-test over lines (what the report
 *              did before; its p < α is the "excludes 0"), Newcombe's interval over lines for the coverage
 *   fixed      the delta method with the trajectory as unit (src/stats fixedRatio)
 *   sequential the normal-mixture always-valid boundary on the same z (src/stats sequentialRatio)
 * and the SRM checks' false alarms under correct assignment.
 */
import { fixedRatio, sequentialRatio } from '../../src/stats/compare.js';
import { twoSidedP } from '../../src/stats/normal.js';
import { newcombe } from '../../src/stats/proportions.js';
import { chiSquareGoodnessOfFit, sequentialSrm, SRM_ALPHA } from '../../src/stats/srm.js';
import { simulateExperiment, type ExperimentModel, type Look } from './experiment-model.js';
import { seededRandom } from './seeded-random.js';

export type MethodName = 'old' | 'fixed' | 'sequential';
export const METHODS: readonly MethodName[] = ['old', 'fixed', 'sequential'];

export interface Tally {
  runs: number;
  /** Runs whose interval excluded 0 at the final read. */
  excludedAtEnd: number;
  /** Runs whose interval excluded 0 at some read (after any env step). */
  excludedAtAnyLook: number;
  /** Runs whose final interval covered the true difference. */
  coveredAtEnd: number;
  /** Runs whose interval covered the true difference at every read that gave one (time-uniform coverage). */
  coveredAtEveryLook: number;
}

export interface EvaluationOptions {
  seed: number;
  runs: number;
  model: ExperimentModel;
  /** The true difference (treatment - control) for the coverage. */
  truth: number;
  alpha?: number;
  plannedTrajectories?: number;
  burnIn?: number;
  /** Look only at the end (faster, when only end-of-experiment figures are wanted). */
  finalOnly?: boolean;
  /** The methods to tally (default all); the others stay at zero runs. */
  methods?: readonly MethodName[];
}

/** The pooled two-proportion z p-value of lines b against lines a; 1 when every line had the same result. */
export function pooledLinesP(xa: number, na: number, xb: number, nb: number): number {
  if (!(na > 0 && nb > 0)) return 1;
  const pooled = (xa + xb) / (na + nb);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb));
  return se > 0 ? twoSidedP((xb / nb - xa / na) / se) : 1;
}

interface Verdict {
  excludes: boolean;
  covers: boolean;
  /** Whether the method gave an interval at this read at all. */
  shown: boolean;
}

function judge(method: MethodName, look: Look, o: Required<Omit<EvaluationOptions, 'finalOnly' | 'model' | 'seed' | 'runs' | 'methods'>>): Verdict {
  const [a, b] = [look.sums[0]!, look.sums[1]!]; // two-arm models: control 0, treatment 1
  if (method === 'old') {
    const [la, lb] = [look.lines[0]!, look.lines[1]!];
    const p = pooledLinesP(la.successes, la.lines, lb.successes, lb.lines);
    const ci = newcombe(la.successes, la.lines, lb.successes, lb.lines, o.alpha);
    return { excludes: p < o.alpha, covers: ci !== undefined && ci[0] <= o.truth && o.truth <= ci[1], shown: ci !== undefined };
  }
  const r =
    method === 'fixed'
      ? fixedRatio(a, b, o.alpha)
      : sequentialRatio(a, b, { alpha: o.alpha, plannedTrajectories: o.plannedTrajectories, burnIn: o.burnIn });
  if ('reason' in r) return { excludes: false, covers: false, shown: false };
  return { excludes: r.ci95[0] > 0 || r.ci95[1] < 0, covers: r.ci95[0] <= o.truth && o.truth <= r.ci95[1], shown: true };
}

/** Runs `runs` seeded experiments and tallies every method on each. Deterministic for a seed. */
export function evaluateMethods(options: EvaluationOptions): Record<MethodName, Tally> {
  const o = {
    alpha: options.alpha ?? 0.05,
    plannedTrajectories: options.plannedTrajectories ?? 200,
    burnIn: options.burnIn ?? 20,
    truth: options.truth,
  };
  const tallies = Object.fromEntries(
    METHODS.map((m) => [m, { runs: 0, excludedAtEnd: 0, excludedAtAnyLook: 0, coveredAtEnd: 0, coveredAtEveryLook: 0 }]),
  ) as Record<MethodName, Tally>; // filled for every MethodName just above
  const methods = options.methods ?? METHODS;
  const rng = seededRandom(options.seed);
  for (let run = 0; run < options.runs; run++) {
    const ever = new Set<MethodName>();
    const missed = new Set<MethodName>();
    simulateExperiment(rng, options.model, (look) => {
      if (options.finalOnly === true && !look.final) return;
      for (const m of methods) {
        const v = judge(m, look, o);
        if (v.excludes) ever.add(m);
        if (v.shown && !v.covers) missed.add(m);
        if (look.final) {
          const t = tallies[m];
          t.runs++;
          if (v.excludes) t.excludedAtEnd++;
          if (v.covers) t.coveredAtEnd++;
        }
      }
    });
    for (const m of ever) tallies[m].excludedAtAnyLook++;
    for (const m of methods) if (!missed.has(m)) tallies[m].coveredAtEveryLook++;
  }
  return tallies;
}

export interface SrmTally {
  runs: number;
  /** Runs the chi-square flagged (p < SRM_ALPHA) when read once, at the end. */
  chiSquareAtEnd: number;
  /** Runs the chi-square flagged at some read (after every assignment). */
  chiSquareAtAnyLook: number;
  /** Runs the Dirichlet-multinomial test flagged at some read (after every assignment). */
  sequentialAtAnyLook: number;
}

/**
 * False alarms of the SRM checks under correct assignment: `trajectories` units per run, each assigned by the
 * weights, both tests read after every assignment. Deterministic for a seed.
 */
export function evaluateSrm(options: { seed: number; runs: number; weights: number[]; trajectories: number }): SrmTally {
  const { weights } = options;
  const total = weights.reduce((a, b) => a + b, 0);
  const rng = seededRandom(options.seed);
  const tally: SrmTally = { runs: options.runs, chiSquareAtEnd: 0, chiSquareAtAnyLook: 0, sequentialAtAnyLook: 0 };
  for (let run = 0; run < options.runs; run++) {
    const observed = weights.map(() => 0);
    let chi = false;
    let seq = false;
    for (let t = 0; t < options.trajectories; t++) {
      let u = rng() * total;
      let arm = 0;
      while (arm < weights.length - 1 && u >= weights[arm]!) u -= weights[arm++]!; // arm < weights.length
      observed[arm]!++;
      if (!chi && chiSquareGoodnessOfFit(observed, weights).p_value < SRM_ALPHA) chi = true;
      if (!seq && sequentialSrm(observed, weights).p_value < SRM_ALPHA) seq = true;
    }
    if (chiSquareGoodnessOfFit(observed, weights).p_value < SRM_ALPHA) tally.chiSquareAtEnd++;
    if (chi) tally.chiSquareAtAnyLook++;
    if (seq) tally.sequentialAtAnyLook++;
  }
  return tally;
}
