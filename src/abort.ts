/**
 * A batch's cancellation (client gone, batch deadline) without an AbortController.
 *
 * Why not AbortController: on Node 20 creating one costs about 3 µs and each add/remove listener pair about
 * 2 µs more (`node dist/bench/primitives.js`), paid by every batch and every sub-request of it, on a path whose
 * whole budget is a few tens of µs (S1, docs/performance.md#targets). A batch is cancelled
 * rarely, so its signal only needs to be a
 * flag and a short list of callbacks. Everything that waits on a batch (backend calls, replay waits, permit
 * queues) accepts `AbortLike`, which a real AbortSignal satisfies too.
 */

import type { ServerResponse } from 'node:http';

/** The part of AbortSignal the gateway uses: a flag and 'abort' listeners. */
export interface AbortLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * An abort flag and its listeners, with AbortSignal's dispatch rules: a listener runs once, in the order added;
 * one added after the abort never runs; one removed while the abort runs its listeners (by an earlier one) is
 * not run.
 */
export class BatchSignal implements AbortLike {
  private abortedFlag = false;
  /** Emptied slots (undefined) only while the abort runs them, so that the run's positions hold. */
  private listeners: ((() => void) | undefined)[] | undefined;
  private dispatching = false;

  get aborted(): boolean {
    return this.abortedFlag;
  }

  /** Listeners run once, when the signal aborts; one added after that never runs (as with AbortSignal). */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.abortedFlag) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const list = this.listeners;
    if (list === undefined) return;
    const i = list.lastIndexOf(listener);
    if (i < 0) return;
    if (this.dispatching) list[i] = undefined;
    else list.splice(i, 1);
  }

  abort(): void {
    if (this.abortedFlag) return;
    this.abortedFlag = true;
    const list = this.listeners;
    if (list === undefined) return;
    this.dispatching = true;
    // A listener that throws must not keep the others (other sub-requests, waits) from being cancelled.
    let failure: unknown;
    for (const fn of list) {
      if (fn === undefined) continue;
      try {
        fn();
      } catch (err) {
        failure ??= err;
      }
    }
    this.dispatching = false;
    this.listeners = undefined;
    if (failure !== undefined) throw failure;
  }
}

/**
 * Calls `fn` if the client goes away before its answer is written: the response stream closing unfinished.
 * (The request stream's own 'close' fires as soon as its body is read, so it cannot tell.) Returns the
 * unregister function, to call once the answer is ready.
 */
export function onClientGone(res: ServerResponse, fn: () => void): () => void {
  const onClose = (): void => {
    if (!res.writableEnded) fn();
  };
  res.once('close', onClose);
  return () => res.off('close', onClose);
}
