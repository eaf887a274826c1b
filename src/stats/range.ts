/**
 * Every interval inside its metric's possible range (docs/experiment-method.md#intervals-inside-the-possible-range):
 * a rate lies in [0, 1], so a difference of two rates (tool success, episode success, a share of trajectories) lies
 * in [-1, 1]. The Wald and mixture intervals are symmetric around the difference and can reach past that range when
 * one arm wins almost everything; their intersection with the range covers the truth whenever they do (the truth is
 * inside the range), so cutting them loses nothing and stops "+113 pts" from reaching a reader.
 */

/** A closed range [low, high] a metric's values, or its differences, cannot leave. */
export type Range = readonly [number, number];

/** The possible values of a difference of two rates. */
export const RATE_DIFFERENCE_RANGE: Range = Object.freeze([-1, 1] as const);

/** The interval intersected with the range; null range: unbounded (a score, a count per trajectory). */
export function withinRange(ci: readonly [number, number], range: Range | null): [number, number] {
  if (range === null) return [ci[0], ci[1]];
  return [Math.min(range[1], Math.max(range[0], ci[0])), Math.max(range[0], Math.min(range[1], ci[1]))];
}

/** A result with its `ci95` intersected with the range; the rest unchanged. */
export function clampResult<T extends { ci95: [number, number] }>(r: T, range: Range | null): T {
  return range === null ? r : { ...r, ci95: withinRange(r.ci95, range) };
}
