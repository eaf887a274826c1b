/**
 * The response cache's key (docs/cache.md#the-key): SHA-256 over everything that decides an input's answer and
 * whose it is. Never the request_id nor the input id: a rerun draws fresh request_ids and reuses slot ids.
 */
import { createHash, type Hash } from 'node:crypto';
import { memoryWithoutTag } from '../protocol/memory-tag.js';
import type { InputSlices } from '../protocol/request/raw-json.js';

/** Bumped whenever what a key covers or an entry's layout changes: old entries are then never read. */
const KEY_VERSION = 'magma-gateway-cache/2';

export interface KeyTarget {
  owner: string;
  agent: string;
  route: string;
  /** `backend:<name>@<identity>`, or for a new trajectory on a split every arm (see cache-lookup.ts). */
  target: string;
  generations: readonly string[];
}

/** A field's bytes, length-prefixed: no two different inputs hash the same bytes. */
function field(h: Hash, name: string, pieces: readonly Buffer[]): void {
  let n = 0;
  for (const p of pieces) n += p.length;
  h.update(`\u0000${name}:${n}:`);
  for (const p of pieces) h.update(p);
}

function span(raw: InputSlices, s: { start: number; end: number }): Buffer {
  return raw.buf.subarray(s.start, s.end);
}

export function cacheKey(t: KeyTarget, raw: InputSlices, numOutputs: number): string {
  const h = createHash('sha256');
  h.update(KEY_VERSION);
  field(h, 'gen', [Buffer.from(t.generations.join(','), 'utf8')]);
  field(h, 'owner', [Buffer.from(t.owner, 'utf8')]);
  field(h, 'agent', [Buffer.from(t.agent, 'utf8')]);
  field(h, 'route', [Buffer.from(t.route, 'utf8')]);
  field(h, 'target', [Buffer.from(t.target, 'utf8')]);
  field(h, 'instruction', [span(raw, raw.index.instructionSpan)]);
  field(h, 'tools', [raw.tools.bytes()]);
  field(h, 'attributes', [raw.attributes.bytes()]);
  field(h, 'memory', memoryWithoutTag(raw));
  field(h, 'num_outputs', [Buffer.from(String(numOutputs), 'latin1')]);
  field(h, 'extra_keys', [raw.extraKeys.bytes()]);
  return h.digest('base64url');
}

/** A redeployed agent never serves its predecessor's answers. */
export function backendTarget(backend: string, identity: string): string {
  return `${backend}@${identity}`;
}

/** Per client, so no tenant learns from a hit that another sent the same input (docs/cache.md#clients). */
export function cacheOwner(client: string | undefined, sharedAcrossClients: boolean): string {
  return client === undefined || sharedAcrossClients ? '*' : `client:${client}`;
}
