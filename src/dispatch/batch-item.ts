/**
 * The unit of work inside a batch: `count` candidates of one input, numbered from `offset`, on their way to
 * `backend`. An item is a value: moving it to a fallback makes a new one.
 */
import { GatewayError } from '../errors.js';
import type { IndexedAgentInput, IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { BatchPlan } from '../routing/plan.js';
import { legArm } from '../routing/plan.js';
import type { TrajectoryState } from '../protocol/memory-tag.js';

export interface Item {
  readonly index: number;
  readonly input: IndexedAgentInput;
  readonly backend: string;
  readonly count: number;
  readonly offset: number;
  readonly fallbacks: readonly string[];
  readonly route: string;
  readonly arm?: string;
  readonly trajectory?: TrajectoryState;
}

export function itemsOf(plan: BatchPlan, request: IndexedAgentRequest): Item[] {
  const items: Item[] = [];
  for (const p of plan.inputs) {
    const input = request.inputs[p.index];
    if (input === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `the plan's input ${p.index} is not in the request`);
    for (const leg of p.legs) {
      items.push({
        index: p.index, input, backend: leg.backend, count: leg.count, offset: leg.offset, fallbacks: leg.fallbacks,
        route: p.route, arm: legArm(p, leg), trajectory: p.trajectory,
      });
    }
  }
  return items;
}

/** Whether `items` carry the whole request, each input once, in order, with all its candidates. */
export function coversRequest(request: IndexedAgentRequest, items: readonly Item[]): boolean {
  return items.length === request.inputs.length && items.every((it, k) => it.index === k && it.offset === 0 && it.count === it.input.num_outputs);
}

/** The item moved to its next fallback `to` (the caller took it from `it.fallbacks[0]`). */
export function movedTo(it: Item, to: string): Item {
  return Object.assign({}, it, { backend: to, fallbacks: it.fallbacks.slice(1) });
}

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
