/** The secret that signs memory tags (docs/experiments.md#signed-tags): HMAC-SHA256, 16 bytes kept. */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { TagSigner } from '../protocol/memory-tag.js';
import type { Claims, StoreHealth } from '../state/types.js';

export const TAG_SECRET_ENV = 'MAGMA_GATEWAY_TAG_SECRET';
export const TAG_SECRET_KEY = 'experiments:tag-secret';
/** How long a generated secret lives in the store: longer than any trajectory (a lost secret only restarts them). */
const GENERATED_TTL_MS = 10 * 365 * 24 * 3600 * 1000;
const SIG_BYTES = 16;

export type TagSecretSource = 'config' | 'environment' | 'store' | 'process';

export function hmacSigner(secret: string): TagSigner {
  const mac = (text: string): Buffer => createHmac('sha256', secret).update(text, 'utf8').digest().subarray(0, SIG_BYTES);
  return {
    sign: (text) => mac(text).toString('base64url'),
    verify: (text, sig) => {
      const given = Buffer.from(sig, 'base64url');
      const want = mac(text);
      return given.length === want.length && timingSafeEqual(given, want);
    },
  };
}

export function tagSecretSource(configured: string | undefined, env: NodeJS.ProcessEnv, store: 'memory' | 'redis'): TagSecretSource {
  if (configured !== undefined && configured !== '') return 'config';
  if (env[TAG_SECRET_ENV] !== undefined && env[TAG_SECRET_ENV] !== '') return 'environment';
  return store === 'redis' ? 'store' : 'process';
}

/** Rejects when Redis answered from this process's fallback: other replicas would reject its tags. */
export async function loadTagSecret(configured: string | undefined, env: NodeJS.ProcessEnv, store: { claims: Pick<Claims, 'claim'> } & Pick<StoreHealth, 'kind' | 'stats'>): Promise<string> {
  if (configured !== undefined && configured !== '') return configured;
  const fromEnv = env[TAG_SECRET_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const fallbacks = store.stats().fallbacks;
  const c = await store.claims.claim(TAG_SECRET_KEY, randomBytes(32).toString('base64url'), GENERATED_TTL_MS);
  if (store.kind === 'redis' && store.stats().fallbacks !== fallbacks) throw new GatewayError('GATEWAY_ERR_STATE_UNAVAILABLE', 'Redis did not answer: the replicas\' shared tag secret is unknown');
  return c.value;
}
