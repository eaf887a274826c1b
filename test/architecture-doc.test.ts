/**
 * docs/architecture.md stays true to the code: every `src/` path it names exists (a file or a folder), it holds
 * its diagrams, names the batch's stages, and is linked from the top of the README and from docs/development.md.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const PAGE = 'docs/architecture.md';
const text = readFileSync(PAGE, 'utf8');

test('every src/ path docs/architecture.md names exists', () => {
  const named = new Set([...text.matchAll(/(?<![\w./-])src\/[\w./-]*[\w/]/g)].map((m) => m[0]));
  assert.ok(named.size >= 20, `only ${named.size} src/ paths named: the pattern no longer matches how the page names files`);
  assert.deepEqual([...named].filter((p) => !existsSync(p)), []);
});

test('docs/architecture.md has a component graph, a sequence of one batch and the memory budget\'s life, and names every stage', () => {
  assert.match(text, /```mermaid\nflowchart/);
  assert.match(text, /```mermaid\nsequenceDiagram/);
  assert.match(text, /```mermaid\nstateDiagram/);
  for (const stage of ['front', 'admission', 'index', 'plan', 'dispatch', 'attempt', 'collect', 'assemble', 'finish', 'answer']) {
    assert.match(text, new RegExp(`^\\| ${stage} \\|`, 'm'), `the stage ${stage} in the lifecycle table`);
  }
});

test('the README links docs/architecture.md within its first 40 lines, and docs/development.md links it', () => {
  const top = readFileSync('README.md', 'utf8').split('\n').slice(0, 40).join('\n');
  assert.match(top, /\]\(docs\/architecture\.md(#[\w-]+)?\)/);
  assert.match(readFileSync('docs/development.md', 'utf8'), /\]\(architecture\.md(#[\w-]+)?\)/);
});
