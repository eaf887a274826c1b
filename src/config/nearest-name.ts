/**
 * "Did you mean ...?" for a mistyped name (a config key, a command-line option or subcommand): the known name
 * nearest by edit distance, when it is near enough to be a typo. Only names from the operator's own config
 * or command line reach it, and the candidate lists are a few dozen short names, so the cost is trivial.
 */
import { GatewayError } from '../errors.js';

/**
 * Edit distance with adjacent transpositions counted as one edit ("prot" -> "port"), stopping early once it
 * exceeds `max`.
 */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(cell(prev, j) + 1, cell(cur, j - 1) + 1, cell(prev, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, cell(before, j - 2) + 1);
      cur.push(v);
      if (v < best) best = v;
    }
    if (best > max) return max + 1;
    before = prev;
    prev = cur;
  }
  return cell(prev, b.length);
}

/** Cell j of a row: rows are b.length + 1 long and every j read is at most b.length, so one is always there. */
function cell(row: readonly number[], j: number): number {
  const v = row[j];
  if (v === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `edit distance cell ${j} of a row of ${row.length}`);
  return v;
}

/**
 * The known name nearest to `name` when it is close enough to be a typo (at most 1 edit for short names,
 * 2 from 5 characters, 3 from 10), else undefined. Ties go to the earlier candidate.
 */
export function closest(name: string, candidates: readonly string[]): string | undefined {
  const max = name.length < 5 ? 1 : name.length < 10 ? 2 : 3;
  let best: string | undefined;
  let bestD = max + 1;
  for (const c of candidates) {
    const d = editDistance(name.toLowerCase(), c.toLowerCase(), max);
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}
