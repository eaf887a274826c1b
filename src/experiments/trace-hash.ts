/**
 * The running hash of the instructions a trajectory received (docs/experiments.md#outcomes-from-bench): what
 * joins a BENCH episode, which records no memory, request_id or slot, to the gateway's trajectory. The gateway
 * updates it with each input's instruction; `magma-gateway outcomes import` recomputes it from an episode's
 * trace. Both sides call the functions here, so they cannot drift apart.
 *
 * h_0 = SHA-256("magma-gateway trace v1"); h_k = SHA-256(h_{k-1} (32 bytes) || role || 0x00 || content), role and
 * content as UTF-8 bytes, role the BENCH trace role of the instruction type (`user` -> USER, `env` -> SYSTEM).
 * The previous hash has a fixed length and a role holds no NUL, so every sequence of pairs has its own input.
 * Linear in the content: one pass of SHA-256 per instruction.
 */
import { createHash } from 'node:crypto';

export const TRACE_HASH_SEED = createHash('sha256').update('magma-gateway trace v1', 'utf8').digest('hex');

const NUL = Buffer.from([0]);

/** BENCH's trace role of an instruction type. */
export function traceRole(type: 'user' | 'env'): 'USER' | 'SYSTEM' {
  return type === 'user' ? 'USER' : 'SYSTEM';
}

/** The hash after one more (role, content) pair. */
export function nextTraceHash(previous: string, role: string, content: string): string {
  return createHash('sha256')
    .update(Buffer.from(previous, 'hex'))
    .update(role, 'utf8')
    .update(NUL)
    .update(content, 'utf8')
    .digest('hex');
}

/** The hash of a whole sequence of (role, content) pairs, in order. */
export function traceHash(pairs: Iterable<{ role: string; content: string }>): string {
  let h = TRACE_HASH_SEED;
  for (const p of pairs) h = nextTraceHash(h, p.role, p.content);
  return h;
}
