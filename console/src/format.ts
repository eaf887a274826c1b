/** How numbers are written on the pages. */
import type { Interval } from './report.js';

export const pct = (x: number | null | undefined, digits = 1): string => (x === null || x === undefined ? '–' : `${(x * 100).toFixed(digits)}%`);

/** A difference of rates in percentage points, signed. */
export const pp = (x: number | null | undefined): string =>
  x === null || x === undefined ? '–' : `${x > 0 ? '+' : x < 0 ? '−' : ''}${Math.abs(x * 100).toFixed(1)} pp`;

export const ci = (c: Interval, unit: (x: number) => string): string => (c === null ? '–' : `[${unit(c[0])}, ${unit(c[1])}]`);

/** Milliseconds with the precision a small figure needs: 0.412 ms, 3.21 ms, 45 ms. */
export const ms = (x: number | null | undefined): string =>
  x === null || x === undefined ? '–' : x < 1 ? `${x.toFixed(3)} ms` : x < 10 ? `${x.toFixed(2)} ms` : `${Math.round(x)} ms`;

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export const pValue = (p: number | null | undefined): string => (p === null || p === undefined ? '–' : p < 0.0001 ? 'p < 0.0001' : `p = ${p.toFixed(4)}`);

export function duration(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  return m > 0 ? `${m}m ${s % 60}s` : `${s}s`;
}

export const time = (iso: string | null | undefined): string => (iso === null || iso === undefined ? '–' : new Date(iso).toLocaleTimeString());

/** `{a: 2, b: 1}` as `a 2 · b 1`, or a dash when empty. */
export const tally = (c: Record<string, number> | null | undefined): string => {
  const e = Object.entries(c ?? {});
  return e.length === 0 ? '–' : e.map(([k, n]) => `${k} ${n}`).join(' · ');
};
