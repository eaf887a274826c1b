/**
 * Every interval inside its metric's possible range (docs/experiment-method.md#intervals-inside-the-possible-range):
 * cutting a symmetric interval to the range loses no coverage and stops "+113 pts" from reaching a reader.
 */

export type Range = readonly [number, number];

export const RATE_DIFFERENCE_RANGE: Range = Object.freeze([-1, 1] as const);

/** Null range: unbounded (a score, a count per trajectory). */
export function withinRange(ci: readonly [number, number], range: Range | null): [number, number] {
  if (range === null) return [ci[0], ci[1]];
  return [Math.min(range[1], Math.max(range[0], ci[0])), Math.max(range[0], Math.min(range[1], ci[1]))];
}

export function clampResult<T extends { ci95: [number, number] }>(r: T, range: Range | null): T {
  return range === null ? r : { ...r, ci95: withinRange(r.ci95, range) };
}
