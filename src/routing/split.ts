/**
 * Weighted A/B assignment of a new trajectory (docs/routing.md#splits): a hash of (request_id, input id) or of an
 * assign_by key's value, so a replayed request is routed the same way on any replica and after a restart.
 */
import { intKey } from '../protocol/json/exact-json.js';
import type { Member } from './routes.js';
import { GatewayError } from '../errors.js';

const TWO_32 = 2 ** 32;

/** FNV-1a, then murmur3's fmix32: FNV's high bits mix poorly for keys that differ only at the end (sequential ids). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The id goes through intKey so `7`, a marker for `7` and big integers give one canonical text. */
export function splitPoint(requestId: string, inputId: unknown): number {
  return hash32(`${requestId}:${intKey(inputId)}`) / TWO_32;
}

/** A string as is, else its JSON; null is no key. */
export function assignKeyText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function keyPoint(salt: string, keyText: string): number {
  return hash32(`${salt}\u0000${keyText}`) / TWO_32;
}

/** The member whose slice of the cumulative weights holds `u`, and where in that slice `u` fell (in [0, 1)). */
export function pickWeighted(u: number, arms: readonly Member[]): { arm: Member; within: number } {
  let total = 0;
  for (const a of arms) total += a.weight;
  const target = u * total;
  let start = 0;
  for (const a of arms) {
    const end = start + a.weight;
    if (target < end) return { arm: a, within: (target - start) / a.weight };
    start = end;
  }
  // Only reachable through rounding at the top edge, or with no arm at all (callers check for one).
  const last = arms.at(-1);
  if (last === undefined) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', 'a split needs at least one arm');
  return { arm: last, within: 1 - Number.EPSILON };
}

/**
 * When the chosen arm cannot serve, the second draw reuses where `u` fell inside its slice (uniform), so its
 * traffic spreads over the others by weight instead of landing on its neighbour; when none can, the first stands.
 */
export function chooseArmAt(u: number, arms: readonly Member[], canServe: (backend: string) => boolean = () => true): string {
  if (arms.length === 0) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', 'a split needs at least one arm');
  const first = pickWeighted(u, arms);
  if (arms.length === 1 || canServe(first.arm.name)) return first.arm.name;
  const servable = arms.filter((a) => a !== first.arm && canServe(a.name));
  if (servable.length === 0) return first.arm.name;
  return pickWeighted(first.within, servable).arm.name;
}
