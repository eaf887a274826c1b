/**
 * src/stats against reference values from scipy/numpy (scipy 1.17). Each value was computed once with the python
 * command beside it; the multi-line computations (Wilson, Newcombe, the delta method, the mixture boundary, the
 * post-stratified estimate, the Dirichlet-multinomial Bayes factor) are in test/stats/reference-values.py,
 * written from the formulas with numpy's var/cov, independently of the TypeScript, and printed by
 * `python3 test/stats/reference-values.py`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lnGamma } from '../../src/stats/gamma.js';
import { erfc, normalCdf, normalQuantile, twoSidedP } from '../../src/stats/normal.js';
import { ratioEstimate } from '../../src/stats/ratio.js';
import { addSums } from './helpers.js';
import {
  fixedBinary,
  fixedRatio,
  meanSums,
  mixtureBoundary,
  sequentialBinary,
  sequentialRatio,
  type FixedResult,
  type SequentialResult,
} from '../../src/stats/compare.js';
import { fisherExactTwoSided, newcombe, wilson } from '../../src/stats/proportions.js';
import { chiSquareGoodnessOfFit, chiSquareSurvival, coverageHomogeneity, sequentialSrm } from '../../src/stats/srm.js';
import { postStratified } from '../../src/stats/stratified.js';
import { close, ok, sumsOf } from './helpers.js';

test('erfc to 1e-12 relative, both tails (scipy.special.erfc)', () => {
  // python3 -c "from scipy import special; [print(x, repr(float(special.erfc(x)))) for x in [0.1,0.5,1,2,3,5,8,10,20,-1,-3]]"
  const ref: Array<[number, number]> = [
    [0.1, 0.8875370839817152], [0.5, 0.4795001221869535], [1, 0.15729920705028516], [2, 0.004677734981047266],
    [3, 2.2090496998585445e-5], [5, 1.5374597944280347e-12], [8, 1.1224297172982928e-29],
    [10, 2.0884875837625446e-45], [20, 5.395865611607901e-176], [-1, 1.8427007929497148], [-3, 1.9999779095030015],
  ];
  for (const [x, v] of ref) close(erfc(x), v, 1e-12, `erfc(${x})`);
  assert.equal(erfc(0), 1);
  assert.equal(erfc(Infinity), 0);
  assert.equal(erfc(-Infinity), 2);
  assert.ok(Number.isNaN(erfc(Number.NaN)));
});

test('normal CDF, quantile and two-sided p (scipy.stats.norm)', () => {
  // python3 -c "from scipy import stats; [print(x, repr(float(stats.norm.cdf(x)))) for x in [-10,-5,-1.96,0,1,3]]"
  const cdf: Array<[number, number]> = [
    [-10, 7.61985302416047e-24], [-5, 2.866515718791933e-7], [-1.96, 0.024997895148220435], [0, 0.5],
    [1, 0.8413447460685429], [3, 0.9986501019683699],
  ];
  for (const [x, v] of cdf) close(normalCdf(x), v, 1e-12, `Φ(${x})`);
  // python3 -c "from scipy import stats; [print(p, repr(float(stats.norm.ppf(p)))) for p in [1e-10,0.001,0.025,0.3,0.5,0.975,0.999999]]"
  const ppf: Array<[number, number]> = [
    [1e-10, -6.361340902404056], [0.001, -3.090232306167813], [0.025, -1.9599639845400545],
    [0.3, -0.5244005127080409], [0.975, 1.959963984540054], [0.999999, 4.753424308817087],
  ];
  for (const [p, v] of ppf) close(normalQuantile(p), v, 1e-12, `Φ⁻¹(${p})`);
  close(normalQuantile(0.5), 0, 0, 'Φ⁻¹(0.5)', 1e-15);
  assert.equal(normalQuantile(0), -Infinity);
  assert.equal(normalQuantile(1), Infinity);
  assert.ok(Number.isNaN(normalQuantile(1.5)));
  // python3 -c "from scipy import stats; [print(z, repr(float(2*stats.norm.sf(z)))) for z in [1.959963984540054, 5.6, 0.3]]"
  close(twoSidedP(1.959963984540054), 0.05, 1e-12, 'p(1.96)');
  close(twoSidedP(-5.6), 2.1435180516621774e-8, 1e-12, 'p(-5.6)');
  close(twoSidedP(0.3), 0.7641771556220948, 1e-12, 'p(0.3)');
  assert.equal(twoSidedP(0), 1);
});

test('lnGamma (scipy.special.gammaln)', () => {
  // python3 -c "from scipy import special; [print(x, repr(float(special.gammaln(x)))) for x in [0.1,0.5,1.5,3,10,100.5,1e6]]"
  const ref: Array<[number, number]> = [
    [0.1, 2.252712651734206], [0.5, 0.5723649429247], [1.5, -0.12078223763524526], [3, 0.6931471805599453],
    [10, 12.801827480081469], [100.5, 361.43554046777757], [1e6, 12815504.569147611],
  ];
  for (const [x, v] of ref) close(lnGamma(x), v, 1e-13, `lnΓ(${x})`);
  assert.equal(lnGamma(1), 0);
  assert.ok(Number.isNaN(lnGamma(0)));
});

test('chi-square survival, to p ~ 1e-41 (scipy.stats.chi2.sf)', () => {
  // python3 -c "from scipy import stats; [print(x, df, repr(float(stats.chi2.sf(x,df)))) for x,df in [(3.84,1),(30,1),(50,1),(10,3),(0.5,2),(200,5),(1e-3,1),(40.5,1),(7.3,7),(1500,1200)]]"
  const ref: Array<[number, number, number]> = [
    [3.84, 1, 0.05004352124870519], [30, 1, 4.3204630578274955e-8], [50, 1, 1.537459794428033e-12],
    [10, 3, 0.01856613546304325], [0.5, 2, 0.7788007830714049], [200, 5, 2.8406228986415534e-41],
    [1e-3, 1, 0.9747728793699604], [40.5, 1, 1.9661604415428878e-10], [7.3, 7, 0.3983264579760526],
    [1500, 1200, 6.341071285724709e-9],
  ];
  for (const [x, df, v] of ref) close(chiSquareSurvival(x, df), v, 1e-10, `Q(${x}; ${df})`);
  assert.equal(chiSquareSurvival(0, 3), 1);
  assert.throws(() => chiSquareSurvival(1, 0), /df must be a positive number/);
});

test('chi-square goodness of fit, weights on any scale (scipy.stats.chisquare)', () => {
  // python3 -c "import numpy as np; from scipy import stats; [print(o, w, stats.chisquare(o, np.array(w)/sum(w)*sum(o))) for o,w in [([30,0],[1,1]),([145,55],[1,1]),([520,480],[1,1]),([60,25,15],[2,1,1]),([101,99],[50,50])]]"
  const ref: Array<[number[], number[], number, number]> = [
    [[30, 0], [1, 1], 30, 4.3204630578274955e-8],
    [[145, 55], [1, 1], 40.5, 1.9661604415428878e-10],
    [[520, 480], [1, 1], 1.6, 0.20590321073206466],
    [[60, 25, 15], [2, 1, 1], 6, 0.04978706836786395],
    [[101, 99], [50, 50], 0.02, 0.887537083981715],
  ];
  for (const [o, w, stat, p] of ref) {
    const r = chiSquareGoodnessOfFit(o, w);
    close(r.statistic, stat, 1e-12, `statistic ${o}`);
    assert.equal(r.df, o.length - 1);
    close(r.p_value, p, 1e-10, `p ${o}`);
  }
  assert.deepEqual(chiSquareGoodnessOfFit([0, 0], [1, 1]), { statistic: 0, df: 1, p_value: 1 });
  assert.throws(() => chiSquareGoodnessOfFit([1, 2], [1]), /2 observed counts but 1 weights/);
  assert.throws(() => chiSquareGoodnessOfFit([1, 2], [1, 0]), /weights\[1\] must be a positive number/);
  assert.throws(() => chiSquareGoodnessOfFit([1, -2], [1, 1]), /observed\[1\] must be a non-negative integer/);
});

test('outcome coverage by arm: the 2 x k chi-square without continuity correction (scipy.stats.chi2_contingency)', () => {
  // python3 -c "import numpy as np; from scipy import stats; [print(r, u, stats.chi2_contingency(np.array([r,[x-y for y,x in zip(r,u)]]), correction=False)) for r,u in [([28,15],[30,30]),([10,12,30],[40,40,40]),([50,45],[60,60])]]"
  const ref: Array<[number[], number[], number, number, number]> = [
    [[28, 15], [30, 30], 13.87140902872777, 1, 0.00019575387242903866],
    [[10, 12, 30], [40, 40, 40], 24.70588235294118, 2, 4.3170374066231815e-6],
    [[50, 45], [60, 60], 1.263157894736842, 1, 0.26105418957965426],
  ];
  for (const [r, u, stat, df, p] of ref) {
    const g = coverageHomogeneity(r, u);
    close(g.statistic, stat, 1e-12, `statistic ${r}/${u}`);
    assert.equal(g.df, df);
    close(g.p_value, p, 1e-10, `p ${r}/${u}`);
  }
  // An arm with no unit drops out; nothing matched, or everything, is no evidence of uneven loss.
  assert.deepEqual(coverageHomogeneity([28, 15, 0], [30, 30, 0]).df, 1);
  assert.deepEqual(coverageHomogeneity([0, 0], [30, 20]), { statistic: 0, df: 1, p_value: 1 });
  assert.deepEqual(coverageHomogeneity([30, 20], [30, 20]), { statistic: 0, df: 1, p_value: 1 });
  assert.throws(() => coverageHomogeneity([31, 2], [30, 20]), /units\[0\] must be an integer >= reported\[0\]/);
});

test('Dirichlet-multinomial sequential SRM Bayes factor (scipy.special.gammaln, reference-values.py)', () => {
  const ref: Array<[number[], number[], number, number]> = [
    [[30, 0], [1, 1], 12.367256348086102, 4.255678504705435e-6],
    [[520, 480], [1, 1], -1.5391997845140395, 1],
    [[60, 25, 15], [2, 1, 1], 0.6270222335001279, 0.5341800986461613],
    [[5000, 5150], [1, 1], -2.3793158293919987, 1],
  ];
  for (const [o, w, logBf, p] of ref) {
    const r = sequentialSrm(o, w);
    close(r.log_bayes_factor, logBf, 1e-9, `log BF ${o}`);
    close(r.p_value, p, 1e-8, `p ${o}`);
  }
});

test('Fisher exact two-sided, incl. 17/17 against 0/16 (scipy.stats.fisher_exact)', () => {
  // python3 -c "from scipy import stats; [print(t, repr(float(stats.fisher_exact([[t[0],t[1]-t[0]],[t[2],t[3]-t[2]]]).pvalue))) for t in [(0,16,17,17),(3,10,7,10),(5,20,12,25),(50,100,65,100),(0,5,0,5),(1000,2000,1100,2000),(2,7,2,7),(0,1,1,1)]]"
  const ref: Array<[number, number, number, number, number]> = [
    [0, 16, 17, 17, 8.570426247835423e-10], [3, 10, 7, 10, 0.1788954079975752], [5, 20, 12, 25, 0.13514879964335055],
    [50, 100, 65, 100, 0.04493200011130274], [0, 5, 0, 5, 1], [1000, 2000, 1100, 2000, 0.0017176151783842473],
    [2, 7, 2, 7, 1], [0, 1, 1, 1, 1],
  ];
  for (const [xc, nc, xt, nt, p] of ref) close(fisherExactTwoSided(xc, nc, xt, nt), p, 1e-9, `fisher ${xc}/${nc} ${xt}/${nt}`);
  // Large counts stay in log space and O(1) memory; a symmetric table is a tie with its mirror, p = 1.
  // python3 -c "from scipy import stats; [print(t, repr(float(stats.fisher_exact([[t[0],t[1]-t[0]],[t[2],t[3]-t[2]]]).pvalue))) for t in [(48000,100000,49000,100000),(30,1000000,60,1000000),(500,1000,500,1000)]]"
  close(fisherExactTwoSided(48000, 100000, 49000, 100000), 7.832532110615643e-6, 1e-7, 'fisher 1e5');
  close(fisherExactTwoSided(30, 1000000, 60, 1000000), 0.0020597926503180828, 1e-7, 'fisher 1e6');
  assert.equal(fisherExactTwoSided(500, 1000, 500, 1000), 1);
  // The table is symmetric in the arms.
  close(fisherExactTwoSided(17, 17, 0, 16), 8.570426247835423e-10, 1e-9, 'fisher swapped');
  assert.throws(() => fisherExactTwoSided(3, 2, 0, 1), /xc \(3\) exceeds nc \(2\)/);
  assert.throws(() => fisherExactTwoSided(1.5, 2, 0, 1), /xc must be a non-negative integer/);
});

test('Wilson and Newcombe; the difference is treatment - control (reference-values.py)', () => {
  const w = wilson(8, 10);
  close(w?.[0], 0.49016247153664183, 1e-12, 'wilson 8/10 lower');
  close(w?.[1], 0.9433178485456247, 1e-12, 'wilson 8/10 upper');
  assert.deepEqual(wilson(0, 10)?.[0], 0);
  close(wilson(0, 10)?.[1], 0.2775327998628892, 1e-12, 'wilson 0/10 upper');
  close(wilson(3, 7, 0.01)?.[0], 0.11637368051613817, 1e-12, 'wilson 3/7 99% lower');
  close(wilson(3, 7, 0.01)?.[1], 0.8102850959116124, 1e-12, 'wilson 3/7 99% upper');
  assert.equal(wilson(0, 0), undefined);
  // talker (control) 0/16, actor (treatment) 17/17: actor is better, the interval is [0.733, 1.0].
  const n = newcombe(0, 16, 17, 17);
  close(n?.[0], 0.7326853747826997, 1e-12, 'newcombe lower');
  assert.equal(n?.[1], 1);
  const m = newcombe(5, 20, 12, 25);
  close(m?.[0], -0.05305042363065743, 1e-12, 'newcombe 5/20 12/25 lower');
  close(m?.[1], 0.4608953811612706, 1e-12, 'newcombe 5/20 12/25 upper');
  const b = ok<FixedResult>(fixedBinary({ units: 16, successes: 0 }, { units: 17, successes: 17 }));
  assert.equal(b.difference, 1);
  close(b.ci95[0], 0.7326853747826997, 1e-12, 'fixedBinary lower');
  close(b.p_value, 8.570426247835423e-10, 1e-9, 'fixedBinary p');
  assert.equal(b.method, 'Newcombe hybrid score; Fisher exact p');
  assert.ok(b.se > 0);
  assert.deepEqual(fixedBinary({ units: 0, successes: 0 }, { units: 3, successes: 1 }), { reason: 'needs an outcome in each arm' });
});

// Per-unit (s, n): the same vectors as reference-values.py's C and T.
const CONTROL: Array<[number, number]> = [[3, 5], [0, 4], [6, 6], [2, 3], [1, 5], [4, 4], [0, 2], [5, 6]];
const TREATMENT: Array<[number, number]> = [[4, 4], [5, 6], [3, 3], [2, 5], [6, 6], [1, 2], [3, 4]];

test('delta method: per-arm rate and variance, the fixed interval and p (numpy var/cov in reference-values.py)', () => {
  const c = ratioEstimate(sumsOf(CONTROL));
  const t = ratioEstimate(sumsOf(TREATMENT));
  close(c?.rate, 0.6, 1e-14, 'rc');
  close(c?.variance, 0.02007696793002916, 1e-12, 'Vc');
  close(t?.rate, 0.8, 1e-14, 'rt');
  close(t?.variance, 0.00891851851851852, 1e-12, 'Vt');
  const f = ok<FixedResult>(fixedRatio(sumsOf(CONTROL), sumsOf(TREATMENT)));
  close(f.difference, 0.2, 1e-12, 'd');
  close(f.se, 0.17028061090020696, 1e-12, 'se');
  close(f.ci95[0], -0.13374386462988413, 1e-12, 'lower');
  close(f.ci95[1], 0.5337438646298842, 1e-12, 'upper');
  close(f.p_value, 0.2401820645213274, 1e-11, 'p');
  assert.equal(f.alpha, 0.05);
  assert.equal(f.method, 'delta method, trajectory as unit');
  // A unit with n = 0 leaves r alone.
  assert.equal(ratioEstimate(addSums(sumsOf(CONTROL), sumsOf([[0, 0]])))?.rate, 0.6);
  assert.equal(ratioEstimate(sumsOf([[1, 2]])), undefined);
  assert.equal(ratioEstimate(sumsOf([[0, 0], [0, 0]])), undefined);
  assert.deepEqual(fixedRatio(sumsOf([[1, 2]]), sumsOf(TREATMENT)), { reason: 'needs 2 trajectories with a tool line per arm' });
  assert.ok('reason' in fixedRatio(sumsOf([[2, 2], [3, 3]]), sumsOf([[1, 1], [4, 4]])), 'no variance: no interval');
});

test('score outcomes through meanSums are a Welch-style difference of means (reference-values.py)', () => {
  const f = ok<FixedResult>(fixedRatio(meanSums(5, 2.7, 1.7500000000000002), meanSums(6, 4.8, 3.925)));
  close(f.difference, 0.2599999999999999, 1e-12, 'd');
  close(f.se, 0.13203534880225573, 1e-11, 'se');
  close(f.p_value, 0.04893361420981955, 1e-10, 'p');
});

test('the normal-mixture boundary (numpy in reference-values.py and inline)', () => {
  const s = ok<SequentialResult>(
    sequentialRatio(sumsOf(CONTROL), sumsOf(TREATMENT), { plannedTrajectories: 10, burnIn: 5 }),
  );
  close(s.rho2, 0.7936154601737565, 1e-13, 'rho2');
  assert.equal(s.p_value, 1);
  close(s.ci95[0], -0.3183686792603101, 1e-12, 'lower');
  close(s.ci95[1], 0.7183686792603102, 1e-12, 'upper');
  assert.equal(s.method, 'normal-mixture always-valid (mSPRT)');
  assert.equal(s.planned_trajectories, 10);
  // python3 -c "import numpy as np; a=0.05;d=0.2;V=0.005;u=60;Ks=200; rho2=(2*np.log(1/a)+np.log(1+2*np.log(1/a)))/Ks;c=rho2*u; print(min(1,np.sqrt(1+c)*np.exp(-c*(d*d/V)/(2*(1+c)))), d-np.sqrt(V*(1+c)/c*np.log((1+c)/a**2)), d+np.sqrt(V*(1+c)/c*np.log((1+c)/a**2)))"
  const m = mixtureBoundary(0.2, 0.005, 60, 0.05, 200);
  close(m.p_value, 0.10994211585372256, 1e-12, 'p');
  close(m.ci95[0], -0.02624934822232633, 1e-11, 'lower');
  close(m.ci95[1], 0.42624934822232635, 1e-12, 'upper');
  // The same with α = 0.01, K* = 100, 400 units, d = -0.05, V = 0.0004.
  const m2 = mixtureBoundary(-0.05, 0.0004, 400, 0.01, 100);
  close(m2.rho2, 0.11533741340715226, 1e-13, 'rho2 0.01');
  close(m2.p_value, 0.32232546673126306, 1e-12, 'p 0.01');
  close(m2.ci95[0], -0.1230657530297874, 1e-12, 'lower 0.01');
  close(m2.ci95[1], 0.02306575302978739, 1e-11, 'upper 0.01');
  // Binary: 12/30 against 20/30, smoothed V.
  const b = ok<SequentialResult>(
    sequentialBinary({ units: 30, successes: 12 }, { units: 30, successes: 20 }, { plannedTrajectories: 200 }),
  );
  close(b.rho2, 0.039680773008687824, 1e-13, 'rho2 200');
  close(b.p_value, 0.36783356368018705, 1e-12, 'binary p');
  close(b.ci95[0], -0.1324553425590585, 1e-12, 'binary lower');
  close(b.ci95[1], 0.6657886758923917, 1e-12, 'binary upper');
  // 17/17 against 0/16 has raw V = 0; the smoothed V keeps the mixture finite.
  const e = ok<SequentialResult>(
    sequentialBinary({ units: 16, successes: 0 }, { units: 17, successes: 17 }, { plannedTrajectories: 200, burnIn: 10 }),
  );
  assert.ok(Number.isFinite(e.ci95[0]) && e.ci95[0] > 0 && e.p_value < 0.05, JSON.stringify(e));
});

test('burn-in: nothing until each arm has 20 units, then a result', () => {
  const few = sumsOf(Array.from({ length: 19 }, (_, i): [number, number] => [i % 3, 3]));
  const enough = addSums(few, sumsOf([[1, 3]]));
  assert.deepEqual(sequentialRatio(few, enough, { plannedTrajectories: 200 }), { reason: 'needs 20 trajectories per arm' });
  assert.ok(!('reason' in sequentialRatio(enough, enough, { plannedTrajectories: 200 })));
  assert.deepEqual(
    sequentialBinary({ units: 19, successes: 5 }, { units: 40, successes: 9 }, { plannedTrajectories: 200 }),
    { reason: 'needs 20 trajectories with an outcome per arm' },
  );
  assert.throws(() => sequentialRatio(enough, enough, { plannedTrajectories: 0 }), /plannedTrajectories must be a positive number/);
});

test('post-stratified: weights K_h/K over the strata used, a stratum missing an arm skipped (reference-values.py)', () => {
  const C2: Array<[number, number]> = [[1, 3], [2, 2], [0, 3], [1, 1]];
  const T2: Array<[number, number]> = [[2, 3], [3, 3], [1, 2], [2, 2], [0, 1]];
  const r = ok<FixedResult & { strata_used: number; strata_skipped: number }>(
    postStratified([
      { control: sumsOf(CONTROL), treatment: sumsOf(TREATMENT) },
      { control: sumsOf(C2), treatment: sumsOf(T2) },
      { control: sumsOf([[1, 2], [2, 2]]), treatment: sumsOf([[1, 1]]) },
    ]),
  );
  close(r.difference, 0.23106060606060613, 1e-12, 'd');
  close(r.se, 0.14762220395341114, 1e-12, 'se');
  close(r.ci95[0], -0.058273597006506084, 1e-11, 'lower');
  close(r.ci95[1], 0.5203948091277184, 1e-12, 'upper');
  close(r.p_value, 0.11753231802186791, 1e-11, 'p');
  assert.equal(r.strata_used, 2);
  assert.equal(r.strata_skipped, 1);
  assert.equal(r.method, 'post-stratified delta method');
  assert.ok('reason' in postStratified([]));
});
