/**
 * The bound on what one experiment stores (docs/experiments.md#bounds-and-sizing): the first
 * `experiments.max_trajectories` trajectories are recorded (counted, indexed for outcomes, exported); a trajectory
 * that starts later is left out. It costs the store nothing but one counter increment: its tag carries flag `o`, so
 * its later steps are recognised and skipped without a store call, and the same bound holds on the memory store and
 * on Redis, where nothing else would stop a flood of trajectories from growing the index for `index_ttl_s`.
 *
 * The count is a cluster counter (`.../bound`, field `recorded`), read before each admission; admissions of one
 * process are checked one at a time per experiment, so the bound holds exactly on one replica and to within the
 * trajectories started at the same moment on several. Once an experiment is full this process remembers it: a
 * count only grows within an experiment (a reset starts a new one).
 */
import type { Counters } from '../state/types.js';

/** Experiments remembered as full: past this the memory is dropped and rebuilt from the store. */
const FULL_REMEMBERED = 1000;

export class TrajectoryBound {
  private readonly full = new Set<string>();
  /** Per experiment, the last admission still deciding: the next one waits for it. */
  private readonly deciding = new Map<string, Promise<boolean>>();

  /** Whether a new trajectory of the experiment whose bound counter is `counterKey` is recorded. */
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
