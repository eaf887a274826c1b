/** The (input, candidate) slots of one batch: the only writer of the slots, the error counts and the leg outcomes. */
import { countedCode, GatewayError, type AttemptFailure, type GatewayErrorCode } from '../errors.js';
import type { IndexedCandidate, Slot } from '../protocol/answer/response-check.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AgentOutput } from '../protocol/types.js';
import type { CallOutcome, LegOutcome } from './batch-types.js';
import type { MetricsBatchObserver } from './batch-observer.js';
import type { Item } from './batch-item.js';
import { candidateTagOf, tagWithFlag } from '../protocol/memory-tag.js';
import { CandidateWriter } from './answer-bytes.js';
import { ErrorCandidate } from './candidates.js';

export class BatchSlots {
  private readonly slots: AgentOutput[][];
  readonly errorCodes: Record<string, number> = {};
  readonly legs: LegOutcome[] = [];
  readonly calls: CallOutcome[] = [];
  private readonly writer: CandidateWriter;

  constructor(
    private readonly request: IndexedAgentRequest,
    memoryKey: string,
    private readonly observer: MetricsBatchObserver,
  ) {
    this.slots = request.inputs.map((inp) => new Array<AgentOutput>(inp.num_outputs));
    this.writer = new CandidateWriter(request.request_id, memoryKey);
  }

  private error(it: Item, idx: number, code: GatewayErrorCode, message: string): AgentOutput {
    // An error candidate marks its trajectory, so the recorder counts the trajectory once however it goes on.
    const tag = tagWithFlag(candidateTagOf(it), 'c');
    return new ErrorCandidate(this.writer, this.request.request_id, it.input, idx, code, message, it.backend, tag);
  }

  private rowOf(it: Item): AgentOutput[] {
    const row = this.slots[it.index];
    if (row === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `the plan has an item for input ${it.index}, which the request does not have`);
    return row;
  }

  private leg(it: Item, ms: number | undefined): void {
    this.legs.push({ input: it.index, backend: it.backend, route: it.route, arm: it.arm, ms });
  }

  /** `ms`: the sub-request's time, if one ran. */
  fail(items: readonly Item[], f: AttemptFailure, ms?: number): void {
    for (const it of items) {
      this.leg(it, ms);
      const row = this.rowOf(it);
      for (let c = 0; c < it.count; c++) row[it.offset + c] = this.error(it, it.offset + c, f.code, f.message);
      this.countFailed(it, f.code, it.count);
    }
  }

  private countFailed(it: Item, code: GatewayErrorCode, n: number): void {
    count(this.errorCodes, code, n);
    this.observer.candidatesFilled(it.route, it.backend, 'error', n);
    this.observer.gatewayErrors(it.backend, code, n);
  }

  /** A malformed or missing slot fails only itself, unless `leaveBad(item)`: then its fallback fills it. */
  answer(
    items: readonly Item[],
    rows: Slot<IndexedCandidate>[][],
    ms: number,
    leaveBad: (it: Item) => boolean = () => false,
  ): void {
    items.forEach((it, k) => {
      this.leg(it, ms);
      const out = this.rowOf(it);
      const row = rows[k];
      if (row === undefined || row.length < it.count) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a checked answer has no row for item ${k}`);
      const skip = leaveBad(it);
      row.slice(0, it.count).forEach((slot, c) => {
        if (skip && !slot.ok) return;
        out[it.offset + c] = this.candidate(it, c, slot);
      });
    });
  }

  /** Candidate `c` of `it` from its checked slot, counted as answer() counts it but not kept (a streamed answer). */
  candidate(it: Item, c: number, slot: Slot<IndexedCandidate>): AgentOutput {
    const { request } = this;
    const input = it.input;
    const idx = it.offset + c;
    let out: AgentOutput;
    if (!slot.ok) out = this.error(it, idx, 'gateway_backend_invalid_response', slot.reason);
    else {
      const cand = slot.candidate;
      const tag = cand.index.status === 'error' ? tagWithFlag(candidateTagOf(it), 'c') : candidateTagOf(it);
      out = this.writer.fromIndexed(request.request_id, input, idx, cand, tag);
    }
    this.observer.candidatesFilled(it.route, it.backend, out.status, 1);
    if (out.error) {
      count(this.errorCodes, countedCode(out.error.code), 1);
      this.observer.backendError(it.backend, out.error.code);
    }
    return out;
  }

  /** Candidate `c` of `it` as an error candidate with `f`, counted as fail() counts it but not kept. */
  failed(it: Item, c: number, f: AttemptFailure): AgentOutput {
    const out = this.error(it, it.offset + c, f.code, f.message);
    this.countFailed(it, f.code, 1);
    return out;
  }

  called(backend: string, items: readonly Item[], outcome: string, ms: number): void {
    this.calls.push({ backend, legs: items.map((it) => ({ input: it.index, route: it.route, arm: it.arm })), outcome, ms });
  }

  /** The legs of a streamed answer: their candidates went out through candidate() and failed(). */
  streamed(items: readonly Item[], ms: number): void {
    for (const it of items) this.leg(it, ms);
  }

  /** Counted by the cache, not here. */
  cached(input: number, outputs: readonly AgentOutput[]): void {
    const row = this.slots[input];
    if (row === undefined) return;
    outputs.forEach((o, c) => {
      if (c < row.length) row[c] = o;
    });
  }

  outputs(): AgentOutput[] {
    const out: AgentOutput[] = [];
    for (const row of this.slots) for (const o of row) out.push(o);
    return out;
  }
}

export function count(map: Record<string, number>, key: string, n: number): void {
  map[key] = (map[key] ?? 0) + n;
}
