/**
 * A BENCH results directory read as untrusted input: regular files only, never through a link (lstat, then
 * O_NOFOLLOW | O_NONBLOCK so a swapped-in FIFO cannot hang the open, then fstat), each bounded before it is read.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, opendirSync, readSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { GatewayError } from '../errors.js';

export interface ResultLimits {
  maxFileBytes: number;
  /** `--max-files`: entries under `scenarios/`, every directory together. */
  maxFiles: number;
}

export interface Skipped {
  file: string;
  reason: string;
}

const LINK = 'a symbolic link (not followed)';

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return LINK;
  if (st.isFIFO()) return 'a FIFO, not a regular file';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device, not a regular file';
  if (st.isSocket()) return 'a socket, not a regular file';
  if (st.isDirectory()) return 'a directory';
  return 'not a regular file';
}

function tooLarge(bytes: number, limit: number): string {
  return `${bytes} bytes, over --max-episode-mb (${limit} bytes): not read`;
}

// Absent where the platform has no such flag (Windows): lstat and the fstat check still hold there.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** Never follows a link, never reads past `maxBytes`. */
export function readResultFile(path: string, maxBytes: number): { text: string } | { skip: string } {
  let seen: Stats;
  try {
    seen = lstatSync(path);
  } catch (err) {
    return { skip: err instanceof Error ? err.message : String(err) };
  }
  if (!seen.isFile()) return { skip: kindOf(seen) };
  if (seen.size > maxBytes) return { skip: tooLarge(seen.size, maxBytes) };
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS);
  } catch (err) {
    const code = err instanceof Error && 'code' in err ? String(err.code) : '';
    return { skip: code === 'ELOOP' ? LINK : err instanceof Error ? err.message : String(err) };
  }
  try {
    const open = fstatSync(fd);
    if (!open.isFile() || open.dev !== seen.dev || open.ino !== seen.ino) return { skip: 'replaced while being read: not read' };
    if (open.size > maxBytes) return { skip: tooLarge(open.size, maxBytes) };
    // One byte more than allowed: a file growing as it is read is caught, not read on.
    const buf = Buffer.allocUnsafe(Math.min(open.size, maxBytes) + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
      if (got > maxBytes) return { skip: tooLarge(got, maxBytes) };
      if (got === buf.length) return { skip: 'grew while being read: not read' };
    }
    return { text: buf.toString('utf8', 0, got) };
  } catch (err) {
    return { skip: err instanceof Error ? err.message : String(err) };
  } finally {
    closeSync(fd);
  }
}

class Budget {
  private used = 0;
  constructor(private readonly max: number, private readonly root: string) {}

  take(): void {
    this.used += 1;
    if (this.used > this.max) {
      throw new GatewayError(
        'GATEWAY_ERR_USAGE',
        `${this.root}: more than ${this.max} entries under scenarios/ (--max-files ${this.max}): nothing was posted; raise --max-files or import a smaller directory`,
      );
    }
  }
}

function entries(dir: string, budget: Budget, skipped: Skipped[]): { name: string; dir: boolean; link: boolean }[] {
  let st: Stats;
  try {
    st = lstatSync(dir);
  } catch {
    return [];
  }
  if (!st.isDirectory()) {
    skipped.push({ file: dir, reason: kindOf(st) });
    return [];
  }
  const out: { name: string; dir: boolean; link: boolean }[] = [];
  const d = opendirSync(dir);
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) {
      budget.take();
      out.push({ name: e.name, dir: e.isDirectory(), link: e.isSymbolicLink() });
    }
  } finally {
    d.closeSync();
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `scenarios/.partial/<scenario>/episodes/*.json` first, so an episode in both is taken from its final place. */
export function episodeFiles(root: string, maxFiles: number, skipped: Skipped[]): string[] {
  const budget = new Budget(maxFiles, root);
  const scenarios = join(root, 'scenarios');
  const underScenarios = (base: string): string[] =>
    entries(base, budget, skipped)
      .filter((e) => e.name !== '.partial')
      .flatMap((e) => {
        const path = join(base, e.name);
        if (!e.dir) {
          // A link where a scenario directory belongs is named; plain files there are not BENCH's.
          if (e.link) skipped.push({ file: path, reason: LINK });
          return [];
        }
        const episodes = join(path, 'episodes');
        return entries(episodes, budget, skipped).filter((f) => f.name.endsWith('.json')).map((f) => join(episodes, f.name));
      });
  return [...underScenarios(join(scenarios, '.partial')), ...underScenarios(scenarios)];
}
