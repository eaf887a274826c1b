/**
 * Garbage collections for what the memory budget gave back (docs/memory-budget.md#reclaim). A finished batch's
 * bytes are free to the budget the moment its hold is released, but they are Buffers the process frees only
 * when V8 collects the objects over them, and V8 schedules its collections by the JS heap (small here) rather
 * than by those Buffers: a burst of large batches left hundreds of megabytes of dead answers resident, while
 * the budget, seeing room, let the next batches read theirs. So once `share` of the budget has been given back
 * since the last collection, a full one runs (on its own macrotask, never inside the release); when the budget
 * empties, a quarter of that share is enough, so an idle gateway's memory goes back to what it holds after a
 * burst. Small batches never get there: a collection is never the price of an ordinary batch.
 *
 * The collector is V8's `gc`, which node exposes when started with `--expose-gc` on its command line (the
 * Dockerfile, deploy/ and `npm start` pass it). V8 flags set after start are documented as unpredictable, so
 * without it there is no reclaim: V8's own schedule decides, and the budget still holds.
 */

type Collect = () => void;

/** When the budget empties, this fraction of the share's bytes given back is enough for a collection. */
const EMPTY_DIVISOR = 4;

/** V8's full collection, or undefined when node was started without --expose-gc. */
function collector(): Collect | undefined {
  const exposed: unknown = globalThis.gc;
  return typeof exposed === 'function' ? () => void exposed() : undefined;
}

export interface ReclaimOptions {
  /** memory_budget_mb in bytes, read at each release (a reload may change it). */
  limit(): number;
  /** server.memory_reclaim_share, read at each release. */
  share(): number;
  /** The full collection (tests count calls); default: V8's. */
  collect?: Collect;
  /** Runs `fn` on a later macrotask (tests run it when they choose). */
  later?(fn: () => void): void;
}

export class Reclaim {
  /** Bytes given back since the last collection. */
  private freed = 0;
  private scheduled = false;
  private readonly collect: Collect | undefined;
  private readonly later: (fn: () => void) => void;

  constructor(private readonly opts: ReclaimOptions) {
    this.collect = opts.collect ?? collector();
    this.later = opts.later ?? ((fn) => void setImmediate(fn));
  }

  /** Collections run so far. */
  collections = 0;

  /** A hold gave back `bytes`; `heldAfter`: what the budget still counts. */
  released(bytes: number, heldAfter: number): void {
    const share = this.opts.share();
    if (this.collect === undefined || share <= 0 || bytes <= 0) return;
    this.freed += bytes;
    if (this.scheduled) return;
    const threshold = share * this.opts.limit();
    if (this.freed < (heldAfter > 0 ? threshold : threshold / EMPTY_DIVISOR)) return;
    this.scheduled = true;
    this.later(() => this.run());
  }

  private run(): void {
    this.scheduled = false;
    if (this.freed === 0) return;
    this.freed = 0;
    this.collections++;
    this.collect?.();
  }
}
