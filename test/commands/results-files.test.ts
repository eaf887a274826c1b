/**
 * `outcomes import` reads a results directory as untrusted input (src/commands/results-files.ts,
 * docs/experiments.md#outcomes-from-bench): only regular files, never through a link, each bounded in bytes
 * before it is read, the listing bounded in entries. A link to /dev/zero, a FIFO and a 1 GB file are skipped and
 * named while the rest is imported, in a CLI process whose peak memory is measured; 100,000 entries get a clear
 * refusal naming --max-files.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readResultFile } from '../../src/commands/results-files.js';
import { killAll, runCli } from '../helpers/cli-process.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';

after(killAll);

const GB = 1024 * 1024 * 1024;
const RUN = JSON.stringify({ schema_version: '2.0', agent: { agent_id: 'agent-x', agent_version: '1' } });

function episode(id: string, success: boolean): string {
  return JSON.stringify({
    episode_id: id,
    success,
    trace: [{ kind: 'instruction', payload: { role: 'user', content: `task ${id}` } }],
  });
}

function tempDir(t: { after(fn: () => void): void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('readResultFile reads a regular file within its bound and nothing else', (t) => {
  const dir = tempDir(t, 'results-file-');
  const file = join(dir, 'ok.json');
  writeFileSync(file, '{"a": 1}');
  assert.deepEqual(readResultFile(file, 8), { text: '{"a": 1}' }, 'exactly at the bound');
  assert.match((readResultFile(file, 7) as { skip: string }).skip, /^8 bytes, over --max-episode-mb \(7 bytes\)/);
  symlinkSync('/dev/zero', join(dir, 'zero.json'));
  symlinkSync(file, join(dir, 'link.json'));
  execFileSync('mkfifo', [join(dir, 'fifo.json')]);
  const big = join(dir, 'big.json');
  writeFileSync(big, '');
  truncateSync(big, GB);
  assert.deepEqual(readResultFile(join(dir, 'zero.json'), 1024), { skip: 'a symbolic link (not followed)' });
  assert.deepEqual(readResultFile(join(dir, 'link.json'), 1024), { skip: 'a symbolic link (not followed)' }, 'a link to a regular file too');
  assert.deepEqual(readResultFile(join(dir, 'fifo.json'), 1024), { skip: 'a FIFO, not a regular file' });
  assert.deepEqual(readResultFile('/dev/null', 1024), { skip: 'a device, not a regular file' });
  assert.deepEqual(readResultFile(dir, 1024), { skip: 'a directory' });
  assert.match((readResultFile(big, 64 * 1024 * 1024) as { skip: string }).skip, /^1073741824 bytes, over --max-episode-mb/);
  assert.match((readResultFile(join(dir, 'none.json'), 1024) as { skip: string }).skip, /ENOENT/);
});

/** The CLI in its own process, with its peak resident memory (KiB) written to stderr as it exits. */
function importCli(t: { after(fn: () => void): void }, args: string[]): ReturnType<typeof runCli> {
  const preload = join(tempDir(t, 'preload-'), 'rss.cjs');
  writeFileSync(preload, "process.on('exit', () => process.stderr.write(`max_rss_kib=${process.resourceUsage().maxRSS}\\n`));\n");
  return runCli(['outcomes', 'import', ...args], { NODE_OPTIONS: `--require ${preload}` });
}

function maxRssMiB(stderr: string): number {
  const m = /max_rss_kib=(\d+)/.exec(stderr);
  assert.ok(m !== null, `no max_rss in: ${stderr}`);
  return Number(m[1]) / 1024;
}

test('a link to /dev/zero, a FIFO and a 1 GB file are skipped and named, never read; the rest is imported, in bounded memory', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(oneBackend({ a }));
  const dir = tempDir(t, 'bench-hostile-');
  writeFileSync(join(dir, 'run.json'), RUN);
  const episodes = join(dir, 'scenarios', 'kitchen', 'episodes');
  const partial = join(dir, 'scenarios', '.partial', 'hall', 'episodes');
  mkdirSync(episodes, { recursive: true });
  mkdirSync(partial, { recursive: true });
  writeFileSync(join(episodes, 'e1.json'), episode('e1', true));
  writeFileSync(join(episodes, 'e2.json'), episode('e2', false));
  writeFileSync(join(partial, 'e3.json'), episode('e3', true));
  symlinkSync('/dev/zero', join(episodes, 'zero.json'));
  execFileSync('mkfifo', [join(episodes, 'fifo.json')]);
  writeFileSync(join(episodes, 'big.json'), '');
  truncateSync(join(episodes, 'big.json'), GB);
  // A scenario directory that is a link elsewhere is not followed either.
  symlinkSync(tmpdir(), join(dir, 'scenarios', 'elsewhere'));

  const t0 = performance.now();
  const run = importCli(t, [dir, '--url', gw.adminUrl, '--json']);
  const code = await run.exit;
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(code, 0, run.stderr());
  const summary = JSON.parse(run.stdout()) as { agent: string; episodes: number; posted: number; skipped: { file: string; reason: string }[]; results: Record<string, number> };
  assert.equal(summary.agent, 'agent-x 1');
  assert.equal(summary.episodes, 3, 'the three regular episodes');
  assert.equal(summary.posted, 3);
  assert.equal(summary.results.unmatched, 3, 'posted to the gateway, which knows none of these traces');
  assert.deepEqual(summary.skipped.map((s) => [s.file.slice(dir.length + 1), s.reason]).sort(), [
    ['scenarios/elsewhere', 'a symbolic link (not followed)'],
    ['scenarios/kitchen/episodes/big.json', `${GB} bytes, over --max-episode-mb (${64 * 1024 * 1024} bytes): not read`],
    ['scenarios/kitchen/episodes/fifo.json', 'a FIFO, not a regular file'],
    ['scenarios/kitchen/episodes/zero.json', 'a symbolic link (not followed)'],
  ]);
  const rss = maxRssMiB(run.stderr());
  t.diagnostic(`outcomes import of the hostile directory: ${seconds.toFixed(2)} s, max RSS ${rss.toFixed(1)} MiB`);
  assert.ok(rss < 200, `max RSS ${rss} MiB`);
});

test('100,000 entries get a clear refusal naming --max-files, before anything is read or posted', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(oneBackend({ a }));
  const dir = tempDir(t, 'bench-many-');
  writeFileSync(join(dir, 'run.json'), RUN);
  const episodes = join(dir, 'scenarios', 'kitchen', 'episodes');
  mkdirSync(episodes, { recursive: true });
  writeFileSync(join(episodes, 'e0.json'), episode('e0', true));
  // Links are the cheapest entries to make; the listing refuses on the count alone.
  for (let i = 1; i < 100_000; i++) symlinkSync('e0.json', join(episodes, `e${i}.json`));

  const t0 = performance.now();
  const run = importCli(t, [dir, '--url', gw.adminUrl]);
  assert.equal(await run.exit, 1, run.stdout());
  const seconds = (performance.now() - t0) / 1000;
  assert.match(run.stderr(), /more than 50000 entries under scenarios\/ \(--max-files 50000\): nothing was posted; raise --max-files/);
  const metrics = (await gw.call('/metrics')).text;
  assert.ok(!/^magma_gateway_experiment_outcomes_total\{/m.test(metrics), 'no outcome posted');
  t.diagnostic(`outcomes import of 100,000 entries: refused in ${seconds.toFixed(2)} s, max RSS ${maxRssMiB(run.stderr()).toFixed(1)} MiB`);

});

test('a bad --max-files or --max-episode-mb is a usage error in its own unit', async (t) => {
  const dir = tempDir(t, 'bench-flags-');
  for (const [flag, unit] of [['--max-files', 'files'], ['--max-episode-mb', 'MB']] as const) {
    const run = runCli(['outcomes', 'import', dir, '--url', 'http://127.0.0.1:9', flag, 'many']);
    assert.equal(await run.exit, 2, run.stderr());
    assert.match(run.stderr(), new RegExp(`${flag} must be a positive number of ${unit}, got "many"`));
  }
});
