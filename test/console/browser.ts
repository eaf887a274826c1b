/**
 * The system's Chromium (Debian's `chromium` package; `.ci/run` installs it) driven by playwright-core, which
 * never downloads a browser. Missing: the test fails saying so, it never skips.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function chromiumPath(): string {
  const found = CANDIDATES.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
  if (found === undefined) {
    throw new Error('chromium is missing: the console tests need a real browser (apt-get install -y chromium, or set CHROMIUM_PATH)');
  }
  return found;
}

export function launchBrowser(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium refuses its sandbox.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}
