/** Dividing `num_outputs` among ensemble members by largest remainder, ties first (docs/routing.md#ensembles). */
import type { Member } from './routes.js';
import { GatewayError } from '../errors.js';

/** Two quotas this close are one quota with rounding error, e.g. 3 * (0.1 / 0.3), and must tie. */
const EPSILON = 1e-9;

export function allocateShares(total: number, shares: readonly number[]): number[] {
  if (!Number.isInteger(total) || total < 0) throw new GatewayError('GATEWAY_ERR_INTERNAL', `cannot allocate ${total} candidates`);
  if (shares.length === 0) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', 'an ensemble needs at least one member');
  let sum = 0;
  for (const s of shares) {
    if (!(s > 0) || !Number.isFinite(s)) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid ensemble share ${s}`);
    sum += s;
  }
  const counts: number[] = [];
  const fractions: number[] = [];
  let given = 0;
  for (const s of shares) {
    const quota = (total * s) / sum;
    const near = Math.round(quota);
    // A quota within EPSILON of an integer is that integer: its fraction must not compete for a leftover.
    const whole = Math.abs(quota - near) < EPSILON ? near : Math.floor(quota);
    counts.push(whole);
    fractions.push(Math.round(Math.max(quota - whole, 0) / EPSILON));
    given += whole;
  }
  const parts = counts.map((count, i) => ({ i, count, fraction: fractions[i] ?? 0 }));
  const order = [...parts].sort((a, b) => b.fraction - a.fraction || a.i - b.i);
  for (let k = 0; given < total && order.length > 0; k = (k + 1) % order.length) {
    const part = order[k];
    if (part !== undefined) part.count++;
    given++;
  }
  return parts.map((p) => p.count);
}

interface ShareLeg {
  backend: string;
  count: number;
  offset: number;
}

/** The members that get at least one candidate, with cumulative offsets: candidates are numbered in member order. */
export function ensembleLegs(total: number, members: readonly Member[]): ShareLeg[] {
  const counts = allocateShares(total, members.map((m) => m.weight));
  const legs: ShareLeg[] = [];
  let offset = 0;
  members.forEach((m, i) => {
    const count = counts[i] ?? 0; // one count per member
    if (count > 0) legs.push({ backend: m.name, count, offset });
    offset += count;
  });
  return legs;
}
