/** "Did you mean ...?" for a mistyped config key, option or subcommand. */

/** Adjacent transpositions count as one edit ("prot" -> "port"); stops early once over `max`. */
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

/** Rows are b.length + 1 long and no j read is over b.length: the fallback is never taken. */
function cell(row: readonly number[], j: number): number {
  return row[j] ?? Infinity;
}

/** At most 1 edit for short names, 2 from 5 characters, 3 from 10; ties go to the earlier candidate. */
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
