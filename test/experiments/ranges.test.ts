/**
 * Every interval inside its metric's possible range (docs/experiment-method.md#intervals-inside-the-possible-range):
 * lopsided arms through the real analysis and arm reports, every `ci95` in them checked, and the cut shown to happen
 * (an interval that reached past the range ends exactly at its edge, the difference itself untouched).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyse } from '../../src/experiments/report/analysis.js';
import type { ArmInput } from '../../src/experiments/report/comparison.js';
import { analyseStrata } from '../../src/experiments/report/strata.js';
import { armReport, emptyArm, type ArmCounts } from '../../src/experiments/arm-counts.js';
import { withinRange } from '../../src/stats/index.js';

/** K trajectories of 4 robot lines; `good` of them succeed on all 4, the rest on `rest` of 4; `errors` had an error candidate. */
function arm(name: string, k: number, good: number, rest: number, errors: number): ArmInput {
  const s = good * 4 + (k - good) * rest;
  const ss = good * 16 + (k - good) * rest * rest;
  const counts: ArmCounts = {
    ...emptyArm(), units: k, unitsWithLines: k, s, n: 4 * k, ss, nn: 16 * k, sn: 4 * s, steps: 5 * k, stepsSquared: 25 * k,
    errorCandidate: errors, outcomeReported: k, outcomeSuccess: good,
  };
  counts.strata = new Map([[1, { ...counts, strata: new Map() }]]);
  return { arm: name, weight: 50, counts };
}

/** Every `ci95` anywhere in `v`, with the path it was found at. */
function intervals(v: unknown, path = '$'): { path: string; ci: [number, number] }[] {
  if (v === null || typeof v !== 'object') return [];
  const o = v as Record<string, unknown>; // a JSON-shaped report piece
  const out: { path: string; ci: [number, number] }[] = [];
  for (const [k, x] of Object.entries(o)) {
    if (k === 'ci95' && Array.isArray(x)) out.push({ path, ci: [Number(x[0]), Number(x[1])] });
    else out.push(...intervals(x, `${path}.${k}`));
  }
  return out;
}

// a fails nearly everything and has an error candidate in 29 of 30 trajectories; b succeeds nearly everywhere.
const A = arm('a', 30, 1, 0, 29);
const B = arm('b', 30, 29, 3, 0);

test('lopsided arms: every difference interval within [-1, 1], every rate interval within [0, 1]', () => {
  for (const primary of ['tool_success', 'outcome'] as const) {
    const o = { primary, plannedTrajectories: 200, burnIn: 20 };
    const an = analyse([A, B], 'a', o);
    const strata = analyseStrata('attributes.scenario', 4, ['kitchen'], [A, B], 'a', o, (x, slot) => ({ ...x, counts: x.counts.strata.get(slot) ?? emptyArm() }));
    const diffs = [...intervals(an.comparisons), ...intervals(an.secondary), ...intervals(strata.post_stratified), ...intervals(strata.values)];
    assert.ok(diffs.length >= 6, `${diffs.length} intervals`);
    for (const { path, ci } of diffs) assert.ok(ci[0] >= -1 && ci[1] <= 1 && ci[0] <= ci[1], `${primary} ${path}: ${JSON.stringify(ci)}`);
    const rates = intervals([armReport('a', 50, true, A.counts, null), armReport('b', 50, true, B.counts, null)]);
    assert.equal(rates.length, 4);
    for (const { path, ci } of rates) assert.ok(ci[0] >= 0 && ci[1] <= 1, `${path}: ${JSON.stringify(ci)}`);
  }
});

test('the cut happens: the always-valid tool-success interval and the error-candidate share end at the edge', () => {
  const an = analyse([A, B], 'a', { primary: 'tool_success', plannedTrajectories: 200, burnIn: 20 });
  const tool = an.comparisons.find((c) => c.primary)!;
  // d = 119/120 - 4/120 = 0.9583; the mixture's half-width (about 3 SE) reaches past +1, so the upper end is 1.
  assert.ok(Math.abs(tool.sequential!.difference - 115 / 120) < 1e-12);
  assert.equal(tool.sequential!.ci95[1], 1);
  assert.ok(tool.sequential!.ci95[0] > 0.5 && tool.sequential!.ci95[0] < tool.sequential!.difference);
  // Error-candidate share 0/30 - 29/30 = -0.9667; the delta method's V = K/(K-1)·p(1-p)/K = p(1-p)/29, SE 0.0333:
  // the Wald lower end -1.032 is cut to -1.
  // python3 -c "import math; p=29/30; se=math.sqrt(p*(1-p)/29); print(-p-1.959964*se, -p+1.959964*se)" -> -1.0319988 -0.9013345333333334
  const share = an.secondary.find((s) => s.metric === 'error_candidate_share')!;
  assert.ok(Math.abs(share.fixed!.difference + 29 / 30) < 1e-12);
  assert.equal(share.fixed!.ci95[0], -1);
  assert.ok(Math.abs(share.fixed!.ci95[1] - -0.9013345333333334) < 1e-9, String(share.fixed!.ci95[1]));
});

test('a score has no range the gateway knows: its interval is not cut; withinRange intersects', () => {
  const score = (name: string, k: number, mean: number): ArmInput => ({ arm: name, weight: 50, counts: { ...emptyArm(), units: k, scoreN: k, scoreSum: k * mean, scoreSquares: k * mean * mean + (k - 1) * 0.01 } });
  const an = analyse([score('a', 30, 0.1), score('b', 30, 5)], 'a', { primary: 'outcome', plannedTrajectories: 200, burnIn: 20 });
  const c = an.comparisons.find((x) => x.primary)!;
  assert.ok(c.fixed!.ci95[0] > 1 && c.sequential!.ci95[1] > 4.9, JSON.stringify(c));
  assert.deepEqual(withinRange([-1.2, 0.3], [-1, 1]), [-1, 0.3]);
  assert.deepEqual(withinRange([0.2, 1.7], [-1, 1]), [0.2, 1]);
  assert.deepEqual(withinRange([1.1, 1.7], [-1, 1]), [1, 1]);
  assert.deepEqual(withinRange([-3, 7], null), [-3, 7]);
});
