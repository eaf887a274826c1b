/** Hashed first: timingSafeEqual needs equal lengths, and a secret's length must not show in the timing. */
import { createHash, timingSafeEqual } from 'node:crypto';

export function keyDigest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return timingSafeEqual(a, b);
}

export function tokenMatches(given: string, expected: string): boolean {
  return digestsEqual(keyDigest(given), keyDigest(expected));
}

/** `Authorization: Bearer <token>`, the scheme case-insensitive (RFC 6750). */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
}
