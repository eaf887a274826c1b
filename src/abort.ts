/**
 * A batch's cancellation without an AbortController: on Node 20 one costs about 3 µs and each listener pair 2 µs
 * more, per batch and sub-request, on a path whose whole budget is a few tens of µs (docs/performance.md#targets).
 */

import type { ServerResponse } from 'node:http';

export interface AbortLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** AbortSignal's dispatch rules: once each, in order; one added after the abort, or removed during it, never runs. */
export class BatchSignal implements AbortLike {
  private abortedFlag = false;
  /** Emptied slots only while the abort runs them, so that the run's positions hold. */
  private listeners: ((() => void) | undefined)[] | undefined;
  private dispatching = false;

  get aborted(): boolean {
    return this.abortedFlag;
  }

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

/** The request's own 'close' fires once its body is read, so it cannot tell. */
export function onClientGone(res: ServerResponse, fn: () => void): () => void {
  const onClose = (): void => {
    if (!res.writableEnded) fn();
  };
  res.once('close', onClose);
  return () => res.off('close', onClose);
}
