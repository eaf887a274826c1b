/**
 * Client connections never take every descriptor: at the limit the gateway's own backend connections, Redis and
 * probes fail too (docs/configuration.md#limits-and-timeouts).
 */
import { readFileSync } from 'node:fs';

/** The soft limit from /proc/self/limits (Linux); undefined elsewhere or when unlimited. */
export function openFileLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('Max open files')) continue;
    const n = Number(line.slice('Max open files'.length).trim().split(/\s+/)[0]);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  }
  return undefined;
}

/** At most three quarters of the open-file limit. */
export function clientConnectionCap(configured: number, fileLimit: number | undefined = openFileLimit()): number {
  if (fileLimit === undefined) return configured;
  return Math.max(1, Math.min(configured, Math.floor(fileLimit * 0.75)));
}
