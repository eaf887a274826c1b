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
 * A full collection forced while batches are in flight holds the event loop for tens of ms (40 to 200 ms under
 * load in the memory bench), and during a burst V8 collects on its own, pressed by the same bytes: a forced one
 * right after it found nothing left to free. So when its turn comes the collection first asks what it would
 * free: the bytes in ArrayBuffers (Buffers included) beyond what the budget still counts. Less than the share
 * and it is not run; those bytes stay counted toward the next one.
 *
 * Until they are collected, the bytes given back are still the process's: the budget counts them
 * (`uncollected`) as it counts what batches hold, so new batches are admitted against memory that is free, not
 * against dead answers V8 has yet to collect (on a fresh gateway's first burst of 16 x 50 MB answers, the peak
 * RSS went from 617-656 MB to 577-648 MB; docs/memory-budget.md#reclaim). Each collection, or a turn that finds
 * V8 already freed them, lowers the count and tells the budget (`onCollected`).
 *
 * The collector is V8's `gc`, which node exposes when started with `--expose-gc` on its command line (the
 * Dockerfile, deploy/ and `npm start` pass it). V8 flags set after start are documented as unpredictable, so
 * without it there is no reclaim: V8's own schedule decides, nothing given back is counted, and the budget still holds.
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
  /** Bytes in the process's ArrayBuffers, live or not yet collected; default: process.memoryUsage(). */
  arrayBufferBytes?(): number;
  /** What the budget counts now (batches admitted since the last release included); default: what it counted then. */
  held?(): number;
  /** The count of bytes given back and not collected went down: the budget may have room again. */
  onCollected?(): void;
}

export class Reclaim {
  /** Bytes given back since the last collection (forced, or V8's own as seen at the next turn). */
  private freed = 0;
  /** What the budget counted at the last release. */
  private held = 0;
  private scheduled = false;
  private readonly collect: Collect | undefined;
  private readonly later: (fn: () => void) => void;
  private readonly arrayBufferBytes: () => number;

  constructor(private readonly opts: ReclaimOptions) {
    this.collect = opts.collect ?? collector();
    this.later = opts.later ?? ((fn) => void setImmediate(fn));
    this.arrayBufferBytes = opts.arrayBufferBytes ?? (() => process.memoryUsage().arrayBuffers);
  }

  /** Bytes given back since the last collection that a collection would still free (0 without a collector). */
  get uncollected(): number {
    return this.freed;
  }

  /** Collections run so far. */
  collections = 0;
  /** Collections due by the count of bytes given back, not run: V8 had already freed them. */
  skipped = 0;

  /** A hold gave back `bytes`; `heldAfter`: what the budget still counts. */
  released(bytes: number, heldAfter: number): void {
    const share = this.opts.share();
    if (this.collect === undefined || share <= 0 || bytes <= 0) return;
    this.freed += bytes;
    this.held = heldAfter;
    if (this.scheduled || this.freed < this.due(share)) return;
    this.scheduled = true;
    this.later(() => this.run());
  }

  /** Bytes given back that make a collection worth its pause. */
  private due(share: number): number {
    const threshold = share * this.opts.limit();
    return this.held > 0 ? threshold : threshold / EMPTY_DIVISOR;
  }

  private run(): void {
    this.scheduled = false;
    if (this.freed === 0) return;
    // What a collection would free now: ArrayBuffer bytes the budget no longer counts (fewer while batches hold
    // bytes, since a hold also counts objects and bytes not yet received; exact once the budget is empty).
    this.held = this.opts.held?.() ?? this.held;
    const garbage = this.arrayBufferBytes() - this.held;
    if (garbage < this.due(this.opts.share())) {
      this.skipped++;
      const left = Math.max(0, Math.min(this.freed, garbage));
      const lower = left < this.freed;
      this.freed = left;
      if (lower) this.opts.onCollected?.();
      return;
    }
    this.freed = 0;
    this.collections++;
    this.collect?.();
    this.opts.onCollected?.();
  }
}
