import { hash } from 'node:crypto';

/** Batches replay each other only when byte-identical, the safe reading of "the same body"; one-shot, half createHash's cost. */
export function hashBody(body: string | Uint8Array): string {
  return hash('sha256', body, 'base64url');
}
