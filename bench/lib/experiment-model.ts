/**
 * A seeded model of a BENCH experiment for the report's statistics (src/stats), used by the simulation tests
 * (test/stats/simulation.test.ts) and by bench/experiment-simulation.ts. Each trajectory has its own success
 * chance p_i (Beta(2, 2), the intra-trajectory correlation 0.2, or Beta(5, 2) for a better arm), 3 to 6 env
 * steps, and 2 robot lines per step, each a success with chance p_i. BENCH runs `slots` trajectories at once;
 * each new one is assigned to an arm by a fair coin, and the analysis may look after every step, with the
 * trajectories in progress counted as they stand (the gateway never learns that an episode ended).
 *
 * Observation: by default every step's lines are seen at that step. With observation 'next-step' the model sees
 * them as the gateway does: a step's outcome arrives with the trajectory's next env input, so the last step's
 * is never seen (BENCH sends nothing after an episode ends) and a trajectory has no line at its first look.
 * p_i does not depend on the length, so under identical arms that censoring changes the amount of data, not the
 * validity being measured; both are simulated to show it.
 */
import { EMPTY_SUMS, type RatioSums } from '../../src/stats/ratio.js';

export type Rng = () => number;
/** Draws one trajectory's success chance. */
export type ChanceDraw = (rng: Rng) => number;

/** The k-th smallest of m uniforms, which is Beta(k, m + 1 - k): no sampling library needed. */
function orderStatistic(rng: Rng, k: number, m: number): number {
  const u = Array.from({ length: m }, rng).sort((a, b) => a - b);
  return u[k - 1]!; // 1 <= k <= m by the callers below
}

/** Beta(2, 2): the median of 3 uniforms; mean 1/2, intra-trajectory correlation 1/(2+2+1) = 0.2. */
export const beta22: ChanceDraw = (rng) => orderStatistic(rng, 2, 3);
/** Beta(5, 2): the 5th smallest of 6 uniforms; mean 5/7. */
export const beta52: ChanceDraw = (rng) => orderStatistic(rng, 5, 6);
/** The true difference of line-weighted rates, Beta(5, 2) against Beta(2, 2) (p_i is independent of the length). */
export const TRUE_DIFFERENCE_52 = 5 / 7 - 1 / 2;

export interface ExperimentModel {
  /** Trajectories in the whole experiment (both arms). */
  trajectories: number;
  /** Trajectories BENCH runs concurrently. */
  slots: number;
  /** One chance draw per arm, control first. */
  arms: ChanceDraw[];
  /** Assignment weights, one per arm (default equal). */
  weights?: number[];
  minSteps?: number;
  maxSteps?: number;
  linesPerStep?: number;
  /** When a step's lines are seen: at that step (default), or at the next one as the gateway sees them. */
  observation?: 'at-step' | 'next-step';
}

/** What a look sees: the per-arm ratio sums over started trajectories, and the per-arm line totals. */
export interface Look {
  sums: RatioSums[];
  /** Robot lines per arm as the old report saw them (successes, lines). */
  lines: Array<{ successes: number; lines: number }>;
  /** Trajectories started per arm (the SRM counts). */
  assigned: number[];
  /** true at the last look, when every trajectory has finished. */
  final: boolean;
}

interface Running {
  arm: number;
  p: number;
  steps: number;
  done: number;
  s: number;
  n: number;
  /** Successes of the last step, not seen yet ('next-step' observation); -1 when there is none. */
  pending: number;
}

function pickArm(rng: Rng, cumulative: number[]): number {
  const u = rng() * cumulative[cumulative.length - 1]!; // cumulative is non-empty (one entry per arm)
  const i = cumulative.findIndex((c) => u < c);
  return i < 0 ? cumulative.length - 1 : i;
}

/**
 * Runs one experiment and calls `look` after every env step; the last step's look has final = true. The Look
 * object is updated in place between calls: read it, do not keep it.
 */
export function simulateExperiment(rng: Rng, model: ExperimentModel, look: (l: Look) => void): void {
  const minSteps = model.minSteps ?? 3;
  const maxSteps = model.maxSteps ?? 6;
  const perStep = model.linesPerStep ?? 2;
  const lagged = model.observation === 'next-step';
  const weights = model.weights ?? model.arms.map(() => 1);
  const cumulative: number[] = [];
  weights.reduce((acc, w) => (cumulative.push(acc + w), acc + w), 0);
  const state: Look = {
    sums: model.arms.map(() => ({ ...EMPTY_SUMS })),
    lines: model.arms.map(() => ({ successes: 0, lines: 0 })),
    assigned: model.arms.map(() => 0),
    final: false,
  };
  const slots: Array<Running | undefined> = new Array<Running | undefined>(model.slots).fill(undefined);
  let started = 0;
  let finished = 0;
  while (finished < model.trajectories) {
    for (let i = 0; i < slots.length; i++) {
      let t = slots[i];
      if (t === undefined) {
        if (started >= model.trajectories) continue;
        const arm = pickArm(rng, cumulative);
        const draw = model.arms[arm]!; // arm < arms.length
        const chance = draw(rng);
        const steps = minSteps + Math.floor(rng() * (maxSteps - minSteps + 1));
        t = { arm, p: chance, steps, done: 0, s: 0, n: 0, pending: -1 };
        slots[i] = t;
        started++;
        state.assigned[arm]!++;
        state.sums[arm]!.units++; // a trajectory counts from its first step, in progress or not
      }
      let drawn = 0;
      for (let j = 0; j < perStep; j++) if (rng() < t.p) drawn++;
      // What this look learns: this step's lines, or (lagged) the previous step's, if any.
      const ds = lagged ? t.pending : drawn;
      const lines = ds < 0 ? 0 : perStep;
      if (lagged) t.pending = drawn;
      if (lines > 0) observe(state, t, ds, lines);
      t.done++;
      if (t.done >= t.steps) {
        slots[i] = undefined;
        finished++;
      }
      state.final = finished >= model.trajectories;
      look(state);
    }
  }
}

/** Adds `ds` successes out of `lines` to trajectory t and to its arm's sums. */
function observe(state: Look, t: Running, ds: number, lines: number): void {
  // The counters' increments from the trajectory's previous (s, n), as the recorder keeps them.
  const sums = state.sums[t.arm]!; // t.arm < arms.length
  const s1 = t.s + ds;
  const n1 = t.n + lines;
  sums.s += ds;
  sums.n += lines;
  sums.ss += s1 * s1 - t.s * t.s;
  sums.nn += n1 * n1 - t.n * t.n;
  sums.sn += s1 * n1 - t.s * t.n;
  t.s = s1;
  t.n = n1;
  const l = state.lines[t.arm]!; // t.arm < arms.length
  l.successes += ds;
  l.lines += lines;
}
