/**
 * The pulse's samples shared through the store (docs/console.md#the-pulse): each replica appends to its own capped
 * list `pulse:<replica>` and names itself in `pulse:replicas`; both expire after twice the pulse's span unwritten,
 * so a replica gone for good drops out.
 */
import { randomUUID } from 'node:crypto';
import { parseJsonOrUndefined } from '../protocol/schemas.js';
import type { CappedLists, Claims } from '../state/types.js';
import type { PulseRaw, PulseSink } from './pulse.js';

const REPLICAS_KEY = 'pulse:replicas';
const MAX_REPLICAS = 64;

function isRaw(v: unknown): v is PulseRaw {
  const r = v as Partial<PulseRaw> | null; // checked field by field next
  return typeof r === 'object' && r !== null && typeof r.slot === 'number' && typeof r.batches === 'number' && typeof r.errors === 'number'
    && typeof r.overhead === 'object' && typeof r.backends === 'object';
}

export function sharedPulse(store: CappedLists & Pick<Claims, 'addToSet' | 'readSet'>, replica: string = randomUUID()): PulseSink {
  return {
    async push(raw, points, intervalMs) {
      const ttlMs = 2 * points * intervalMs;
      await store.addToSet(REPLICAS_KEY, replica, ttlMs, MAX_REPLICAS);
      await store.pushCapped(`pulse:${replica}`, JSON.stringify(raw), points, ttlMs);
    },
    async read() {
      const replicas = (await store.readSet(REPLICAS_KEY)).slice(0, MAX_REPLICAS);
      const lists = await Promise.all(replicas.map((r) => store.readList(`pulse:${r}`)));
      // A line that is not a sample of ours is skipped.
      return lists.flat().map(parseJsonOrUndefined).filter(isRaw);
    },
  };
}
