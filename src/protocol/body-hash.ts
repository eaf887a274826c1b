import * as crypto from 'node:crypto';

/**
 * crypto.hash, Node 20.12 and later: one call with no Hash object to build, half the cost of createHash for a
 * small body. Read off the namespace because the engines range starts before it existed (undefined there).
 */
const oneShotHash: typeof crypto.hash | undefined = crypto.hash;

/**
 * The body hash replay compares: SHA-256 of the request body's bytes as received. Two batches replay each
 * other only when byte-identical, the safe reading of "the same body".
 */
export function hashBody(body: string | Uint8Array): string {
  return oneShotHash !== undefined ? oneShotHash('sha256', body, 'base64url') : crypto.createHash('sha256').update(body).digest('base64url');
}
