/**
 * A backend's answer forwarded to the client as it arrives (docs/protocol-fidelity.md#streamed-answers). The
 * pipeline does not end the response: the batch does, its overhead a trailer.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AttemptFailure } from '../errors.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AnswerCharge } from '../upstream/call-types.js';
import { CandidateStream, type StreamOutcome, type StreamTarget } from './candidate-stream.js';
import type { Item } from './batch-item.js';
import type { BatchSlots } from './batch-slots.js';
import type { AnswerSink } from './batch-types.js';

/** Its streams are built only when the answer proves long enough: most batches that may stream never do. */
export class StreamedAnswer implements StreamTarget {
  /** Set once streaming began. */
  started: StreamRun | undefined;

  constructor(
    readonly slots: BatchSlots,
    readonly request: IndexedAgentRequest,
    readonly items: readonly Item[],
    readonly sink: AnswerSink,
    readonly maxDepth: number,
    readonly memoryKey: string,
    readonly maxKeyRepeats: number,
    readonly memory?: AnswerCharge,
  ) {}

  take(body: Readable, stopCall: (failure: AttemptFailure) => void): void {
    const split = new CandidateStream(this, stopCall);
    // Rejected when the client's response closed first: the pipeline destroyed its streams, the call is stopped.
    const ran = pipeline(body, split, this.sink.out, { end: false }).catch(() => undefined);
    this.started = new StreamRun(body, split, ran);
  }
}

class StreamRun {
  constructor(
    private readonly body: Readable,
    private readonly split: CandidateStream,
    private readonly ran: Promise<unknown>,
  ) {}

  /** The backend's call is over, complete (`failure` undefined) or not; resolves once the pipeline is. */
  async finish(failure?: AttemptFailure): Promise<StreamOutcome> {
    if (failure !== undefined) this.split.breakOff(failure);
    this.body.push(null);
    await this.ran;
    return this.split.outcome();
  }
}
