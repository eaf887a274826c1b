/** Small helpers shared by both stores. */
import { BatchSignal, type AbortLike } from '../abort.js';
import { joinBody, retainedBytes, type AnswerBody } from '../protocol/answer/answer-body.js';
import { storeOf } from '../protocol/byte-store.js';

/**
 * One 'abort' listener per AbortSignal, shared by every callback registered on it. A request's signal is handed
 * to many waits and permits at once (one per sub-request); listening once keeps Node's "possible EventTarget
 * memory leak" warning (over 10 listeners) from firing on normal fan-out. A batch's own BatchSignal has no such
 * warning and takes the callbacks itself: a young-generation GC treats an old WeakMap's values as live, so
 * one keyed by every batch's signal can keep what its callbacks reach past the batch.
 */
const abortCallbacks = new WeakMap<AbortLike, Set<() => void>>();

/** Calls `fn` once when `signal` aborts (at once if it already has); returns the unregister function. */
export function onAbort(signal: AbortLike | undefined, fn: () => void): () => void {
  if (signal === undefined) return () => {};
  if (signal.aborted) {
    fn();
    return () => {};
  }
  if (signal instanceof BatchSignal) {
    // A distinct entry per registration, even for the same fn, as below.
    const entry = (): void => fn();
    signal.addEventListener('abort', entry);
    return () => signal.removeEventListener('abort', entry);
  }
  const entry = (): void => fn(); // a distinct entry per registration, even for the same fn
  let fns = abortCallbacks.get(signal);
  if (fns === undefined) {
    const set = new Set<() => void>();
    fns = set;
    abortCallbacks.set(signal, set);
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

/**
 * Resolves after `ms` (never for a non-finite or huge `ms`), or as soon as `signal` aborts. `cancel()` drops
 * the timer and the listener, so a settled wait leaves nothing attached to a long-lived request signal.
 */
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

/** A random id for permits, leases and store instances (unique across gateway replicas). */
/**
 * Runs `renew` every third of a lease (at least every 10 ms), so two renewals in a row may fail before a held
 * lease lapses; the timer never keeps the process alive on its own.
 */
export function leaseRenewer(leaseMs: number, renew: () => void): NodeJS.Timeout {
  const timer = setInterval(renew, Math.max(10, leaseMs / 3));
  timer.unref();
  return timer;
}

export { randomUUID as newId } from 'node:crypto';

/** What raceAbort returns when the signal or the time limit won. */
export const GAVE_UP = Symbol('gave up');

/**
 * Waits for `p`, but no longer than `ms` or until `signal` aborts: a Redis round trip in flight never holds a
 * caller past its deadline. The caller undoes whatever `p` may still do (see the callers).
 */
export async function raceAbort<T>(p: Promise<T>, ms: number, signal?: AbortLike): Promise<T | typeof GAVE_UP> {
  const wait = abortableDelay(ms, signal);
  try {
    return await Promise.race([p, wait.promise.then((): typeof GAVE_UP => GAVE_UP)]);
  } finally {
    wait.cancel();
  }
}

/**
 * Waiters of this process, per key, that a pub/sub message can wake early. `nap` sleeps until `wake(key)`,
 * `ms` passes or the signal aborts, whichever comes first.
 */
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

/**
 * An answer as the Redis replay store sends it: a string, or the pieces joined into one Buffer (not decoded into
 * a string as well); undefined when it is over `max` bytes.
 */
export function replayBytes(body: string | AnswerBody, max: number): string | Buffer | undefined {
  if (typeof body === 'string') return utf8Exceeds(body, max) ? undefined : body;
  return body.length > max ? undefined : joinBody(body);
}

/**
 * An answer as the per-process replay keeps it, and the bytes that costs; undefined when it is over `max`
 * bytes. An answer in pieces is kept as they are: the pieces the client's answer was written from, no copy,
 * which for an answer of megabytes is one large allocation less per batch (every batch stores its answer,
 * most are dropped from the cache unread). Pieces that keep much more alive than their own length (a small
 * answer sliced from a large backend answer) are copied into one Buffer instead, so the cache's bound is
 * what it holds.
 */
export function replayKept(body: string | AnswerBody, max: number): { body: string | AnswerBody; bytes: number } | undefined {
  if (typeof body === 'string') return utf8Exceeds(body, max) ? undefined : { body, bytes: body.length };
  if (body.length > max) return undefined;
  const bytes = retainedBytes(body);
  // A piece of a body's store (protocol/byte-store.ts) is empty once its batch ends: such an answer is copied.
  if (bytes <= 2 * body.length && !body.parts.some((p) => storeOf(p) !== undefined)) return { body, bytes };
  // Always a new Buffer, even of one piece: the copy is what lets the large backing store go. Not from Node's
  // pool (Buffer.concat takes a small copy from a shared 8 KB slab, which the entry would then pin): a store of
  // its own, so what the cache counts is what it holds.
  const joined = Buffer.allocUnsafeSlow(body.length);
  let at = 0;
  for (const p of body.parts) at += p.copy(joined, at);
  return { body: { parts: [joined], length: joined.length }, bytes: joined.length };
}

/**
 * Whether the UTF-8 size of `s` exceeds `max`, without encoding it when the length alone tells (a string of
 * n UTF-16 units takes between n and 3n UTF-8 bytes): replayed responses are megabytes, checked per batch.
 */
function utf8Exceeds(s: string, max: number): boolean {
  if (s.length > max) return true;
  if (s.length * 3 <= max) return false;
  return Buffer.byteLength(s, 'utf8') > max;
}
