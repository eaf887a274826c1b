/**
 * The running hash of a trajectory's instructions (docs/experiments.md#outcomes-from-bench): what joins a BENCH
 * episode, which records no memory or request_id, to the gateway's trajectory; the gateway and `outcomes import`
 * both call these functions. h_k = SHA-256(h_{k-1} || role || 0x00 || content): the previous hash has a fixed
 * length and a role holds no NUL, so every sequence of pairs has its own input.
 */
import { createHash } from 'node:crypto';

export const TRACE_HASH_SEED = createHash('sha256').update('magma-gateway trace v1', 'utf8').digest('hex');

const NUL = Buffer.from([0]);

export function traceRole(type: 'user' | 'env'): 'USER' | 'SYSTEM' {
  return type === 'user' ? 'USER' : 'SYSTEM';
}

export function nextTraceHash(previous: string, role: string, content: string): string {
  return createHash('sha256')
    .update(Buffer.from(previous, 'hex'))
    .update(role, 'utf8')
    .update(NUL)
    .update(content, 'utf8')
    .digest('hex');
}

export function traceHash(pairs: Iterable<{ role: string; content: string }>): string {
  let h = TRACE_HASH_SEED;
  for (const p of pairs) h = nextTraceHash(h, p.role, p.content);
  return h;
}
