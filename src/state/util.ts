import { BatchSignal, type AbortLike } from '../abort.js';

/**
 * One 'abort' listener per AbortSignal, shared by its callbacks: over 10 listeners Node warns of a leak. A
 * BatchSignal takes the callbacks itself: a young-generation GC treats an old WeakMap's values as live.
 */
const abortCallbacks = new WeakMap<AbortLike, Set<() => void>>();

/** Calls `fn` once when `signal` aborts (at once if it already has); returns the unregister function. */
export function onAbort(signal: AbortLike | undefined, fn: () => void): () => void {
  if (signal === undefined) return () => {};
  if (signal.aborted) {
    fn();
    return () => {};
  }
  const entry = (): void => fn(); // a distinct entry per registration, even for the same fn
  if (signal instanceof BatchSignal) {
    signal.addEventListener('abort', entry);
    return () => signal.removeEventListener('abort', entry);
  }
  let fns = abortCallbacks.get(signal);
  if (fns === undefined) {
    const set = new Set<() => void>();
    abortCallbacks.set(signal, (fns = set));
    signal.addEventListener(
      'abort',
      () => {
        abortCallbacks.delete(signal);
        for (const f of set) f();
      },
      { once: true },
    );
  }
  fns.add(entry);
  return () => {
    fns.delete(entry);
  };
}

/** setTimeout's largest delay; longer waits are "until the signal aborts". */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Resolves after `ms` or when `signal` aborts; `cancel()` leaves nothing attached to a long-lived signal. */
export function abortableDelay(ms: number, signal?: AbortLike): { promise: Promise<void>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let unlisten = (): void => {};
  const promise = new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    if (Number.isFinite(ms) && ms <= MAX_TIMER_MS) timer = setTimeout(resolve, Math.max(0, ms));
    unlisten = onAbort(signal, resolve);
  });
  return {
    promise,
    cancel: () => {
      if (timer !== undefined) clearTimeout(timer);
      unlisten();
    },
  };
}

/** A listener list whose listeners cannot break the store: one that throws is reported and skipped. */
export class Listeners<A extends unknown[]> {
  private readonly fns = new Set<(...args: A) => void>();

  constructor(private readonly onError: (err: unknown) => void) {}

  add(fn: (...args: A) => void): () => void {
    this.fns.add(fn);
    return () => {
      this.fns.delete(fn);
    };
  }

  emit(...args: A): void {
    for (const fn of [...this.fns]) {
      try {
        fn(...args);
      } catch (err) {
        this.onError(err);
      }
    }
  }
}

/** Every third of a lease, so two renewals in a row may fail before a held lease lapses. */
export function leaseRenewer(leaseMs: number, renew: () => void): NodeJS.Timeout {
  const timer = setInterval(renew, Math.max(10, leaseMs / 3));
  timer.unref();
  return timer;
}

export { randomUUID as newId } from 'node:crypto';

export const GAVE_UP = Symbol('gave up');

/** Waits for `p` at most `ms` or until `signal` aborts; the caller undoes whatever `p` may still do. */
export async function raceAbort<T>(p: Promise<T>, ms: number, signal?: AbortLike): Promise<T | typeof GAVE_UP> {
  const wait = abortableDelay(ms, signal);
  try {
    return await Promise.race([p, wait.promise.then((): typeof GAVE_UP => GAVE_UP)]);
  } finally {
    wait.cancel();
  }
}

/** Waiters of this process, per key, that a pub/sub message can wake before their poll. */
export class Wakers {
  private readonly byKey = new Map<string, Set<() => void>>();

  wake(key: string): void {
    for (const wake of this.byKey.get(key) ?? []) wake();
  }

  async nap(key: string, ms: number, signal?: AbortLike): Promise<void> {
    let set = this.byKey.get(key);
    if (set === undefined) this.byKey.set(key, (set = new Set()));
    const wait = abortableDelay(ms, signal);
    let wake = (): void => {};
    const woken = new Promise<void>((resolve) => (wake = resolve));
    set.add(wake);
    try {
      await Promise.race([wait.promise, woken]);
    } finally {
      wait.cancel();
      set.delete(wake);
      if (set.size === 0) this.byKey.delete(key);
    }
  }
}

/** A FIFO on an array whose taken head is dropped once it is most of the array: amortized constant time. */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    const item = this.items[this.head];
    if (item === undefined) return undefined;
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
