// Runs every compiled test file with node's test runner. Node 20's --test takes no globs, so list them here.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function find(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) find(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const filter = process.argv.slice(2);
// Tests live under test/ (mirroring src/) and beside the demo agents they check. Builds are incremental, so a
// test whose source was deleted may still have its compiled file in dist/: only files with a source run.
let files = [...find('dist/test', []), ...find('dist/demo', [])]
  .filter((f) => existsSync(f.replace(/^dist[\\/]/, '').replace(/\.js$/, '.ts')))
  .sort();
if (filter.length) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// A test that hangs (a socket nobody closes) fails after 3 minutes instead of holding CI until its own limit.
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=180000', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
