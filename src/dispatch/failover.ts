/**
 * Where items go after a failure (docs/routing.md#fallbacks-deadline-and-retry-budget), as pure decisions. Two
 * steps, because the retry budget is asked once per destination, right before its sub-requests start.
 */
import type { AttemptFailure } from '../errors.js';
import type { Slot } from '../protocol/answer/response-check.js';
import { groupBy, movedTo, type Item } from './batch-item.js';

/** Below this much time left, no new attempt starts: it could not finish. */
export const MIN_ATTEMPT_MS = 50;

/** Only `failed` reached a backend, so only it asks the retry budget to move on. */
export type Unserved<R> =
  | { kind: 'failed'; failure: AttemptFailure }
  | { kind: 'refused'; failure: AttemptFailure; backend: string; tried: ReadonlySet<R> }
  | { kind: 'unsent'; failure: AttemptFailure }
  | { kind: 'no-replica'; backend: string; cause?: AttemptFailure }
  | { kind: 'no-time' };

export interface FailoverView<R> {
  timeLeftMs: number;
  aborted: boolean;
  expectedMs(backend: string): number;
  hasReplica(backend: string, exclude: ReadonlySet<R>): boolean;
}

/** Items bound for `to`, each one step further down its fallbacks; `from` are the same items as they failed. */
interface Destination {
  to: string;
  from: Item[];
  moved: Item[];
}

interface FailoverDecision<R> {
  sameBackend?: { backend: string; items: Item[]; exclude: ReadonlySet<R>; cause: AttemptFailure };
  final?: { items: Item[]; failure: AttemptFailure };
  destinations: Destination[];
  retry: boolean;
  failure: AttemptFailure;
}

const DEADLINE_RAN_OUT = 'the batch deadline (request_timeout_s) ran out';

/** A client that went away is not the backend's timeout: metrics and the console name it apart. */
export function abortedFailure(clientGone: boolean): AttemptFailure {
  if (clientGone) return { code: 'gateway_client_closed', message: 'cancelled: the client closed the connection' };
  return { code: 'gateway_backend_timeout', message: DEADLINE_RAN_OUT };
}

export function decideFailover<R>(items: Item[], why: Unserved<R>, view: FailoverView<R>): FailoverDecision<R> {
  switch (why.kind) {
    case 'refused':
      if (view.hasReplica(why.backend, why.tried)) {
        return {
          sameBackend: { backend: why.backend, items, exclude: why.tried, cause: why.failure },
          destinations: [], retry: false, failure: why.failure,
        };
      }
      return moveOn(items, why.failure, false, view);
    case 'no-replica':
      return moveOn(
        items, why.cause ?? { code: 'gateway_no_backend', message: `backend "${why.backend}" has no ready replica` }, false, view,
      );
    case 'no-time':
      return moveOn(items, { code: 'gateway_backend_timeout', message: DEADLINE_RAN_OUT }, false, view);
    case 'unsent':
      return moveOn(items, why.failure, false, view);
    case 'failed':
      return moveOn(items, why.failure, true, view);
  }
}

/** A fallback starts only when the batch deadline leaves more than its usual latency (one deadline covers all). */
function moveOn<R>(items: Item[], f: AttemptFailure, retry: boolean, view: FailoverView<R>): FailoverDecision<R> {
  const onward: { to: string; it: Item }[] = [];
  const final: Item[] = [];
  let lateMsg: string | undefined;
  for (const it of items) {
    const to = it.fallbacks[0];
    if (to === undefined || view.aborted) {
      final.push(it);
      continue;
    }
    if (view.timeLeftMs <= Math.max(MIN_ATTEMPT_MS, view.expectedMs(to))) {
      lateMsg = `${f.message}; no fallback: ${Math.max(0, Math.round(view.timeLeftMs))} ms left of the batch deadline`;
      final.push(it);
      continue;
    }
    onward.push({ to, it });
  }
  const destinations = [...groupBy(onward, (o) => o.to)].map(([to, group]) => ({
    to,
    from: group.map((o) => o.it),
    moved: group.map((o) => movedTo(o.it, to)),
  }));
  const decision: FailoverDecision<R> = { destinations, retry, failure: f };
  if (final.length > 0) decision.final = { items: final, failure: lateMsg === undefined ? f : Object.assign({}, f, { message: lateMsg }) };
  return decision;
}

type Resolved =
  | { kind: 'move'; to: string; from: Item[]; moved: Item[]; consumesBudget: boolean }
  | { kind: 'exhausted'; to: string; items: Item[]; failure: AttemptFailure };

export function resolveMove<R>(decision: FailoverDecision<R>, d: Destination, granted: boolean): Resolved {
  if (decision.retry && !granted) {
    const failure = Object.assign({}, decision.failure, { message: `${decision.failure.message}; no fallback: retry budget exhausted` });
    return { kind: 'exhausted', to: d.to, items: d.from, failure };
  }
  return { kind: 'move', to: d.to, from: d.from, moved: d.moved, consumesBudget: decision.retry };
}

/** `waves`: groups that each name an input at most once, as a sub-request carries an input once. */
interface FaultySlots {
  items: Item[];
  waves: Item[][];
  failure: AttemptFailure;
}

export function salvageable(it: Item): boolean {
  return it.fallbacks.length > 0;
}

/** Each run of consecutive bad candidates of one item is one item, so the good candidates around it are kept. */
export function faultySlots(items: readonly Item[], rows: readonly (readonly Slot<unknown>[])[]): FaultySlots | undefined {
  const out: Item[] = [];
  const waves: Item[][] = [];
  let first: string | undefined;
  let bad = 0;
  items.forEach((it, k) => {
    if (!salvageable(it)) return;
    const row = rows[k] ?? [];
    let start = -1;
    let run = 0;
    for (let c = 0; c <= it.count; c++) {
      const slot = c < it.count ? row[c] : undefined;
      if (c < it.count && (slot === undefined || !slot.ok)) {
        bad++;
        if (first === undefined && slot !== undefined && !slot.ok) first = slot.reason;
        if (start < 0) start = c;
      } else if (start >= 0) {
        const moved = Object.assign({}, it, { offset: it.offset + start, count: c - start });
        out.push(moved);
        (waves[run] ??= []).push(moved);
        run++;
        start = -1;
      }
    }
  });
  if (out.length === 0) return undefined;
  const reason = first ?? 'a candidate is missing from the answer';
  return {
    items: out,
    waves,
    failure: {
      code: 'gateway_backend_invalid_response',
      message: bad === 1 ? reason : `${reason} (and ${bad - 1} more candidate${bad === 2 ? '' : 's'} of the same answer)`,
    },
  };
}
