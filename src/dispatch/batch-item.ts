/**
 * The unit of work inside a batch: `count` candidates of one input, numbered from `offset`, on their way to
 * `backend`, with the fallbacks still left to them. An item is a value: moving it to a fallback makes a new one,
 * so whoever holds an item can never see it change under them.
 */
import type { BatchPlan } from '../routing/plan.js';
import { legArm } from '../routing/plan.js';
import { candidateTagOf, type MemoryTag, type TrajectoryState } from '../routing/memory-tag.js';

export interface Item {
  readonly input: number;
  readonly backend: string;
  readonly count: number;
  readonly offset: number;
  readonly fallbacks: readonly string[];
  readonly route: string;
  readonly arm?: string;
  /** The trajectory members of the input's tag (InputPlan.trajectory), written into every candidate's tag. */
  readonly trajectory?: TrajectoryState;
}

/** Every leg of the plan as an item, in plan order (input order, then candidate order). */
export function itemsOf(plan: BatchPlan): Item[] {
  const items: Item[] = [];
  for (const p of plan.inputs) {
    for (const leg of p.legs) {
      items.push({
        input: p.index, backend: leg.backend, count: leg.count, offset: leg.offset, fallbacks: leg.fallbacks,
        route: p.route, arm: legArm(p, leg), trajectory: p.trajectory,
      });
    }
  }
  return items;
}

/** The item moved to its next fallback `to` (which the caller took from `it.fallbacks[0]`). */
export function movedTo(it: Item, to: string): Item {
  return { ...it, backend: to, fallbacks: it.fallbacks.slice(1) };
}

/** The memory tag for candidates of this item, produced by its current backend. */
export function tagOf(it: Item): MemoryTag {
  return candidateTagOf(it.backend, it.route, it.arm, it.trajectory);
}

/** Items grouped by a key, groups and items in first-seen order. */
export function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const list = groups.get(k);
    if (list) list.push(it);
    else groups.set(k, [it]);
  }
  return groups;
}
