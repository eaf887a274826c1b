/** What both stores do alike: count, and hold the shared-value listeners their shared part announces to. */
import { emptyStats, type SharedListener, type StateLog, type StoreStats } from './types.js';
import { Listeners } from './util.js';

export abstract class StoreBase {
  protected readonly counts = emptyStats();
  protected readonly sharedListeners: Listeners<Parameters<SharedListener>>;

  constructor(log: StateLog) {
    this.sharedListeners = new Listeners((err) => log.warn({ err }, 'state: shared-value listener threw'));
  }

  stats(): StoreStats {
    return { ...this.counts };
  }
}
