/**
 * Where items go after a failure, decided without HTTP (docs/protocol-fidelity.md#failures and docs/routing.md#fallbacks-deadline-and-retry-budget): the
 * next replica, the next fallback backend, or a final error with its code and message, and whether moving on
 * needs the retry budget. The view (time left, abort, replicas, usual latency) is made up per test.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Item } from '../../src/dispatch/batch-item.js';
import {
  abortedFailure, decideFailover, resolveMove, MIN_ATTEMPT_MS, type FailoverView,
} from '../../src/dispatch/failover.js';
import { RetryBudget } from '../../src/dispatch/retry-budget.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';

/** A replica is a name here: the decisions only compare replicas for identity. */
type R = string;

/** Three inputs as the gateway reads them: the decisions only carry them along. */
const INPUTS = (() => {
  const input = (id: number): string => `{"id":${id},"instruction":{"type":"env","content":"x"},"num_outputs":2}`;
  const r = readAgentRequest(Buffer.from(`{"request_id":"r","inputs":[${[0, 1, 2].map(input).join(',')}]}`), { maxOutputsPerInput: 8, maxJsonDepth: 16, memoryKey: '_gateway' });
  assert.ok(r.ok);
  return r.request.inputs;
})();

function item(index: number, backend: string, fallbacks: string[], extra: Partial<Item> = {}): Item {
  const input = INPUTS[index] ?? assert.fail(`no input ${index}`);
  return { index, input, backend, count: 2, offset: 0, fallbacks, route: 'default', ...extra };
}

/** A view at `now` of a batch due at `deadline`; `replicas` per backend, `latency` per backend in ms. */
function view(opts: {
  now?: number; deadline?: number; aborted?: boolean;
  replicas?: Record<string, R[]>; latency?: Record<string, number>;
}): FailoverView<R> {
  const now = opts.now ?? 1_000;
  const deadline = opts.deadline ?? 301_000;
  return {
    timeLeftMs: deadline - now,
    aborted: opts.aborted ?? false,
    expectedMs: (b) => opts.latency?.[b] ?? 0,
    hasReplica: (b, exclude) => (opts.replicas?.[b] ?? []).some((r) => !exclude.has(r)),
  };
}

const HTTP_500 = { code: 'gateway_backend_http_error' as const, message: 'HTTP 500' };
const REFUSED = { code: 'gateway_backend_unreachable' as const, message: 'connect ECONNREFUSED', notSent: true };

test('a sub-request that reached its backend and failed moves on to the next fallback, as a retry', () => {
  const it = item(0, 'a', ['b', 'c']);
  const d = decideFailover([it], { kind: 'failed', failure: HTTP_500 }, view({}));
  assert.equal(d.retry, true);
  assert.equal(d.final, undefined);
  assert.equal(d.sameBackend, undefined);
  assert.deepEqual(d.destinations, [{ to: 'b', from: [it], moved: [{ ...it, backend: 'b', fallbacks: ['c'] }] }]);

  const granted = resolveMove(d, d.destinations[0]!, true);
  assert.deepEqual(granted, { kind: 'move', to: 'b', from: [it], moved: d.destinations[0]!.moved, consumesBudget: true });
  const refused = resolveMove(d, d.destinations[0]!, false);
  assert.deepEqual(refused, {
    kind: 'exhausted', to: 'b', items: [it],
    failure: { code: 'gateway_backend_http_error', message: 'HTTP 500; no fallback: retry budget exhausted' },
  });
});

test('with no fallback left, the failure itself becomes the final error', () => {
  const it = item(0, 'c', []);
  const d = decideFailover([it], { kind: 'failed', failure: HTTP_500 }, view({}));
  assert.deepEqual(d.final, { items: [it], failure: HTTP_500 });
  assert.deepEqual(d.destinations, []);
});

test('a refused connection tries the backend\'s other replicas first, then falls back without the budget', () => {
  const it = item(0, 'a', ['b']);
  const tried = new Set<R>(['a1']);
  const more = decideFailover([it], { kind: 'refused', failure: REFUSED, backend: 'a', tried }, view({ replicas: { a: ['a1', 'a2'] } }));
  assert.deepEqual(more.sameBackend, { backend: 'a', items: [it], exclude: tried, cause: REFUSED });
  assert.deepEqual(more.destinations, []);

  const none = decideFailover([it], { kind: 'refused', failure: REFUSED, backend: 'a', tried: new Set(['a1', 'a2']) },
    view({ replicas: { a: ['a1', 'a2'] } }));
  assert.equal(none.sameBackend, undefined);
  assert.equal(none.retry, false);
  assert.equal(none.destinations[0]!.to, 'b');
  // Not a retry: the move happens even when the budget has nothing left.
  assert.equal(resolveMove(none, none.destinations[0]!, false).kind, 'move');
  assert.equal((resolveMove(none, none.destinations[0]!, false) as { consumesBudget: boolean }).consumesBudget, false);
});

test('a refused connection with nowhere left to go ends with the connect failure', () => {
  const it = item(0, 'a', []);
  const d = decideFailover([it], { kind: 'refused', failure: REFUSED, backend: 'a', tried: new Set(['a1']) }, view({ replicas: { a: ['a1'] } }));
  assert.deepEqual(d.final, { items: [it], failure: REFUSED });
});

test('a backend with no ready replica is not attempted: gateway_no_backend, or the earlier cause, no retry', () => {
  const it = item(0, 'a', []);
  const plain = decideFailover([it], { kind: 'no-replica', backend: 'a' }, view({}));
  assert.deepEqual(plain.final, { items: [it], failure: { code: 'gateway_no_backend', message: 'backend "a" has no ready replica' } });
  const caused = decideFailover([it], { kind: 'no-replica', backend: 'a', cause: REFUSED }, view({}));
  assert.deepEqual(caused.final?.failure, REFUSED);
  const onward = decideFailover([item(0, 'a', ['b'])], { kind: 'no-replica', backend: 'a' }, view({}));
  assert.equal(onward.retry, false);
  assert.equal(onward.destinations[0]!.to, 'b');
});

test('no permit in time moves on without the budget', () => {
  const failure = { code: 'gateway_overloaded' as const, message: 'replica a1 is at max_in_flight 1' };
  const d = decideFailover([item(0, 'a', ['b'])], { kind: 'unsent', failure }, view({}));
  assert.equal(d.retry, false);
  assert.equal(d.destinations[0]!.to, 'b');
});

test('a fallback starts only when the time left exceeds its usual latency, and the message says how much was left', () => {
  const slow = item(0, 'a', ['slow']);
  const fast = item(1, 'a', ['fast']);
  const last = item(2, 'a', []);
  // 900 ms left: enough for "fast" (100 ms usual), not for "slow" (2 s usual).
  const d = decideFailover([slow, fast, last], { kind: 'failed', failure: HTTP_500 },
    view({ now: 10_000, deadline: 10_900, latency: { slow: 2_000, fast: 100 } }));
  assert.deepEqual(d.destinations.map((x) => x.to), ['fast']);
  // Every item ending here carries the deadline message, the one that had no fallback too.
  assert.deepEqual(d.final, {
    items: [slow, last],
    failure: { code: 'gateway_backend_http_error', message: 'HTTP 500; no fallback: 900 ms left of the batch deadline' },
  });
});

test('below MIN_ATTEMPT_MS no fallback starts, even to a backend with no latency known yet', () => {
  const d = decideFailover([item(0, 'a', ['b'])], { kind: 'failed', failure: HTTP_500 },
    view({ now: 0, deadline: MIN_ATTEMPT_MS }));
  assert.deepEqual(d.destinations, []);
  assert.equal(d.final?.failure.message, `HTTP 500; no fallback: ${MIN_ATTEMPT_MS} ms left of the batch deadline`);
  const justOver = decideFailover([item(0, 'a', ['b'])], { kind: 'failed', failure: HTTP_500 },
    view({ now: 0, deadline: MIN_ATTEMPT_MS + 1 }));
  assert.equal(justOver.destinations.length, 1);
});

test('a deadline that ran out before the attempt: gateway_backend_timeout, saying no time was left', () => {
  const past = view({ now: 5_000, deadline: 4_000 });
  const withFallback = decideFailover([item(0, 'a', ['b'])], { kind: 'no-time' }, past);
  assert.deepEqual(withFallback.final?.failure, {
    code: 'gateway_backend_timeout',
    message: 'the batch deadline (request_timeout_s) ran out; no fallback: 0 ms left of the batch deadline',
  });
  const without = decideFailover([item(0, 'a', [])], { kind: 'no-time' }, past);
  assert.deepEqual(without.final?.failure, { code: 'gateway_backend_timeout', message: 'the batch deadline (request_timeout_s) ran out' });
});

test('an aborted batch starts nothing more: the failure is final even with fallbacks and time', () => {
  const it = item(0, 'a', ['b']);
  const d = decideFailover([it], { kind: 'failed', failure: HTTP_500 }, view({ aborted: true }));
  assert.deepEqual(d.final, { items: [it], failure: HTTP_500 });
  assert.deepEqual(d.destinations, []);
  assert.deepEqual(abortedFailure(true), { code: 'gateway_client_closed', message: 'cancelled: the client closed the connection' });
  assert.deepEqual(abortedFailure(false), { code: 'gateway_backend_timeout', message: 'the batch deadline (request_timeout_s) ran out' });
});

test('items of one failure go to their own next fallbacks, grouped per destination in first-seen order', () => {
  const x = item(0, 'a', ['c'], { route: 'r1' });
  const y = item(1, 'a', ['b'], { route: 'r2', arm: 'a' });
  const z = item(2, 'a', ['c', 'b'], { route: 'r1', offset: 2 });
  const d = decideFailover([x, y, z], { kind: 'failed', failure: HTTP_500 }, view({}));
  assert.deepEqual(d.destinations.map((g) => [g.to, g.from.map((i) => i.index)]), [['c', [0, 2]], ['b', [1]]]);
  // The arm and the candidate positions travel with the item; only the backend and fallbacks change.
  assert.deepEqual(d.destinations[1]!.moved, [{ ...y, backend: 'b', fallbacks: [] }]);
  assert.deepEqual(d.destinations[0]!.moved[1], { ...z, backend: 'c', fallbacks: ['b'] });
});

test('with a real budget of one retry, the first destination moves and the second fails at once', () => {
  const budget = new RetryBudget(0, 1);
  const d = decideFailover([item(0, 'a', ['b']), item(1, 'a', ['c'])], { kind: 'failed', failure: HTTP_500 }, view({}));
  const steps = d.destinations.map((dest) => resolveMove(d, dest, d.retry && budget.tryRetry()));
  assert.deepEqual(steps.map((s) => s.kind), ['move', 'exhausted']);
  assert.deepEqual(budget.inFlight, { active: 0, retrying: 1 });
});
