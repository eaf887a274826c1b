/**
 * Room for objects about to be built over an admitted request (a coaching body's parsed tree,
 * docs/memory-budget.md#what-is-counted), waited for as an answer's bytes are.
 */
import type { BudgetHold } from '../memory/budget.js';

/** False after `ms` without room: the bytes are given back, and the caller answers the budget's 503. */
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
