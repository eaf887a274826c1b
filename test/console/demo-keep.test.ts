/**
 * `npm run demo -- --keep` (demo/run-demo.ts): after its episode the demo stays up, prints the console's
 * address, serves the console there with the demo's experiment, and stops cleanly on Ctrl-C (SIGINT).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { expectedExperiments } from './report-expect.js';

test('the demo kept up prints the console address, serves it, and stops on SIGINT', { timeout: 90_000 }, async () => {
  const child = spawn(process.execPath, [join(process.cwd(), 'dist/demo/run-demo.js'), '--keep'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  try {
    const line = /console:\s+(http:\/\/127\.0\.0\.1:\d+)\//;
    await waitFor('the console address', () => line.test(out) || child.exitCode !== null, { timeoutMs: 60_000, detail: () => out });
    assert.ok(child.exitCode === null, `the demo ended instead of staying up:\n${out}`);
    const base = line.exec(out)![1]!;
    const page = await http(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(page.text, /<script type="module" src="app\.js">/);
    const report = await http(`${base}/gateway/experiments`);
    const ab = expectedExperiments(report.json).find((e) => e.key === 'default/ab');
    assert.ok(ab !== undefined && ab.arms.reduce((n, a) => n + a.trajectories, 0) > 0, 'the demo\'s A/B experiment has trajectories');
    child.kill('SIGINT');
    assert.equal(await exit, 0, out);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
