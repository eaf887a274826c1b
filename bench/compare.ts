/**
 * Compares two saved bench runs without running anything: the same comparison as `npm run bench -- --compare`,
 * between an earlier latest.json and a later one (both written by bench/run-bench.ts).
 *
 *   node dist/bench/compare.js BEFORE.json AFTER.json [--tolerance PCT]
 *
 * Prints the comparison as Markdown; exit code 0 (a figure never fails), 2 on a usage error.
 */
import { parseArgs } from 'node:util';
import { compareResults, readResults, renderComparison } from './lib/compare.js';
import { tableThresholds } from './lib/run.js';

function main(): number {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { tolerance: { type: 'string', default: '10' } } });
  const tolerancePct = Number(values.tolerance);
  if (positionals.length !== 2 || !Number.isFinite(tolerancePct) || tolerancePct < 0) {
    process.stderr.write('usage: node dist/bench/compare.js BEFORE.json AFTER.json [--tolerance PCT]\n');
    return 2;
  }
  const [beforeFile, afterFile] = positionals as [string, string];
  const c = compareResults(readResults(beforeFile), readResults(afterFile), beforeFile, tableThresholds(), tolerancePct);
  process.stdout.write(renderComparison(c).join('\n') + '\n');
  return 0;
}

process.exitCode = main();
