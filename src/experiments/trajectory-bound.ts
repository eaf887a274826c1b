/**
 * The bound on what one experiment stores (docs/experiments.md#bounds-and-sizing): a cluster counter read before
 * each admission, admissions of one process checked one at a time per experiment. Once an experiment is full this
 * process remembers it: a count only grows within an experiment.
 */
import type { Counters } from '../state/types.js';

/** Past this the memory is dropped and rebuilt from the store. */
const FULL_REMEMBERED = 1000;

export class TrajectoryBound {
  private readonly full = new Set<string>();
  /** The last admission still deciding: the next one waits for it. */
  private readonly deciding = new Map<string, Promise<boolean>>();

  admit(store: Counters, counterKey: string, max: number): Promise<boolean> {
    if (this.full.has(counterKey)) return Promise.resolve(false);
    const before = this.deciding.get(counterKey) ?? Promise.resolve(true);
    const mine = before.then(
      () => this.check(store, counterKey, max),
      () => this.check(store, counterKey, max),
    );
    this.deciding.set(counterKey, mine);
    const forget = (): void => {
      if (this.deciding.get(counterKey) === mine) this.deciding.delete(counterKey);
    };
    mine.then(forget, forget);
    return mine;
  }

  private async check(store: Counters, counterKey: string, max: number): Promise<boolean> {
    if (this.full.has(counterKey)) return false;
    // The read includes this process's increments not yet sent, so the admissions before this one are in it.
    const recorded = (await store.readCounters(counterKey)).recorded ?? 0;
    if (recorded >= max) {
      if (this.full.size >= FULL_REMEMBERED) this.full.clear();
      this.full.add(counterKey);
      return false;
    }
    store.incr(counterKey, 'recorded');
    return true;
  }
}
