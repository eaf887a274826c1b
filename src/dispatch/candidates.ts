/** Error candidates keep complete memory (docs/protocol-fidelity.md#agent-and-http-errors). */
import type { GatewayErrorCode } from '../errors.js';
import { taggedInputMemory, type MemoryTag } from '../protocol/memory-tag.js';
import type { PartsWriter } from '../protocol/answer/answer-body.js';
import type { IndexedAgentInput } from '../protocol/request/indexed-request.js';
import type { AgentError, JsonObject } from '../protocol/types.js';
import { BytesCandidate, type CandidateWriter } from './answer-bytes.js';

/** Written from its input's bytes; its memory is decoded only if something reads it. */
export class ErrorCandidate extends BytesCandidate {
  readonly #writer: CandidateWriter;
  readonly #input: IndexedAgentInput;
  readonly #memoryBytes: readonly Buffer[];
  readonly #error: AgentError;
  #memory: JsonObject | undefined = undefined;

  constructor(
    writer: CandidateWriter,
    requestId: string,
    input: IndexedAgentInput,
    candidateIndex: number,
    code: GatewayErrorCode,
    message: string,
    backend: string,
    tag: MemoryTag,
  ) {
    super(requestId, input.id, candidateIndex, 'error', tag);
    this.#writer = writer;
    this.#input = input;
    this.#memoryBytes = writer.errorMemory(input.raw, tag);
    this.#error = { code, message: message || code, component: backend };
  }

  get memory(): JsonObject {
    return (this.#memory ??= taggedInputMemory(this.#input.memory, this.#writer.memoryKey, this.memoryTag()));
  }

  get internal_steps(): JsonObject[] {
    return [];
  }

  get output(): null {
    return null;
  }

  get error(): AgentError {
    return this.#error;
  }

  writeTo(w: PartsWriter): void {
    this.#writer.writeError(w, this.#input.raw, this.candidate_index, this.#memoryBytes, this.#error);
  }
}
