/**
 * Secrets compared without the timing telling anything: the admin token (plugins/auth.ts) and client keys
 * (client-table.ts). Hashing first gives both sides the same length (timingSafeEqual needs it), so neither a
 * secret's length nor the position of the first differing byte shows in the timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The SHA-256 of a secret or of a candidate for one: what the comparisons below compare. */
export function keyDigest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Two digests from keyDigest, compared in constant time. */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return timingSafeEqual(a, b);
}

/** Constant-time comparison of a given token with the expected one. */
export function tokenMatches(given: string, expected: string): boolean {
  return digestsEqual(keyDigest(given), keyDigest(expected));
}

/** The token from `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750), else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m?.[1];
}
