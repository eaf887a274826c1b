/**
 * The hot path's counts, added to their prom-client series when the registry is read: each prom-client inc builds
 * a key string and checks every label name, while a cell once made allocates nothing.
 */

interface Target<L extends string> {
  inc(labels: Partial<Record<L, string>>, value: number): void;
}

interface Cell<L extends string> {
  readonly labels: Partial<Record<L, string>>;
  pending: number;
  /** In `dirty` until the next flush. */
  listed: boolean;
}

type Level<C> = Map<string, C>;

/** Up to four labels, `names` in the order the values are given; a value left out is ''. */
export class MetricCells<L extends string> {
  private readonly tree: Level<Level<Level<Level<Cell<L>>>>> = new Map();
  private readonly dirty: Cell<L>[] = [];

  constructor(
    private readonly names: readonly L[],
    private readonly target: Target<L>,
  ) {}

  /** `n` negative for a gauge going down. */
  add(n: number, a: string, b = '', c = '', d = ''): void {
    const cell = this.cell(a, b, c, d);
    cell.pending += n;
    if (!cell.listed) {
      cell.listed = true;
      this.dirty.push(cell);
    }
  }

  flush(): void {
    for (const cell of this.dirty.splice(0)) {
      const n = cell.pending;
      cell.pending = 0;
      cell.listed = false;
      if (n !== 0) this.target.inc(cell.labels, n);
    }
  }

  private cell(a: string, b: string, c: string, d: string): Cell<L> {
    const l3 = child(child(child(this.tree, a), b), c);
    let cell = l3.get(d);
    if (cell === undefined) {
      const labels: Partial<Record<L, string>> = {};
      const values = [a, b, c, d];
      this.names.forEach((name, i) => {
        labels[name] = values[i];
      });
      l3.set(d, (cell = { labels, pending: 0, listed: false }));
    }
    return cell;
  }
}

function child<C>(level: Map<string, Map<string, C>>, key: string): Map<string, C> {
  let next = level.get(key);
  if (next === undefined) level.set(key, (next = new Map()));
  return next;
}
