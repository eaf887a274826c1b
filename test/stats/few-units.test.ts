/**
 * Comparisons with few randomization units (the assign_by key as the unit) and score means, against reference
 * values computed once with scipy 1.17 (the command beside each value).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FEW_KEYS, fixedMeans, fixedRatio, keyDf, sequentialMeans, type FixedResult, type SequentialResult } from '../../src/stats/compare.js';
import { incompleteBeta, tCritical, tTwoSidedP } from '../../src/stats/student-t.js';
import { close, closeFixed, ok, sumsOf } from './helpers.js';

test('the incomplete beta function and the t distribution match scipy', () => {
  // python3 -c "from scipy import special; print(repr(special.betainc(2.5,0.5,0.3)), repr(special.betainc(30,0.5,0.97)))"
  close(incompleteBeta(0.3, 2.5, 0.5), 0.018927124071945658, 1e-12, 'I_0.3(2.5, 0.5)');
  close(incompleteBeta(0.97, 30, 0.5), 0.17821754497024148, 1e-12, 'I_0.97(30, 0.5)');
  // python3 -c "from scipy import stats; [print(df, repr(stats.t.ppf(0.975,df)), repr(2*stats.t.sf(2.1,df)), repr(stats.t.ppf(1-0.0125,df))) for df in [1,2,5,18,58]]"
  const rows: [number, number, number, number][] = [
    [1, 12.706204736174694, 0.282926056243018, 25.451699579357168],
    [2, 4.302652729749462, 0.1705498691899675, 6.205346816570706],
    [5, 2.5705818356363146, 0.08975324988459879, 3.163381449748609],
    [18, 2.1009220402410382, 0.050090405709568346, 2.4450056165149445],
    [58, 2.0017174841452356, 0.04008868473750899, 2.3010836145339115],
  ];
  for (const [df, crit, p21, crit025] of rows) {
    close(tCritical(0.05, df), crit, 1e-10, `t_0.975(${df})`);
    close(tTwoSidedP(2.1, df), p21, 1e-10, `P(|T| >= 2.1), df ${df}`);
    close(tCritical(0.025, df), crit025, 1e-10, `t_0.9875(${df})`);
  }
  assert.equal(tTwoSidedP(0, 5), 1);
  assert.equal(tTwoSidedP(Infinity, 5), 0);
  assert.ok(Number.isNaN(tCritical(0.05, 0)));
});

test('with few keys the delta method is read from t with K - 2 df (scipy)', () => {
  const c = sumsOf([[3, 5], [0, 4], [6, 6], [2, 3], [1, 5], [4, 4]]);
  const t = sumsOf([[4, 4], [5, 6], [3, 3], [2, 5], [6, 6], [1, 2], [3, 4]]);
  // python3 -c "import numpy as np; from scipy import stats
  // C=np.array([(3,5),(0,4),(6,6),(2,3),(1,5),(4,4)],float); T=np.array([(4,4),(5,6),(3,3),(2,5),(6,6),(1,2),(3,4)],float)
  // def arm(a): s,n=a[:,0],a[:,1]; K=len(s); r=s.sum()/n.sum(); return r,(np.var(s,ddof=1)-2*r*np.cov(s,n,ddof=1)[0,1]+r*r*np.var(n,ddof=1))/(K*n.mean()**2),K
  // rc,Vc,Kc=arm(C); rt,Vt,Kt=arm(T); d=rt-rc; se=np.sqrt(Vc+Vt); df=Kc+Kt-2; tc=stats.t.ppf(0.975,df)
  // print(repr(d), repr(se), repr(d-tc*se), repr(d+tc*se), repr(2*stats.t.sf(abs(d)/se,df)))"
  const f = ok<FixedResult>(fixedRatio(c, t, 0.05, 'key'));
  closeFixed(f, { d: 0.20740740740740748, se: 0.19697980977608012, lo: -0.2261422307474188, hi: 0.6409570455622338, p: 0.31494982288815637 }, 1e-9);
  assert.equal(f.df, 11);
  assert.equal(f.method, 'delta method, key as unit, t with 11 df');
  // The trajectory as unit reads the same sums from the normal: a narrower interval.
  const z = ok<FixedResult>(fixedRatio(c, t, 0.05));
  assert.equal(z.df, undefined);
  assert.ok(z.ci95[1] - z.ci95[0] < f.ci95[1] - f.ci95[0]);
  assert.deepEqual(fixedRatio(sumsOf([[1, 2]]), t, 0.05, 'key'), { reason: 'needs 2 keys with a tool line per arm' });
});

test('keyDf: K - 2 only for the key unit with an arm under FEW_KEYS keys', () => {
  assert.equal(keyDf('key', 6, 7), 11);
  assert.equal(keyDf('key', FEW_KEYS - 1, 500), FEW_KEYS + 497);
  assert.equal(keyDf('key', FEW_KEYS, FEW_KEYS), undefined);
  assert.equal(keyDf('trajectory', 6, 7), undefined);
  assert.equal(keyDf('key', 1, 1), undefined);
});

test('score means: the Welch difference (scipy) and the always-valid one after the burn-in', () => {
  // reference-values.py, "means d se p": scores 0.2 0.9 0.4 0.7 0.5 against 0.8 0.6 0.95 0.7 0.9 0.85
  const f = ok<FixedResult>(fixedMeans({ units: 5, sum: 2.7, squares: 1.7500000000000002 }, { units: 6, sum: 4.8, squares: 3.925 }));
  close(f.difference, 0.2599999999999999, 1e-12, 'd');
  close(f.se, 0.13203534880225573, 1e-11, 'se');
  close(f.p_value, 0.04893361420981955, 1e-10, 'p');
  assert.equal(f.method, 'difference of means (Welch standard error), trajectory as unit');
  assert.deepEqual(fixedMeans({ units: 1, sum: 1, squares: 1 }, { units: 6, sum: 4.8, squares: 3.925 }), { reason: 'needs 2 trajectories with a score per arm' });
  const few = sequentialMeans({ units: 5, sum: 2.7, squares: 1.75 }, { units: 6, sum: 4.8, squares: 3.925 }, { plannedTrajectories: 200 });
  assert.deepEqual(few, { reason: 'needs 20 trajectories with a score per arm' });
  // 20 scores each, means 0.5 and 0.8, variance 0.04 (sample): V = 0.04/20 + 0.04/20 = 0.004.
  // python3 -c "import numpy as np; a=0.05;d=0.3;V=0.004;u=40;Ks=200; rho2=(2*np.log(1/a)+np.log(1+2*np.log(1/a)))/Ks;c=rho2*u; print(repr(min(1,np.sqrt(1+c)*np.exp(-c*(d*d/V)/(2*(1+c))))), repr(d-np.sqrt(V*(1+c)/c*np.log((1+c)/a**2))))"
  const ss = (mean: number): number => 19 * 0.04 + 20 * mean * mean;
  const s = ok<SequentialResult>(sequentialMeans({ units: 20, sum: 10, squares: ss(0.5) }, { units: 20, sum: 16, squares: ss(0.8) }, { plannedTrajectories: 200 }));
  close(s.difference, 0.3, 1e-12, 'seq d');
  close(s.p_value, 0.0016182213811225287, 1e-9, 'seq p');
  close(s.ci95[0], 0.08724905986884993, 1e-9, 'seq lower');
});
