/**
 * The gateway's one memory budget (docs/memory-budget.md). An answer's read pauses while the budget is over unless
 * its batch is the oldest held, whose finishing is what frees room, so batches paused on each other never wait
 * forever. Callbacks rather than promises: every batch passes here.
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import type { ByteStore, StoreOwner } from '../protocol/byte-store.js';
import { Fifo } from '../state/util.js';

export interface BudgetHold extends StoreOwner {
  /** Never waits. */
  grow(bytes: number): void;
  shrink(bytes: number): void;
  /** False when the reader should pause until `whenRoom` calls back (a shadow's hold is shed instead). */
  charge(bytes: number): boolean;
  whenRoom(fn: () => void): void;
  readonly bytes: number;
  capacity(): number;
  /** Idempotent. */
  release(): void;
  /** Keep the hold's bytes past its release until the returned function is called (once). */
  keep(): () => void;
}

interface BudgetOptions {
  limit(): number;
  timeoutMs(): number;
  onWaited?(seconds: number): void;
  shadowShare?(): number;
  onShed?(): void;
  now?(): number;
  setTimer?(fn: () => void, ms: number): unknown;
  clearTimer?(timer: unknown): void;
}

class Hold implements BudgetHold {
  bytes = 0;
  admitted = false;
  released = false;
  private ending = false;
  private keepers = 0;
  private stores: ByteStore[] | undefined;
  arrival = 0;
  cancelTimer: (() => void) | undefined = undefined;
  /** Admitted batch holds, oldest first. */
  prev: Hold | undefined;
  next: Hold | undefined;

  constructor(
    private readonly owner: MemoryBudget,
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
  /** Released waiters are skipped when they reach the head (no search on release). */
  private readonly queue = new Fifo<Hold>();
  private oldest: Hold | undefined;
  private newest: Hold | undefined;
  private readonly shadows = new Set<Hold>();
  private shadowBytes = 0;
  private roomCallbacks: (() => void)[] = [];
  private readonly now: () => number;

  constructor(private readonly opts: BudgetOptions) {
    this.now = opts.now ?? (() => performance.now());
  }

  get bytesHeld(): number {
    return this.used;
  }

  get waiting(): number {
    return this.waiters;
  }

  get limit(): number {
    return this.opts.limit();
  }

  /** `onAdmit` runs synchronously when there is room; a request larger than the budget waits until nothing is held. */
  admit(bytes: number, onAdmit: (hold: BudgetHold) => void, onTimeout: () => void, arrival = this.now()): BudgetHold {
    const hold = new Hold(this, bytes, onAdmit, onTimeout, undefined);
    // Shadows go before a request waits; what they held may be all the room it needs.
    if (this.waiters > 0 || !this.fits(bytes)) this.shedShadows();
    if (this.waiters === 0 && this.fits(bytes)) {
      this.start(hold);
      return hold;
    }
    hold.arrival = arrival;
    hold.cancelTimer = this.startTimer(() => this.timedOut(hold), Math.max(0, this.opts.timeoutMs() - (this.now() - arrival)));
    this.queue.push(hold);
    this.waiters++;
    return hold;
  }

  /** Undefined when there is no room now: the copy is skipped rather than waited for. Never shed. */
  reserve(bytes: number): BudgetHold | undefined {
    if (this.waiters > 0 || this.used + bytes > this.opts.limit()) return undefined;
    const hold = new Hold(this, 0, undefined, undefined, undefined);
    hold.admitted = true;
    hold.grow(bytes);
    return hold;
  }

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
      this.add(-hold.bytes, hold.shadow);
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
    // Every paused reader is told, even when one callback throws: one lost here would stay paused for good.
    let failed: { err: unknown } | undefined;
    for (const fn of fns) {
      try {
        fn();
      } catch (err) {
        failed ??= { err };
      }
    }
    if (failed !== undefined) throw failed.err;
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
    for (let next = this.queue.peek(); next !== undefined; next = this.queue.peek()) {
      if (next.released) {
        this.queue.shift();
        continue;
      }
      if (!this.fits(next.asked)) break;
      this.queue.shift();
      this.waiters--;
      this.clearTimer(next);
      this.opts.onWaited?.((this.now() - next.arrival) / 1000);
      this.start(next);
    }
  }
}

/** The share of the memory limit the default budget takes. */
const CGROUP_FRACTION = 0.5;
const HEAP_FRACTION = 0.5;

/** Above this a cgroup v1 limit means "no limit" (the kernel writes about 2^63 there). */
const UNLIMITED = 2 ** 50;

type BudgetSource = { source: 'config' | 'cgroup' | 'heap'; bytes: number };

function readLimit(path: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
  if (text === 'max' || !/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n > 0 && n < UNLIMITED ? n : undefined;
}

/**
 * The default of `server.memory_budget_mb` (docs/memory-budget.md#defaults): a fraction of the cgroup's memory
 * limit, else of V8's heap limit. The rest is for what the budget does not count (node, heap slack, sockets).
 */
export function memoryBudgetSource(configuredMb: number | undefined): BudgetSource {
  if (configuredMb !== undefined) return { source: 'config', bytes: Math.floor(configuredMb * 1024 * 1024) };
  // cgroup v2, else v1.
  const cgroup = readLimit('/sys/fs/cgroup/memory.max') ?? readLimit('/sys/fs/cgroup/memory/memory.limit_in_bytes');
  if (cgroup !== undefined) return { source: 'cgroup', bytes: Math.floor(cgroup * CGROUP_FRACTION) };
  return { source: 'heap', bytes: Math.floor(getHeapStatistics().heap_size_limit * HEAP_FRACTION) };
}
