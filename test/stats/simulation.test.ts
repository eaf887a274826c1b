/**
 * The report's methods on a seeded simulation of BENCH experiments (bench/lib/experiment-model.ts): Beta(2, 2)
 * trajectory success chances (intra-trajectory correlation 0.2), 3-6 env steps, 2 robot lines per step, 16 slots,
 * a fair coin per trajectory, 2,000 runs. The bands allow for Monte Carlo error: the binomial SE of a 5% rate
 * over 2,000 runs is 0.5%. Every figure is deterministic for its seed (mulberry32); a failure is a change in
 * the method, not bad luck. The same figures come from `node dist/bench/experiment-simulation.js`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateMethods, evaluateSrm } from '../../bench/lib/experiment-evaluation.js';
import { beta22, beta52, simulateExperiment, TRUE_DIFFERENCE_52 } from '../../bench/lib/experiment-model.js';
import { seededRandom } from '../../bench/lib/seeded-random.js';
import { fixedRatio, perComparisonAlpha, sequentialRatio } from '../../src/stats/compare.js';
import type { RatioSums } from '../../src/stats/ratio.js';
import { chiSquareGoodnessOfFit, sequentialSrm, SRM_ALPHA } from '../../src/stats/srm.js';

const RUNS = 2000;
const SHORT = { trajectories: 60, slots: 16 }; // about 30 trajectories per arm

function rate(n: number, of: number): number {
  return n / of;
}

test('identical arms: the fixed interval excludes 0 in 4-7% of runs, the always-valid one read after every step in at most 6.5%, the old pooled test in at least 15%', () => {
  const r = evaluateMethods({ seed: 1, runs: RUNS, model: { ...SHORT, arms: [beta22, beta22] }, truth: 0 });
  const fixed = rate(r.fixed.excludedAtEnd, r.fixed.runs);
  assert.ok(fixed >= 0.04 && fixed <= 0.07, `fixed FP ${fixed}`);
  const seq = rate(r.sequential.excludedAtAnyLook, r.sequential.runs);
  assert.ok(seq <= 0.065, `sequential FP at any look ${seq}`);
  // The "before" figure: robot lines as independent trials, read once at the end.
  const old = rate(r.old.excludedAtEnd, r.old.runs);
  assert.ok(old >= 0.15, `old FP ${old}`);
  // Reading the fixed interval after every step is what the always-valid one is for.
  assert.ok(r.fixed.excludedAtAnyLook > 4 * r.fixed.excludedAtEnd, `fixed read continuously ${r.fixed.excludedAtAnyLook}`);
  assert.equal(r.fixed.runs, RUNS);
});

test('the same with lines seen as the gateway sees them (a step at the next step, the last never): fixed FP 4-7%, always-valid at most 6.5%', () => {
  const r = evaluateMethods({
    seed: 1,
    runs: RUNS,
    model: { ...SHORT, arms: [beta22, beta22], observation: 'next-step' },
    truth: 0,
    methods: ['fixed', 'sequential'],
  });
  const fixed = rate(r.fixed.excludedAtEnd, r.fixed.runs);
  assert.ok(fixed >= 0.04 && fixed <= 0.07, `fixed FP ${fixed}`);
  const seq = rate(r.sequential.excludedAtAnyLook, r.sequential.runs);
  assert.ok(seq <= 0.065, `sequential FP at any look ${seq}`);
});

test('a BENCH-like stream (480 trajectories, 16 slots) watched after every step: the always-valid interval excludes 0 in at most 6.5% of runs', () => {
  const r = evaluateMethods({
    seed: 2,
    runs: 1000,
    model: { trajectories: 480, slots: 16, arms: [beta22, beta22] },
    truth: 0,
    methods: ['sequential'],
  });
  const seq = rate(r.sequential.excludedAtAnyLook, r.sequential.runs);
  assert.ok(seq <= 0.065, `sequential FP at any look ${seq}`);
  assert.ok(r.sequential.excludedAtAnyLook > 0, 'the boundary is not so wide that it never crosses');
});

test('arm b from Beta(5, 2): the fixed interval excludes 0 in at least 85% of runs and covers 5/7 - 1/2 in 93-97%', () => {
  const r = evaluateMethods({
    seed: 3,
    runs: RUNS,
    model: { ...SHORT, arms: [beta22, beta52] },
    truth: TRUE_DIFFERENCE_52,
    finalOnly: true,
    methods: ['fixed', 'old'],
  });
  const power = rate(r.fixed.excludedAtEnd, r.fixed.runs);
  assert.ok(power >= 0.85, `fixed power ${power}`);
  const cover = rate(r.fixed.coveredAtEnd, r.fixed.runs);
  assert.ok(cover >= 0.93 && cover <= 0.97, `fixed coverage ${cover}`);
  // Lines as independent trials make the old interval far too narrow.
  assert.ok(rate(r.old.coveredAtEnd, r.old.runs) < 0.88, `old coverage ${r.old.coveredAtEnd}`);
});

test('arm b from Beta(5, 2), read after every step: the always-valid interval covers 5/7 - 1/2 at every read in at least 95% of runs', () => {
  const r = evaluateMethods({
    seed: 6,
    runs: RUNS,
    model: { ...SHORT, arms: [beta22, beta52], observation: 'next-step' },
    truth: TRUE_DIFFERENCE_52,
    methods: ['sequential', 'fixed'],
  });
  const all = rate(r.sequential.coveredAtEveryLook, r.sequential.runs);
  assert.ok(all >= 0.95, `always-valid time-uniform coverage ${all}`);
  // The fixed interval, read at every step, misses the truth at some read far more often.
  assert.ok(rate(r.fixed.coveredAtEveryLook, r.fixed.runs) < 0.8, `fixed time-uniform coverage ${r.fixed.coveredAtEveryLook}`);
});

test('SRM: under correct assignment the chi-square (read once) and the sequential test (read at every trajectory) flag at most 0.3% of runs; 30 vs 0 is flagged', () => {
  const designs: Array<{ weights: number[]; trajectories: number }> = [
    { weights: [1, 1], trajectories: 200 },
    { weights: [2, 1, 1], trajectories: 300 },
  ];
  for (const [i, { weights, trajectories }] of designs.entries()) {
    const r = evaluateSrm({ seed: 4 + i, runs: 3000, weights, trajectories });
    assert.ok(r.chiSquareAtEnd / r.runs <= 0.003, `chi-square false alarms ${r.chiSquareAtEnd}/${r.runs} for ${weights}`);
    assert.ok(r.sequentialAtAnyLook / r.runs <= 0.003, `sequential false alarms ${r.sequentialAtAnyLook}/${r.runs} for ${weights}`);
    // Why the sequential test exists: the chi-square watched continuously false-alarms several times as often.
    assert.ok(r.chiSquareAtAnyLook >= 3 * Math.max(1, r.chiSquareAtEnd), `chi-square watched ${r.chiSquareAtAnyLook}`);
  }
  assert.ok(chiSquareGoodnessOfFit([30, 0], [50, 50]).p_value < SRM_ALPHA);
  assert.ok(sequentialSrm([30, 0], [50, 50]).p_value < SRM_ALPHA);
  // And a mild imbalance is not.
  assert.ok(chiSquareGoodnessOfFit([16, 14], [50, 50]).p_value > SRM_ALPHA);
});

test('more than two arms: α/(k-1) per comparison, wider intervals, and a family-wise error of at most 5% with three identical arms', () => {
  assert.equal(perComparisonAlpha(0.05, 1), 0.05);
  assert.equal(perComparisonAlpha(0.05, 2), 0.05);
  assert.equal(perComparisonAlpha(0.05, 3), 0.025);
  assert.equal(perComparisonAlpha(0.05, 4), 0.05 / 3);
  // The same sums at α, α/2, α/3: the fixed and the sequential intervals widen; the fixed by z ratios.
  const a: RatioSums = { units: 30, s: 80, n: 140, ss: 280, nn: 700, sn: 420 };
  const b: RatioSums = { units: 30, s: 90, n: 135, ss: 330, nn: 660, sn: 455 };
  const widths = [2, 3, 4].map((k) => {
    const f = fixedRatio(a, b, perComparisonAlpha(0.05, k));
    const s = sequentialRatio(a, b, { alpha: perComparisonAlpha(0.05, k), plannedTrajectories: 200 });
    assert.ok(!('reason' in f) && !('reason' in s));
    return { fixed: f.ci95[1] - f.ci95[0], seq: s.ci95[1] - s.ci95[0], rho2: s.rho2 };
  });
  // python3 -c "from scipy import stats; print(stats.norm.ppf(1-0.025/2)/stats.norm.ppf(1-0.05/2), stats.norm.ppf(1-0.05/6)/stats.norm.ppf(1-0.05/2))"
  assert.ok(Math.abs(widths[1]!.fixed / widths[0]!.fixed - 1.1435938340116685) < 1e-9);
  assert.ok(Math.abs(widths[2]!.fixed / widths[0]!.fixed - 1.2214407094731932) < 1e-9);
  assert.ok(widths[0]!.seq < widths[1]!.seq && widths[1]!.seq < widths[2]!.seq);
  assert.ok(widths[0]!.rho2 < widths[1]!.rho2, 'ρ² is computed with the same α');
  // Three identical arms, each treatment against the control at α/2: any false difference in at most 5% + MC error.
  const rng = seededRandom(5);
  let familyWise = 0;
  const runs = RUNS;
  for (let run = 0; run < runs; run++) {
    let sums: RatioSums[] = [];
    simulateExperiment(rng, { trajectories: 90, slots: 16, arms: [beta22, beta22, beta22] }, (look) => {
      if (look.final) sums = look.sums.map((x) => ({ ...x }));
    });
    const alpha = perComparisonAlpha(0.05, 3);
    const any = [1, 2].some((j) => {
      const f = fixedRatio(sums[0]!, sums[j]!, alpha); // three arms
      return !('reason' in f) && (f.ci95[0] > 0 || f.ci95[1] < 0);
    });
    if (any) familyWise++;
  }
  assert.ok(familyWise / runs <= 0.065 && familyWise / runs >= 0.02, `family-wise ${familyWise}/${runs}`);
});
