/**
 * The V8 setting the serve command applies at start (src/process-settings.ts): the gateway's heap growth goes to
 * V8 when node was started plainly, and an operator's own --heap-growing-percent, in either spelling V8 takes, is
 * left alone. V8 shows no flag's value, so the setter is injected; test/cli-logs.test.ts sees it from the CLI.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyProcessSettings, HEAP_GROWING_PERCENT, heapFlagArg } from '../src/process-settings.js';

function recording(): { set: (flags: string) => void; calls: string[] } {
  const calls: string[] = [];
  return { set: (flags) => calls.push(flags), calls };
}

test('started plainly, the gateway sets --heap-growing-percent=150 once', () => {
  const v8 = recording();
  assert.deepEqual(applyProcessSettings([], v8.set), { source: 'gateway', percent: 150 });
  assert.equal(HEAP_GROWING_PERCENT, 150);
  assert.deepEqual(v8.calls, ['--heap-growing-percent=150']);
});

test("other node flags do not stop it: only the operator's own heap growth does", () => {
  const v8 = recording();
  assert.equal(applyProcessSettings(['--max-old-space-size=512', '--heap-growing-percentage=5', '--cpu-prof'], v8.set).source, 'gateway');
  assert.deepEqual(v8.calls, ['--heap-growing-percent=150']);
});

test("node's own --heap-growing-percent is kept, in either spelling, and V8 is not touched", () => {
  for (const arg of ['--heap-growing-percent=120', '--heap_growing_percent=300']) {
    const v8 = recording();
    assert.deepEqual(applyProcessSettings(['--max-old-space-size=512', arg], v8.set), { source: 'node-flag', arg });
    assert.deepEqual(v8.calls, [], arg);
  }
});

test('the flag is found among node arguments only by its exact name', () => {
  assert.equal(heapFlagArg(['--heap-growing-percent=50']), '--heap-growing-percent=50');
  assert.equal(heapFlagArg(['--heap_growing_percent=50']), '--heap_growing_percent=50');
  assert.equal(heapFlagArg(['--heap-growing-percentage=5', '--trace-gc']), undefined);
  assert.equal(heapFlagArg([]), undefined);
});
