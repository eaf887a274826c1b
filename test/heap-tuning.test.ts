/**
 * server.heap_growing_percent (src/heap-tuning.ts): the configured growth is in force in the process, and node's
 * own --heap-growing-percent wins over it. Measured by what the flag changes: how many full GCs one workload
 * (objects that live long enough to be promoted, then die) takes in a fresh process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { applyHeapGrowth, heapFlagGiven } from '../src/heap-tuning.js';

const run = promisify(execFile);
const MODULE = fileURLToPath(new URL('../src/heap-tuning.js', import.meta.url));

/** Full GCs of the workload in a child that applies `percent` as the CLI does; `nodeArgs` go to node itself. */
async function fullGcs(percent: number, nodeArgs: string[] = []): Promise<{ major: number; source: string }> {
  const code = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    import { applyHeapGrowth } from ${JSON.stringify(MODULE)};
    const applied = applyHeapGrowth(${percent});
    let major = 0;
    new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++; }).observe({ entryTypes: ['gc'] });
    const ring = new Array(4000);
    for (let i = 0; i < 400000; i++) ring[i % 4000] = new Array(500).fill(i);
    setTimeout(() => console.log(JSON.stringify({ major, source: applied.source })), 200);`;
  const { stdout } = await run(process.execPath, [...nodeArgs, '--input-type=module', '-e', code], { env: { ...process.env, NODE_OPTIONS: '' } });
  return JSON.parse(stdout) as { major: number; source: string };
}

test('a larger configured heap growth means fewer full GCs for the same work', async () => {
  const [tight, roomy] = await Promise.all([fullGcs(100), fullGcs(1000)]);
  assert.equal(tight.source, 'config');
  assert.ok(roomy.major * 2 < tight.major, `full GCs: ${roomy.major} at 1000%, ${tight.major} at 100%`);
});

test("node's own --heap-growing-percent wins over the config", async () => {
  const [flag, roomy] = await Promise.all([fullGcs(1000, ['--heap-growing-percent=100']), fullGcs(1000)]);
  assert.equal(flag.source, 'node-flag');
  assert.ok(roomy.major * 2 < flag.major, `full GCs: ${flag.major} with node's 100%, ${roomy.major} with the config's 1000%`);
});

test("node's flag is found on its command line, in either spelling", () => {
  assert.equal(heapFlagGiven(['--max-old-space-size=100', '--heap-growing-percent=50']), true);
  assert.equal(heapFlagGiven(['--heap_growing_percent=50']), true);
  assert.equal(heapFlagGiven(['--heap-growing-percentage=5', '--trace-gc']), false);
  assert.deepEqual(applyHeapGrowth(200, ['--heap-growing-percent=300']), { source: 'node-flag' });
  assert.deepEqual(applyHeapGrowth(0, []), { source: 'v8-default' });
});
