/**
 * A new trajectory's stratum and assignment key (docs/experiments.md#strata), decided at its first step. Set-once
 * claims keep them equal on every replica; the key bound holds to within keys first seen at once on several.
 */
import { createHash } from 'node:crypto';
import type { RatioSums } from '../stats/index.js';
import type { StorePorts } from '../state/types.js';
import { KEY_SUMS, keys, type KeySum } from './keys.js';

const STRATUM_LABEL_MAX = 200;
export const OTHER_STRATUM = 'other';
export const MISSING_VALUE = '(missing)';

export function valueText(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  return (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, STRATUM_LABEL_MAX);
}

export function keyId(experiment: string, keyText: string): string {
  return createHash('sha256').update(`key\u0000${experiment}\u0000${keyText}`, 'utf8').digest('hex').slice(0, 16);
}

/** Set-once claims seen, so never stale. */
type SlotCache = Map<string, string[]>;
/** Past these the caches are dropped and rebuilt from the store. */
const EXPERIMENTS_CACHED = 1000;
const KEYS_CACHED = 100_000;

export class UnitSlots {
  private readonly slots: SlotCache = new Map();
  private readonly keyStatus = new Map<string, boolean>();

  /** Slot 1..max, or 0 (`other`) once every slot holds another value. */
  async stratum(store: Pick<StorePorts, 'claims'>, experiment: string, label: string, max: number, ttlMs: number): Promise<number> {
    let known = this.slots.get(experiment);
    if (known === undefined) {
      if (this.slots.size >= EXPERIMENTS_CACHED) this.slots.clear();
      this.slots.set(experiment, (known = []));
    }
    for (let i = 1; i <= max; i++) {
      const held = known[i - 1];
      if (held === label) return i;
      if (held !== undefined) continue;
      const c = await store.claims.claim(keys.slot(experiment, i), label, ttlMs);
      // Slots are claimed in order, so the first unknown one is the next to learn.
      if (known.length === i - 1) known.push(c.value);
      if (c.value === label) return i;
    }
    return 0;
  }

  /** The first `max` keys are units of their own. */
  async keyAdmitted(store: Pick<StorePorts, 'claims' | 'counters'>, experiment: string, id: string, max: number, ttlMs: number, counterKey: string): Promise<boolean> {
    const cacheKey = `${experiment}:${id}`;
    const hit = this.keyStatus.get(cacheKey);
    if (hit !== undefined) return hit;
    const seen = (await store.counters.read(counterKey)).keys ?? 0;
    const c = await store.claims.claim(keys.key(experiment, id), seen < max ? 'in' : 'over', ttlMs);
    if (c.first && c.value === 'in') store.counters.incr(counterKey, 'keys');
    const admitted = c.value === 'in';
    if (this.keyStatus.size >= KEYS_CACHED) this.keyStatus.clear();
    this.keyStatus.set(cacheKey, admitted);
    return admitted;
  }
}

export async function slotLabels(store: Pick<StorePorts, 'claims'>, experiment: string, max: number): Promise<(string | undefined)[]> {
  return Promise.all(Array.from({ length: max }, (_, i) => store.claims.read(keys.slot(experiment, i + 1))));
}

type KeyTotals = Record<KeySum, number>;

export type KeyCounters = Map<string, Map<number, Map<string, KeyTotals>>>;

const KEY_FIELD = /^([^|]+)\|(\d{1,4})\|([0-9a-f]{16})\|([a-z]+)$/;

function keySum(what: string): KeySum | undefined {
  return KEY_SUMS.find((k) => k === what);
}

export function parseKeyCounters(counters: Record<string, number>): KeyCounters {
  const out: KeyCounters = new Map();
  for (const [f, v] of Object.entries(counters)) {
    const m = KEY_FIELD.exec(f);
    const [, arm = '', stratum = '', key = '', what = ''] = m ?? []; // every group matches when m does
    const sum = keySum(what);
    if (m === null || sum === undefined || !Number.isFinite(v)) continue;
    let byStratum = out.get(arm);
    if (byStratum === undefined) out.set(arm, (byStratum = new Map()));
    let byKey = byStratum.get(Number(stratum));
    if (byKey === undefined) byStratum.set(Number(stratum), (byKey = new Map()));
    let t = byKey.get(key);
    if (t === undefined) byKey.set(key, (t = { t: 0, s: 0, n: 0, ocr: 0, ocs: 0, scn: 0, scs: 0 }));
    t[sum] += v;
  }
  return out;
}

export interface KeyUnits {
  units: number;
  tool: RatioSums;
  success: RatioSums;
  score: RatioSums;
}

/** Keys where `has` is false are not units of the metric. */
function sumsOver(totals: readonly KeyTotals[], has: (t: KeyTotals) => boolean, s: (t: KeyTotals) => number, n: (t: KeyTotals) => number): RatioSums {
  const out = { units: 0, s: 0, n: 0, ss: 0, nn: 0, sn: 0 };
  for (const t of totals) {
    if (!has(t)) continue;
    const a = s(t);
    const b = n(t);
    out.units++;
    out.s += a;
    out.n += b;
    out.ss += a * a;
    out.nn += b * b;
    out.sn += a * b;
  }
  return out;
}

/** Over every stratum (a key's totals added across its strata), or in one. */
export function keyUnits(arm: Map<number, Map<string, KeyTotals>> | undefined, stratum?: number): KeyUnits {
  const merged = new Map<string, KeyTotals>();
  for (const [h, byKey] of arm ?? []) {
    if (stratum !== undefined && h !== stratum) continue;
    for (const [k, t] of byKey) {
      const m = merged.get(k);
      if (m === undefined) merged.set(k, { ...t });
      else for (const w of KEY_SUMS) m[w] += t[w];
    }
  }
  const totals = [...merged.values()];
  const tool = sumsOver(totals, (t) => t.t > 0, (t) => t.s, (t) => t.n);
  return {
    units: tool.units,
    tool,
    success: sumsOver(totals, (t) => t.ocr > 0, (t) => t.ocs, (t) => t.ocr),
    score: sumsOver(totals, (t) => t.scn > 0, (t) => t.scs, (t) => t.scn),
  };
}
