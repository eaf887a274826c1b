/** Holding the figures of a run to the thresholds of the scenario table (bench/scenarios.ts). */
import type { Measured, Threshold } from '../scenarios.js';
import type { TargetCheck } from './types.js';

export function evaluate(thresholds: Threshold[], m: Measured): TargetCheck[] {
  return thresholds.map((t) => {
    const { value, detail, ran, limit: measuredLimit, unmet } = t.measure(m);
    const limit = measuredLimit ?? t.limit;
    const measured = Number.isFinite(value);
    let verdict: TargetCheck['verdict'];
    if (!ran || !measured) verdict = 'NOT RUN';
    else if (t.op === 'info' || limit === null) verdict = 'INFO';
    else if (unmet !== undefined) verdict = 'FAIL';
    else verdict = (t.op === '>=' ? value >= limit : value <= limit) ? 'PASS' : 'FAIL';
    return {
      id: t.id,
      description: t.description,
      value: measured ? value : null,
      limit,
      op: t.op,
      unit: t.unit,
      verdict,
      detail: unmet !== undefined && ran ? `${unmet}; ${detail}` : detail,
    };
  });
}
