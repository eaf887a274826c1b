// Bundles the console (console/src, docs/console.md) into dist/console/: one script, one stylesheet (uPlot's and
// ours) and the page, all served by the admin listener itself: nothing is loaded from anywhere else.
import { copyFileSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const out = 'dist/console';
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: 'console/src/main.ts', style: 'console/src/style.css' },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome109', 'firefox115', 'safari16'],
  outdir: out,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync('console/index.html', join(out, 'index.html'));
copyFileSync('console/favicon.svg', join(out, 'favicon.svg'));
// The empty Experiments page links to the docs page, served from here: it opens on an air-gapped cluster too.
copyFileSync('docs/experiments.md', join(out, 'experiments.md'));
const bytes = readdirSync(out).reduce((n, f) => n + statSync(join(out, f)).size, 0);
console.log(`console: ${out} ${bytes} bytes`);
