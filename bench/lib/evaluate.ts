/** Holding the figures of a run to the thresholds of the scenario table (bench/scenarios.ts). */
import type { Measured, Threshold } from '../scenarios.js';
import type { TargetCheck } from './types.js';

export function evaluate(thresholds: Threshold[], m: Measured): TargetCheck[] {
  return thresholds.map((t) => {
    const { value, detail, ran } = t.measure(m);
    const measured = Number.isFinite(value);
    let verdict: TargetCheck['verdict'];
    if (!ran || !measured) verdict = 'NOT RUN';
    else if (t.op === 'info' || t.limit === null) verdict = 'INFO';
    else verdict = (t.op === '>=' ? value >= t.limit : value <= t.limit) ? 'PASS' : 'FAIL';
    return { id: t.id, description: t.description, value: measured ? value : null, limit: t.limit, op: t.op, unit: t.unit, verdict, detail };
  });
}
