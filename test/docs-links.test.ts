/**
 * The documentation's cross-references resolve (docs/development.md#build-and-test): every page and anchor that
 * a comment, a test, a config file or a page cites exists, and every relative link of the README and docs/
 * reaches a file (and, for a page, a heading). Anchors are GitHub's heading slugs. Nothing is skipped: a page
 * another branch has yet to add is named in prose until it exists, never linked.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';

/** Text files of the repo outside node_modules, dist and .git, under the given folders. */
function* filesUnder(dir: string, keep: (name: string) => boolean): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === '.git' || name === 'results') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* filesUnder(path, keep);
    else if (keep(name)) yield path;
  }
}

/** GitHub's slug of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown page: its headings' slugs (a repeated one gets -1, -2, ...), fenced code left out. */
function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const h = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!); // the group always takes part in a match
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Markdown links `[text](target)` outside fenced code and inline code spans, with their line numbers. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
    if (fenced) return;
    const prose = text.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) out.push({ target: m[1]!, line: i + 1 }); // the group always takes part
  });
  return out;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(path: string): Set<string> {
  let a = anchorCache.get(path);
  if (a === undefined) anchorCache.set(path, (a = anchorsOf(readFileSync(path, 'utf8'))));
  return a;
}

/** Why a page (repo-relative) with an optional anchor does not resolve, or undefined when it does. */
function problemOf(page: string, anchor: string | undefined): string | undefined {
  if (!existsSync(page)) return `no file ${page}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!page.endsWith('.md')) return `an anchor into ${page}, which is not a page`;
  return anchorsOfFile(page).has(anchor) ? undefined : `no heading with anchor #${anchor} in ${page}`;
}

const pages = ['README.md', ...filesUnder('docs', (n) => n.endsWith('.md')), ...filesUnder('bench', (n) => n.endsWith('.md'))];
const sources = ['src', 'test', 'bench', 'demo', 'scripts', 'config', 'deploy', '.ci']
  .flatMap((d) => [...filesUnder(d, (n) => /\.(ts|mjs|js|cjs|ya?ml|sh|json)$/.test(n) || n === 'run')])
  .concat(['Dockerfile', 'docker-compose.yml', 'eslint.config.js', '.dependency-cruiser.cjs'].filter((f) => existsSync(f)));

/** A page cited by its repo path in a comment or string, with an optional `#anchor`. */
const CITED = /(?<![\w./-])((?:docs\/[\w./-]+|README)\.md)(?:#([\w-]+))?/g;
/** The older style: a page followed by a section title in double quotes, which must be a heading of that page. */
const BY_TITLE = /(?<![\w./-])(README(?:\.md)?|docs\/[\w.-]+\.md),?\s*\(?"([^"\n]+)"/g;

test('every page and anchor cited in src/, test/, bench/, demo/, scripts/, config/ and deploy/ exists', () => {
  const bad: string[] = [];
  let cited = 0;
  for (const file of sources) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(CITED)) {
      cited++;
      const problem = problemOf(m[1]!, m[2]); // group 1 always takes part in a match
      if (problem !== undefined) bad.push(`${file}: ${m[0]}: ${problem}`);
    }
    for (const m of text.matchAll(BY_TITLE)) {
      const page = m[1]!.startsWith('README') ? 'README.md' : m[1]!; // group 1 always takes part in a match
      const anchor = slug(m[2]!);
      if (problemOf(page, anchor) !== undefined) bad.push(`${file}: ${m[0]}: no section "${m[2]}" in ${page} (cite it as ${page}#<anchor>)`);
    }
  }
  assert.deepEqual(bad, []);
  assert.ok(cited > 100, `only ${cited} citations found: the pattern no longer matches how the code cites the docs`);
});

test('every relative link of the README and the docs reaches a file, and a page link its heading', () => {
  const bad: string[] = [];
  for (const page of pages) {
    for (const { target, line } of linksOf(readFileSync(page, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: are not files of the repo
      const hash = target.indexOf('#');
      const path = hash < 0 ? target : target.slice(0, hash);
      const anchor = hash < 0 ? undefined : target.slice(hash + 1);
      const resolved = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path)));
      const problem = problemOf(resolved, anchor);
      if (problem !== undefined) bad.push(`${page}:${line}: (${target}): ${problem}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('anchors are GitHub heading slugs, repeated headings numbered, headings in code fences ignored', () => {
  assert.equal(slug('Metrics (`GET /metrics`)'), 'metrics-get-metrics');
  assert.equal(slug('Gateway error codes (`GATEWAY_ERR_*`)'), 'gateway-error-codes-gateway_err_');
  assert.equal(slug('Several gateway replicas (Redis)'), 'several-gateway-replicas-redis');
  assert.equal(slug('Clients: BENCH and GEN'), 'clients-bench-and-gen');
  assert.deepEqual([...anchorsOf('# A\n## Notes\n```sh\n# not a heading\n```\n## Notes\n')], ['a', 'notes', 'notes-1']);
  assert.deepEqual(linksOf('[a](x.md#y) `[b](not-a-link.md)`\n```\n[c](in-code.md)\n```\n'), [{ target: 'x.md#y', line: 1 }]);
});
