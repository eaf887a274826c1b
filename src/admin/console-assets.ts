/**
 * The console's built files (docs/console.md): `npm run build` bundles console/src into dist/console/, beside
 * the compiled gateway, and the admin listener serves them at `/`. They hold no data, so they are served without
 * the admin token (plugins/auth.ts asks this module which paths they are); every data endpoint stays protected.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/console, from this file's place in dist/src/admin. */
export const CONSOLE_ROOT = fileURLToPath(new URL('../../console/', import.meta.url));

/** The file names in the console's folder (flat), or none when the front end was not built. */
export function consoleFiles(root = CONSOLE_ROOT): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((f) => statSync(join(root, f)).isFile());
}

/** The URL paths of the console's page and assets: `/` and `/<file>` for each built file. */
export function consolePaths(files: readonly string[]): ReadonlySet<string> {
  return new Set(files.length === 0 ? [] : ['/', ...files.map((f) => `/${f}`)]);
}
