/**
 * A backend's answer forwarded to the client as it arrives (docs/protocol-fidelity.md#streamed-answers). The
 * pipeline does not end the response: the batch does, its overhead a trailer.
 */
import { pipeline } from 'node:stream/promises';
import type { AttemptFailure } from '../errors.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AnswerStream } from '../upstream/answer-stream.js';
import type { AnswerCharge } from '../upstream/call-types.js';
import { CandidateStream, type StreamOutcome, type StreamTarget } from './candidate-stream.js';
import type { Item } from './batch-item.js';
import type { BatchSlots } from './batch-slots.js';
import type { AnswerSink } from './batch-types.js';

/** Its streams are built only when the answer proves long enough: most batches that may stream never do. */
export class StreamedAnswer implements StreamTarget {
  private stream: { body: AnswerStream; split: CandidateStream; ran: Promise<unknown> } | undefined;

  constructor(
    readonly slots: BatchSlots,
    readonly request: IndexedAgentRequest,
    readonly items: readonly Item[],
    readonly sink: AnswerSink,
    readonly maxDepth: number,
    readonly memoryKey: string,
    readonly memory?: AnswerCharge,
  ) {}

  take(body: AnswerStream): void {
    const split = new CandidateStream(this, body);
    // Rejected when the client's response closed first: the pipeline destroyed its streams, the call is stopped.
    const ran = pipeline(body, split, this.sink.out, { end: false }).catch(() => undefined);
    this.stream = { body, split, ran };
  }

  get started(): boolean {
    return this.stream !== undefined;
  }

  /** The backend's call is over, complete (`failure` undefined) or not; resolves once the pipeline is. */
  async finish(failure?: AttemptFailure): Promise<StreamOutcome> {
    const s = this.stream;
    if (s === undefined) return { committed: false, written: 0, bad: { count: 0, reason: '' }, workMs: 0 };
    if (failure !== undefined) s.split.breakOff(failure);
    s.body.push(null);
    await s.ran;
    return s.split.outcome();
  }
}
