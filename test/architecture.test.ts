/**
 * The layering of docs/development.md, checked by dependency-cruiser with the repository's own rules
 * (.dependency-cruiser.cjs): no import cycle (module or folder), layers import downward only, infrastructure
 * imports no layer above config, fastify only in the HTTP layer and the app. A second test runs the same rules
 * on a small tree with a deliberate upward import, a cycle and a fastify import, so a config that silently
 * stopped matching (a renamed folder, a broken pattern) fails here instead of passing everything. A folder
 * cycle needs no module cycle (routes/a -> plugins/b, plugins/c -> routes/d), so it has a rule of its own.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';

const repo = process.cwd();
const depcruise = join(repo, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = join(repo, '.dependency-cruiser.cjs');

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

function cruise(cwd: string): Violation[] {
  const r = spawnSync(process.execPath, [depcruise, 'src', '--config', config, '--output-type', 'json'], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  // Exit status is the number of errors: read the JSON either way, and fail on anything else.
  assert.ok(r.stdout.startsWith('{'), `depcruise printed no JSON (status ${r.status}): ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { summary: { violations: Violation[]; totalCruised: number } };
  assert.ok(out.summary.totalCruised > 0, 'depcruise found no module');
  return out.summary.violations;
}

function describe(vs: Violation[]): string {
  return vs.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).join('\n');
}

test('src/ has no import cycle and imports downward only (docs/development.md)', () => {
  const vs = cruise(repo);
  assert.deepEqual(vs, [], describe(vs));
});

test('the rules catch an upward import, a module cycle, a folder cycle, fastify below HTTP and a module in no layer', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'magma-arch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // fastify must resolve for the fastify rule to see it as node_modules/fastify.
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
  );
  const files: Record<string, string> = {
    // Upward: protocol (lowest) reads routing.
    'src/protocol/a.ts': "import { b } from '../routing/b.js';\nexport const a = b;\n",
    'src/routing/b.ts': 'export const b = 1;\n',
    // A cycle inside one layer.
    'src/dispatch/c.ts': "import { d } from './d.js';\nexport const c = () => d;\n",
    'src/dispatch/d.ts': "import { c } from './c.js';\nexport const d = () => c;\n",
    // Two folders of one layer importing each other, through modules that form no cycle.
    'src/routes/g.ts': "import { h } from '../plugins/h.js';\nexport const g = h;\n",
    'src/plugins/i.ts': "import { j } from '../routes/j.js';\nexport const i = j;\n",
    'src/plugins/h.ts': 'export const h = 1;\n',
    'src/routes/j.ts': 'export const j = 1;\n',
    // fastify below the HTTP layer.
    'src/upstream/e.ts': "import type { FastifyBaseLogger } from 'fastify';\nexport type E = FastifyBaseLogger;\n",
    // Infrastructure reading a layer above config.
    'src/metrics.ts': "import { b } from './routing/b.js';\nexport const m = b;\n",
    // The statistics leaf reading anything else of src/, even infrastructure (errors.ts is allowed).
    'src/stats/k.ts': "import { l } from '../logging.js';\nexport const k = l;\n",
    'src/stats/m.ts': "import { E } from '../errors.js';\nexport const m = E;\n",
    'src/logging.ts': 'export const l = 1;\n',
    'src/errors.ts': 'export const E = 1;\n',
    // A new top-level folder nobody gave a layer.
    'src/newthing/f.ts': "import { b } from '../routing/b.js';\nexport const f = b;\n",
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(resolve(dir, path)), { recursive: true });
    writeFileSync(resolve(dir, path), text);
  }
  const vs = cruise(dir);
  const has = (rule: string, from: string): boolean => vs.some((v) => v.rule.name === rule && v.from === from);
  assert.ok(has('layer-protocol-imports-downward-only', 'src/protocol/a.ts'), describe(vs));
  assert.ok(has('no-circular', 'src/dispatch/c.ts'), describe(vs));
  assert.ok(vs.some((v) => v.rule.name === 'no-circular-folders'), describe(vs));
  assert.ok(!vs.some((v) => v.rule.name === 'no-circular' && /src\/(routes|plugins)\//.test(v.from)), 'the folder cycle is no module cycle');
  assert.ok(has('fastify-only-in-http-and-app', 'src/upstream/e.ts'), describe(vs));
  assert.ok(has('infrastructure-imports-no-layer-above-config', 'src/metrics.ts'), describe(vs));
  assert.ok(has('every-module-in-a-layer', 'src/newthing/f.ts'), describe(vs));
  assert.ok(has('stats-is-a-leaf', 'src/stats/k.ts'), describe(vs));
  assert.ok(!vs.some((v) => v.from === 'src/stats/m.ts'), describe(vs));
});
