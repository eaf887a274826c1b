/** What the reference tests of src/stats share: a relative-closeness assertion, an available result, sums of units. */
import assert from 'node:assert/strict';
import type { FixedResult, Unavailable } from '../../src/stats/compare.js';
import { EMPTY_SUMS, type RatioSums } from '../../src/stats/ratio.js';

/** |actual - expected| <= rel·|expected| (+ abs for expected values at 0). */
export function close(actual: number | undefined, expected: number, rel: number, what: string, abs = 0): void {
  assert.ok(
    actual !== undefined && Math.abs(actual - expected) <= rel * Math.abs(expected) + abs,
    `${what}: ${actual} != ${expected} (rel ${rel})`,
  );
}

/** The result itself; fails the test with the reason when there is none. */
export function ok<T extends object>(r: T | Unavailable): T {
  if ('reason' in r) assert.fail(`unavailable: ${r.reason}`);
  return r;
}

/** Ratio sums of units given as (s, n) pairs. */
export function sumsOf(units: Array<[number, number]>): RatioSums {
  return units.reduce<RatioSums>((acc, [s, n]) => addSums(acc, { units: 1, s, n, ss: s * s, nn: n * n, sn: s * n }), EMPTY_SUMS);
}

/** A fixed result against its reference difference, standard error, interval and p, each to `rel`. */
export function closeFixed(f: FixedResult, ref: { d: number; se: number; lo: number; hi: number; p: number }, rel: number): void {
  close(f.difference, ref.d, rel, 'd');
  close(f.se, ref.se, rel, 'se');
  close(f.ci95[0], ref.lo, rel, 'lower');
  close(f.ci95[1], ref.hi, rel, 'upper');
  close(f.p_value, ref.p, rel, 'p');
}

export function addSums(a: RatioSums, b: RatioSums): RatioSums {
  return { units: a.units + b.units, s: a.s + b.s, n: a.n + b.n, ss: a.ss + b.ss, nn: a.nn + b.nn, sn: a.sn + b.sn };
}
