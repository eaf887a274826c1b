/**
 * The response cache's key (docs/cache.md#the-key): SHA-256 over everything that decides an input's answer
 * and whose it is, nothing else. The client that caused the entry (tenants apart, docs/cache.md#clients), the
 * agent (virtual agents apart), the route, the backend that would serve it with the
 * identity its /v1/info announced (a redeployed agent never serves its predecessor's answers), the generations
 * of the scopes an admin DELETE can empty, and the input's exact bytes: instruction, tools, attributes, memory
 * without the gateway's tag member, num_outputs and extra_keys. Never the request_id nor the input id: a rerun
 * draws fresh request_ids and reuses slot ids. Pure.
 */
import { createHash, type Hash } from 'node:crypto';
import { memoryWithoutTag } from '../protocol/memory-tag.js';
import type { InputSlices } from '../protocol/request/raw-json.js';

/** Bumped whenever what a key covers or an entry's layout changes: old entries are then never read. */
const KEY_VERSION = 'magma-gateway-cache/2';

/** Who would answer an input, as the key names it. */
export interface KeyTarget {
  /** Whose entry it is: `cacheOwner`'s answer. */
  owner: string;
  agent: string;
  route: string;
  /** `backend:<name>@<identity>`, or for a new trajectory on a split every arm (see cache-lookup.ts). */
  target: string;
  /** The generation of each scope the entry belongs to, in a fixed order. */
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

/** The key of one input's candidates (base64url, 43 characters). */
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

/** What the key names of a backend: its name and the agent_id and agent_version it announced. */
export function backendTarget(backend: string, identity: string): string {
  return `${backend}@${identity}`;
}

/**
 * Whose entries a batch reads and writes: its client's (`client:<name>`) when `clients:` is configured, so one
 * tenant never receives another's answer nor learns from a hit that another sent the same input; everyone's
 * (`*`) without clients or with `cache.shared_across_clients` (docs/cache.md#clients).
 */
export function cacheOwner(client: string | undefined, sharedAcrossClients: boolean): string {
  return client === undefined || sharedAcrossClients ? '*' : `client:${client}`;
}
