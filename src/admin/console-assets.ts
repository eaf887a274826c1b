/** The console's built files (docs/console.md): they hold no data, so they are served without the admin token. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/console, from this file's place in dist/src/admin. */
export const CONSOLE_ROOT = fileURLToPath(new URL('../../console/', import.meta.url));

export function consoleFiles(root = CONSOLE_ROOT): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((f) => statSync(join(root, f)).isFile());
}

export function consolePaths(files: readonly string[]): ReadonlySet<string> {
  return new Set(files.length === 0 ? [] : ['/', ...files.map((f) => `/${f}`)]);
}
