/**
 * The pulse's samples in the store (docs/console.md#the-pulse), when it is shared (Redis): each replica appends
 * its own samples to its own capped list, `pulse:<replica>`, and names itself in the set `pulse:replicas`;
 * a reader reads every replica's list and the pulse merges them slot by slot (pulse.ts). Lists and set expire
 * when nothing is written for twice the pulse's span, so a replica gone for good drops out. Uses only the
 * store's list and set methods.
 */
import { randomUUID } from 'node:crypto';
import type { CappedLists, Claims } from '../state/types.js';
import type { PulseRaw, PulseSink } from './pulse.js';

const REPLICAS_KEY = 'pulse:replicas';
/** Replicas read back at most: the set is bounded whatever writes to it. */
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
      const out: PulseRaw[] = [];
      for (const line of lists.flat()) {
        try {
          const v: unknown = JSON.parse(line);
          if (isRaw(v)) out.push(v);
        } catch {
          // not a sample of ours
        }
      }
      return out;
    },
  };
}
