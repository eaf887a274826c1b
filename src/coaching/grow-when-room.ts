/**
 * Room under the memory budget for objects about to be built over a request already admitted (a coaching body's
 * parsed tree, docs/memory-budget.md#what-is-counted): counted at once, as an answer's bytes are, and waited for
 * while the budget is over, with the same rule (memory/budget.ts): the oldest batch held always goes on, so two
 * requests can never wait for each other.
 */
import type { BudgetHold } from '../memory/budget.js';

/**
 * Count `bytes` more on `hold` and resolve true once the budget lets it go on (at once when there is room), or
 * false after `ms` without room: the bytes are then given back, and the caller answers the budget's 503.
 */
export function growWhenRoom(hold: BudgetHold, bytes: number, ms: number): Promise<boolean> {
  if (hold.charge(bytes)) return Promise.resolve(true);
  return new Promise((resolve) => {
    let waiting = true;
    const timer = setTimeout(() => {
      if (!waiting) return;
      waiting = false;
      hold.shrink(bytes);
      resolve(false);
    }, Math.max(0, ms));
    // `charge(0)` asks again without counting more: room, or this batch is the oldest held now.
    const again = (): void => {
      if (!waiting) return;
      if (!hold.charge(0)) {
        hold.whenRoom(again);
        return;
      }
      waiting = false;
      clearTimeout(timer);
      resolve(true);
    };
    hold.whenRoom(again);
  });
}
