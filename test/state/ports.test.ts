/**
 * The store's ports (src/state/types.ts): each consumer takes the ports it uses, so only src/state/ and the
 * composition root that builds the store and hands its ports out may name the whole `Store`.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const SRC = join(process.cwd(), 'src');
/** The composition root: where the store is made (plugins/gateway.ts) and held (batch/gateway-state.ts). */
const MAY_NAME_STORE = new Set(['plugins/gateway.ts', 'batch/gateway-state.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'([^']*)'/g;

test('no module outside src/state/ and the composition root imports the type Store', () => {
  const offenders: string[] = [];
  for (const file of sources(SRC)) {
    const rel = relative(SRC, file).split('\\').join('/');
    if (rel.startsWith('state/') || MAY_NAME_STORE.has(rel)) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const names = (m[1] ?? '').split(',').map((n) => n.replace(/^\s*type\s+/, '').trim().split(/\s+as\s+/)[0]);
      if (/\/state\//.test(m[2] ?? '') && names.includes('Store')) offenders.push(rel);
    }
  }
  assert.deepEqual(offenders, []);
});
