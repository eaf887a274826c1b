/**
 * The gateway's one memory budget (`server.memory_budget_mb`, docs/memory-budget.md): every byte held for a
 * batch is counted here, on the hold of the batch it belongs to -- its request body as it arrives, an
 * estimate of the objects built over it, its backends' answers -- and shadow answers on holds of their own.
 *
 * Three ways in, one count:
 * - a new request asks for room (`admit`) and waits for it in arrival order, never overtaken by a later,
 *   smaller one; past `server.admission_timeout_s` from its arrival it gets up (`onTimeout`: the 503);
 * - a backend answer counts its chunks as they arrive (`charge`); while the budget is over, its read pauses
 *   (`whenRoom`) unless its batch is the oldest one held, which always goes on: the oldest batch finishing is
 *   what frees room, so batches paused on each other can never wait forever;
 * - a shadow copy's answer is held only while there is room (`tryHold`), all shadows together within
 *   server.memory_shadow_share of the budget, and is shed first: when anything has to wait, or the shadows
 *   pass their share, shadow holds are dropped (`onShed`);
 * - a copy made for the replay store or the response cache once a batch is answered takes room only if there
 *   is some now (`reserve`), else it is not made;
 * - what a streamed answer leaves waiting for its client's socket, and a coaching body's parsed tree before it is
 *   built, are charged as an answer's chunks are, and wait for room the same way (coaching/grow-when-room.ts).
 *
 * A hold also owns the stores of its large bodies (protocol/byte-store.ts): their pages go back to the system
 * when it is released, so what the budget counts is what the process holds, without waiting for a collection.
 * Whatever reads a batch's bytes after its answer is written (the response cache's copy) keeps the hold open
 * until it is done (`keep`).
 *
 * The one owner of the byte, waiter and hold counts. Callbacks rather than promises: every batch passes here.
 */
import type { ByteStore, StoreOwner } from '../protocol/byte-store.js';

/** A place in the budget: a batch's (admitted or waiting) or a shadow answer's. */
export interface BudgetHold extends StoreOwner {
  /** Count `bytes` more (the body as it arrives, the objects built over it); never waits. */
  grow(bytes: number): void;
  /** Give back `bytes` of what was counted (a reservation larger than what arrived). */
  shrink(bytes: number): void;
  /**
   * Count `bytes` of an answer being read: false when the reader should pause until `whenRoom` calls back
   * (a shadow's hold is shed instead, and its onShed has run).
   */
  charge(bytes: number): boolean;
  /** Call `fn` once when there may be room again (it is charged anew). */
  whenRoom(fn: () => void): void;
  /** Bytes this hold counts now. */
  readonly bytes: number;
  /** The whole budget in bytes. */
  capacity(): number;
  /** Give everything back (admitted) or leave the queue (waiting), once nothing keeps it; idempotent. */
  release(): void;
  /** Keep the hold's bytes past its release until the returned function is called (once). */
  keep(): () => void;
}

export interface BudgetOptions {
  /** The budget in bytes, read at each decision (a reload may change it). */
  limit(): number;
  /** server.admission_timeout_s in ms, read when a request starts waiting. */
  timeoutMs(): number;
  /** Seconds a request waited, for those that did. */
  onWaited?(seconds: number): void;
  /** server.memory_shadow_share, read at each decision: the share of the budget shadows' holds may count together. */
  shadowShare?(): number;
  /** A shadow answer was dropped to make room. */
  onShed?(): void;
  now?(): number;
  setTimer?(fn: () => void, ms: number): unknown;
  clearTimer?(timer: unknown): void;
}

class Hold implements BudgetHold {
  bytes = 0;
  admitted = false;
  released = false;
  /** Release was asked while something kept the hold: done when the last keeper lets go. */
  private ending = false;
  private keepers = 0;
  private stores: ByteStore[] | undefined;
  /** Arrival time of a waiting request (its clock starts then). */
  arrival = 0;
  /** Cancels the timer of a waiting request (set while it waits). */
  cancelTimer: (() => void) | undefined = undefined;
  /** Neighbours in the list of admitted batch holds, oldest first (not for shadows). */
  prev: Hold | undefined;
  next: Hold | undefined;

  constructor(
    private readonly owner: MemoryBudget,
    /** Asked for when waiting; counted on admission. */
    public asked: number,
    readonly onAdmit: ((hold: BudgetHold) => void) | undefined,
    readonly onTimeout: (() => void) | undefined,
    readonly onShed: (() => void) | undefined,
  ) {}

  get shadow(): boolean {
    return this.onShed !== undefined;
  }

  grow(bytes: number): void {
    if (this.released || bytes <= 0) return;
    if (!this.admitted) {
      this.asked += bytes;
      return;
    }
    this.bytes += bytes;
    this.owner.add(bytes, this.shadow);
  }

  shrink(bytes: number): void {
    if (this.released || !this.admitted) return;
    const n = Math.min(bytes, this.bytes);
    this.bytes -= n;
    this.owner.add(-n, this.shadow);
    if (n > 0) this.owner.roomFreed();
  }

  charge(bytes: number): boolean {
    if (this.released) return !this.shadow;
    this.grow(bytes);
    return this.owner.mayRead(this);
  }

  whenRoom(fn: () => void): void {
    this.owner.onRoom(fn);
  }

  capacity(): number {
    return this.owner.limit;
  }

  adopt(store: ByteStore): void {
    if (this.released) store.release();
    else (this.stores ??= []).push(store);
  }

  keep(): () => void {
    if (this.released) return () => undefined;
    this.keepers++;
    let once = false;
    return () => {
      if (once) return;
      once = true;
      this.keepers--;
      if (this.ending && this.keepers === 0) this.release();
    };
  }

  release(): void {
    if (this.released) return;
    if (this.keepers > 0) {
      this.ending = true;
      return;
    }
    this.released = true;
    if (this.stores !== undefined) for (const s of this.stores) s.release();
    this.stores = undefined;
    this.owner.leave(this);
  }
}

export class MemoryBudget {
  private used = 0;
  private waiters = 0;
  /** FIFO; released waiters are skipped when they reach the head (no search on release). */
  private queue: Hold[] = [];
  private head = 0;
  private oldest: Hold | undefined;
  private newest: Hold | undefined;
  private readonly shadows = new Set<Hold>();
  /** Bytes the shadows' holds count, within server.memory_shadow_share of the budget. */
  private shadowBytes = 0;
  private roomCallbacks: (() => void)[] = [];
  private readonly now: () => number;

  constructor(private readonly opts: BudgetOptions) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** Bytes counted now, all holds together. */
  get bytesHeld(): number {
    return this.used;
  }

  /** Requests waiting for room. */
  get waiting(): number {
    return this.waiters;
  }

  get limit(): number {
    return this.opts.limit();
  }

  /**
   * A request asks for `bytes` (what it is known to need: its declared length once its first byte came).
   * `onAdmit` runs now, synchronously, when there is room, else when room comes; `onTimeout` when the
   * request has waited server.admission_timeout_s since `arrival` (the clock's time it arrived). One request
   * larger than the whole budget is admitted when nothing else is held, or it would wait forever.
   */
  admit(bytes: number, onAdmit: (hold: BudgetHold) => void, onTimeout: () => void, arrival = this.now()): BudgetHold {
    const hold = new Hold(this, bytes, onAdmit, onTimeout, undefined);
    if (this.waiters === 0 && this.fits(bytes)) {
      this.start(hold);
      return hold;
    }
    // Shadows go before a request waits; what they held may be all the room it needs.
    this.shedShadows();
    if (this.waiters === 0 && this.fits(bytes)) {
      this.start(hold);
      return hold;
    }
    hold.arrival = arrival;
    const left = Math.max(0, this.opts.timeoutMs() - (this.now() - arrival));
    hold.cancelTimer = this.startTimer(() => this.timedOut(hold), left);
    this.queue.push(hold);
    this.waiters++;
    return hold;
  }

  /**
   * Room for a copy made once a batch is answered (its replay entry, its cache entries on their way to the
   * store) when there is room for `bytes` now, else undefined: the copy is skipped rather than waited for, and
   * never before a waiting request. Not shed: it is given back when the store has the copy.
   */
  reserve(bytes: number): BudgetHold | undefined {
    if (this.waiters > 0 || this.used + bytes > this.opts.limit()) return undefined;
    const hold = new Hold(this, 0, undefined, undefined, undefined);
    hold.admitted = true;
    hold.grow(bytes);
    return hold;
  }

  /** A shadow answer's hold when there is room for `bytes` now, else undefined (shed before it starts). */
  tryHold(bytes: number, onShed: () => void): BudgetHold | undefined {
    if (this.waiters > 0 || this.used + bytes > this.opts.limit() || this.shadowBytes + bytes > this.shadowRoom) {
      this.opts.onShed?.();
      return undefined;
    }
    const hold = new Hold(this, 0, undefined, undefined, onShed);
    hold.admitted = true;
    this.shadows.add(hold);
    hold.grow(bytes);
    return hold;
  }

  /** @internal */
  add(bytes: number, shadow: boolean): void {
    this.used += bytes;
    if (shadow) this.shadowBytes += bytes;
  }

  /** The shadows' bound: server.memory_shadow_share of the budget. */
  private get shadowRoom(): number {
    return (this.opts.shadowShare?.() ?? 1) * this.opts.limit();
  }

  /** @internal An answer's reader may go on: room left, or its batch is the oldest held. */
  mayRead(hold: Hold): boolean {
    if (hold.shadow && this.shadowBytes > this.shadowRoom) {
      this.shed(hold);
      return false;
    }
    if (this.used <= this.opts.limit()) return true;
    if (hold.shadow) {
      this.shed(hold);
      return false;
    }
    // Shadows go first: their bytes may be all that is over.
    this.shedShadows();
    if (this.used <= this.opts.limit()) return true;
    return hold === this.oldest;
  }

  /** @internal */
  onRoom(fn: () => void): void {
    this.roomCallbacks.push(fn);
  }

  /** @internal */
  leave(hold: Hold): void {
    if (hold.admitted) {
      this.used -= hold.bytes;
      if (hold.shadow) this.shadowBytes -= hold.bytes;
      hold.bytes = 0;
      if (hold.shadow) this.shadows.delete(hold);
      else this.unlink(hold);
    } else {
      this.waiters--;
      this.clearTimer(hold);
    }
    this.roomFreed();
  }

  /** @internal Room may have come: waiting requests first (in order), then paused answers. */
  roomFreed(): void {
    this.drain();
    if (this.roomCallbacks.length === 0) return;
    const fns = this.roomCallbacks;
    this.roomCallbacks = [];
    for (const fn of fns) fn();
  }

  private fits(bytes: number): boolean {
    return this.oldest === undefined || this.used + bytes <= this.opts.limit();
  }

  private start(hold: Hold): void {
    hold.admitted = true;
    hold.prev = this.newest;
    if (this.newest !== undefined) this.newest.next = hold;
    else this.oldest = hold;
    this.newest = hold;
    const asked = hold.asked;
    hold.asked = 0;
    hold.grow(asked);
    hold.onAdmit?.(hold);
  }

  private unlink(hold: Hold): void {
    if (hold.prev !== undefined) hold.prev.next = hold.next;
    else if (this.oldest === hold) this.oldest = hold.next;
    if (hold.next !== undefined) hold.next.prev = hold.prev;
    else if (this.newest === hold) this.newest = hold.prev;
    hold.prev = undefined;
    hold.next = undefined;
  }

  private timedOut(hold: Hold): void {
    if (hold.admitted || hold.released) return;
    hold.cancelTimer = undefined;
    hold.release();
    hold.onTimeout?.();
  }

  /** `fn` after `ms`, on the injected timers when given; what cancels it. */
  private startTimer(fn: () => void, ms: number): () => void {
    const { setTimer, clearTimer } = this.opts;
    if (setTimer === undefined) {
      const t = setTimeout(fn, ms);
      return () => clearTimeout(t);
    }
    const t = setTimer(fn, ms);
    return () => clearTimer?.(t);
  }

  private clearTimer(hold: Hold): void {
    hold.cancelTimer?.();
    hold.cancelTimer = undefined;
  }

  private shed(hold: Hold): void {
    hold.release();
    this.opts.onShed?.();
    hold.onShed?.();
  }

  private shedShadows(): void {
    for (const h of [...this.shadows]) this.shed(h);
  }

  /** Admit from the head while the head fits; a later, smaller request never overtakes (no starvation). */
  private drain(): void {
    for (let next = this.queue[this.head]; next !== undefined; next = this.queue[this.head]) {
      if (next.released) {
        this.head++;
        continue;
      }
      if (!this.fits(next.asked)) break;
      this.head++;
      this.waiters--;
      this.clearTimer(next);
      this.opts.onWaited?.((this.now() - next.arrival) / 1000);
      this.start(next);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
