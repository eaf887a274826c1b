/**
 * Building the candidates the gateway returns: a backend's candidate re-addressed to the client's request, or
 * an error candidate in its normal position (docs/protocol-fidelity.md#failures; docs/protocol-fidelity.md#agent-and-http-errors:
 * an error candidate
 * keeps complete memory). Every candidate carries the memory tag (docs/routing.md#the-memory-key-and-stickiness).
 */
import type { GatewayErrorCode } from '../errors.js';
import type { IndexedAgentInput } from '../protocol/request/indexed-request.js';
import type { AgentError, AgentInput, AgentOutput, JsonObject } from '../protocol/types.js';
import { sameTag, stripMemoryKey, tagMemory, type MemoryTag } from '../routing/memory-tag.js';

export function fromBackend(
  requestId: string,
  input: AgentInput,
  candidateIndex: number,
  cand: AgentOutput,
  memoryKey: string,
  tag: MemoryTag,
): AgentOutput {
  return {
    request_id: requestId,
    source_id: input.id,
    candidate_index: candidateIndex,
    status: cand.status,
    memory: tagMemory(cand.memory, memoryKey, tag),
    internal_steps: cand.internal_steps,
    output: cand.output,
    error: cand.error,
  };
}

/**
 * The input's memory with the tag, built once per (memory, tag) and shared by every error candidate of that input:
 * 1000 error candidates of a 5,000-key memory would otherwise copy 5 million properties, seconds of event loop
 * during which no other client is served. Candidates are only serialized, never mutated, so sharing is safe.
 */
const taggedCache = new WeakMap<JsonObject, { key: string; tag: MemoryTag; memory: JsonObject }>();

function taggedInputMemory(memory: JsonObject, key: string, tag: MemoryTag): JsonObject {
  const hit = taggedCache.get(memory);
  if (hit !== undefined && hit.key === key && sameTag(hit.tag, tag)) return hit.memory;
  const tagged = tagMemory(stripMemoryKey(memory, key), key, tag);
  taggedCache.set(memory, { key, tag, memory: tagged });
  return tagged;
}

/** A candidate the gateway failed: its error is always set. */
type ErrorCandidate = AgentOutput & { status: 'error'; error: AgentError };

export function errorCandidate(
  requestId: string,
  input: IndexedAgentInput,
  candidateIndex: number,
  code: GatewayErrorCode,
  message: string,
  backend: string,
  memoryKey: string,
  tag: MemoryTag,
): ErrorCandidate {
  const error = { code, message: message || code, component: backend };
  // The answer writes the input's memory from the body (answer-bytes.ts), so the decoded memory is built only
  // if something reads it. The key order is the candidate's: memory in its place.
  const out = { request_id: requestId, source_id: input.id, candidate_index: candidateIndex, status: 'error' as const };
  Object.defineProperty(out, LAZY_MEMORY, { value: { input, memoryKey, tag } satisfies LazyMemory, enumerable: false });
  Object.defineProperty(out, 'memory', MEMORY_FIELD);
  // `memory` is defined just above; the rest follow it, in the contract's order.
  return Object.assign(out as typeof out & { memory: JsonObject }, { internal_steps: [], output: null, error });
}

/** What an error candidate's memory accessor reads, and what it built (once). */
interface LazyMemory {
  readonly input: IndexedAgentInput;
  readonly memoryKey: string;
  readonly tag: MemoryTag;
  memory?: JsonObject;
}

const LAZY_MEMORY = Symbol('error candidate memory');

/**
 * Shared by every error candidate of an indexed input. Not an object literal's getter, a new function per
 * candidate: V8 kept such candidates (with the input they reach) alive through young-generation GCs until the
 * next full one (docs/performance.md#batches-die-young).
 */
const MEMORY_FIELD: PropertyDescriptor = {
  get: function (this: { readonly [LAZY_MEMORY]: LazyMemory }): JsonObject {
    const m = this[LAZY_MEMORY];
    return (m.memory ??= taggedInputMemory(m.input.memory, m.memoryKey, m.tag));
  },
  enumerable: true,
  configurable: true,
};
