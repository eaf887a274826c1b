/**
 * BatchSignal (src/abort.ts): the batch's cancellation must behave like an AbortSignal for everything that
 * waits on it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BatchSignal } from '../src/abort.js';
import { onAbort } from '../src/state/util.js';

test('abort runs each listener once, and aborted stays true', () => {
  const s = new BatchSignal();
  const calls: string[] = [];
  s.addEventListener('abort', () => calls.push('a'));
  s.addEventListener('abort', () => calls.push('b'));
  assert.equal(s.aborted, false);
  s.abort();
  s.abort();
  assert.equal(s.aborted, true);
  assert.deepEqual(calls, ['a', 'b']);
});

test('a removed listener does not run; a listener added after the abort never runs', () => {
  const s = new BatchSignal();
  let removed = 0;
  let late = 0;
  const fn = (): void => {
    removed++;
  };
  s.addEventListener('abort', fn);
  s.removeEventListener('abort', fn);
  s.abort();
  s.addEventListener('abort', () => {
    late++;
  });
  assert.equal(removed, 0);
  assert.equal(late, 0);
});

test('as with AbortSignal, a listener removed by an earlier one while the abort runs them does not run, and the rest still do', () => {
  const run = (signal: BatchSignal | AbortSignal, abort: () => void): string[] => {
    const calls: string[] = [];
    const b = (): void => {
      calls.push('b');
    };
    signal.addEventListener('abort', () => {
      calls.push('a');
      signal.removeEventListener('abort', b);
    });
    signal.addEventListener('abort', b);
    signal.addEventListener('abort', () => calls.push('c'));
    abort();
    return calls;
  };
  const s = new BatchSignal();
  const c = new AbortController();
  assert.deepEqual(run(s, () => s.abort()), ['a', 'c']);
  assert.deepEqual(run(c.signal, () => c.abort()), ['a', 'c']);
});

test('a listener that throws does not keep the others from running; the error is rethrown', () => {
  const s = new BatchSignal();
  let ran = 0;
  s.addEventListener('abort', () => {
    throw new Error('boom');
  });
  s.addEventListener('abort', () => {
    ran++;
  });
  assert.throws(() => s.abort(), /boom/);
  assert.equal(ran, 1);
});

test("the stores' onAbort works on it: at once when already aborted, later when it aborts", () => {
  const s = new BatchSignal();
  let later = 0;
  const off = onAbort(s, () => {
    later++;
  });
  let gone = 0;
  onAbort(s, () => {
    gone++;
  })();
  s.abort();
  assert.equal(later, 1);
  assert.equal(gone, 0);
  let atOnce = 0;
  onAbort(s, () => {
    atOnce++;
  });
  assert.equal(atOnce, 1);
  off();
});

test("onAbort: a callback unregistered by an earlier one while the signal aborts does not run, on either kind of signal", () => {
  for (const make of [() => new BatchSignal(), () => new AbortController()]) {
    const made = make();
    const signal = made instanceof AbortController ? made.signal : made;
    let second = 0;
    let offSecond = (): void => {};
    onAbort(signal, () => offSecond());
    offSecond = onAbort(signal, () => {
      second++;
    });
    made.abort();
    assert.equal(second, 0, made.constructor.name);
  }
});
