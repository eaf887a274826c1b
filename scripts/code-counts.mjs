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
// Usage: node scripts/code-counts.mjs [--list]   (--list names every site counted)
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
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
      sym = checker.getImmediateAliasedSymbol(sym);
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
