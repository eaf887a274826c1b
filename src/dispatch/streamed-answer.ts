/**
 * A backend's answer forwarded to the client as it arrives (docs/protocol-fidelity.md#streamed-answers): each
 * element is cut out (protocol/answer/answer-split.ts), indexed and checked on its own bytes exactly as a whole answer's
 * elements are (answer-index.ts, response-check.ts), re-addressed by the batch's slots and written in the
 * contract's order, with backpressure from the client's socket to the backend's read. The gateway holds the
 * element being read, the candidates received ahead of their turn, and what the socket has not sent yet.
 *
 * What waits for the client's socket, and the candidates received ahead of their turn, are counted on the batch's
 * hold on the memory budget (docs/memory-budget.md#streamed-answers): charged when written while the socket has
 * not taken them (when placed, for those ahead), given back as the socket drains (when written). While the budget has no room for it, the backend's read pauses as it does for a full
 * socket; the batch's hold, given back whole when the client's response closes, takes the rest on every path.
 *
 * As Envoy does, the answer can fail over until its first byte is written; after that, a backend that breaks
 * off or turns invalid leaves every candidate not yet written as an error candidate in its place, so the client
 * still gets a complete, valid answer.
 */
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { GatewayError, type AttemptFailure } from '../errors.js';
import { PartsWriter } from '../protocol/answer/answer-body.js';
import { indexAgentResponse } from '../protocol/answer/answer-index.js';
import { ElementSplitter } from '../protocol/answer/answer-split.js';
import { indexedView, Placement, type IndexedCandidate, type Slot } from '../protocol/answer/response-check.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AgentOutput } from '../protocol/types.js';
import { SocketCharge } from './socket-charge.js';
import type { AnswerCharge, BodyFlow, BodyTap } from '../upstream/call-types.js';
import { writeCandidate } from './answer-bytes.js';
import type { Item } from './batch-item.js';
import type { BatchSlots } from './batch-slots.js';
import type { AnswerSink } from './batch-types.js';

const LBRACKET = Buffer.from('[', 'latin1');
const RBRACKET = Buffer.from(']', 'latin1');
const COMMA = Buffer.from(',', 'latin1');

type StreamSlot = Slot<AgentOutput | IndexedCandidate>;
/** Put in the place of a written candidate, so its bytes are freed. */
const WRITTEN: StreamSlot = { ok: false, reason: 'written' };

interface StreamOutcome {
  /** The client's answer began: the batch is answered by this stream, whatever happens to it. */
  committed: boolean;
  /** Why the answer was refused before it began (the attempt failed as a whole answer would). */
  refused?: string;
  written: number;
  /**
   * Candidates written as error candidates because the backend's answer lacked them or had them invalid (not
   * those cut off after it broke off, which fail the attempt on their own), and the first one's reason: the
   * attempt counts such an answer as invalid_response, as it does a whole one (dispatch/attempt.ts).
   */
  bad: { count: number; reason: string };
  workMs: number;
}

export class StreamedAnswer implements BodyTap {
  private flow: BodyFlow | undefined;
  /**
   * Built when the answer proves long enough to stream (start): most batches that may stream never do, and pay
   * only for this object.
   */
  private live: { splitter: ElementSplitter; placement: Placement<AgentOutput | IndexedCandidate>; socket: SocketCharge } | undefined;
  private elements = 0;
  /** Bytes of each candidate placed ahead of its turn and not yet written (item, candidate), counted on the budget. */
  private readonly ahead: number[][] = [];
  /** The next position to write: item `k`, candidate `c`. */
  private k = 0;
  private c = 0;
  private written = 0;
  private bad = 0;
  private badReason: string | undefined;
  private committed = false;
  private congested = false;
  private pumping = false;
  /** The answer's closing `]` is written. */
  private closed = false;
  /** The backend's answer is over (ended, failed or given up): what is still missing will not come. */
  private over = false;
  /** Set once the answer broke off after it began: every candidate not yet written fails with this. */
  private cut: AttemptFailure | undefined;
  private refused: string | undefined;
  private workMs = 0;
  private resolveDone: ((o: StreamOutcome) => void) | undefined;

  constructor(
    private readonly slots: BatchSlots,
    private readonly request: IndexedAgentRequest,
    private readonly items: readonly Item[],
    private readonly sink: AnswerSink,
    private readonly maxDepth: number,
    private readonly memoryKey: string,
    /** The batch's hold on the memory budget; absent when the batch has none (direct dispatch in tests). */
    private readonly memory?: AnswerCharge,
  ) {}

  start(flow: BodyFlow): void {
    this.flow = flow;
    const { request } = this;
    this.live = {
      splitter: new ElementSplitter((wrapped) => this.element(wrapped)),
      placement: new Placement({
        requestId: request.request_id,
        inputs: this.items.map((it) => ({ id: it.input.id, count: it.count })),
      }),
      socket: new SocketCharge(this.sink, this.memory, { pause: () => flow.pause(), roomCame: () => this.paceRead() }, () => this.drained()),
    };
  }

  // The tap is fed, finished and pumped only after start() (upstream/answer-collector.ts): `live` is set from then on.
  private get running(): NonNullable<StreamedAnswer['live']> {
    const live = this.live;
    if (live === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'a streamed answer was fed before it started');
    return live;
  }

  private get splitter(): ElementSplitter {
    return this.running.splitter;
  }

  private get placement(): Placement<AgentOutput | IndexedCandidate> {
    return this.running.placement;
  }

  /** The backend's answer was long enough to be streamed here. */
  get started(): boolean {
    return this.flow !== undefined;
  }

  data(chunk: Buffer): void {
    if (this.over) return;
    const t0 = performance.now();
    if (!this.splitter.write(chunk) && this.splitter.problem !== undefined) this.invalid(this.splitter.problem);
    this.pump();
    this.workMs += performance.now() - t0;
  }

  /**
   * The backend's answer is over: complete (`failure` undefined) or not. Resolves once every candidate is
   * written, or at once when the answer had not begun (nothing was written, the attempt fails as it would have).
   */
  finish(failure?: AttemptFailure): Promise<StreamOutcome> {
    if (failure === undefined && !this.over && !this.splitter.closed) this.invalid('the answer ends before its array closes');
    if (failure !== undefined && !this.over) this.breakOff(failure);
    this.over = true;
    if (this.refused !== undefined || (failure !== undefined && !this.committed)) {
      return Promise.resolve(this.outcome());
    }
    return new Promise((resolve) => {
      this.resolveDone = resolve;
      this.pump();
    });
  }

  private outcome(): StreamOutcome {
    return {
      committed: this.committed,
      refused: this.refused,
      written: this.written,
      bad: { count: this.bad, reason: this.badReason ?? '' },
      workMs: this.workMs,
    };
  }

  /** One element, as a one-element array: proved, checked and placed as indexing the whole answer would. */
  private element(wrapped: Buffer): void {
    const k = this.elements++;
    if (!isUtf8(wrapped)) {
      this.invalid(`the answer is not valid UTF-8 (in candidate [${k}])`);
      return;
    }
    const indexed = indexAgentResponse(wrapped, this.maxDepth, this.memoryKey);
    if (!indexed.ok) {
      this.invalid(`the answer is not JSON: ${indexed.reject.reason} (in candidate [${k}])`);
      return;
    }
    const el = indexed.elements[0];
    if (el === undefined || indexed.elements.length !== 1) {
      this.invalid(`the answer is not JSON: a value is missing (candidate [${k}])`);
      return;
    }
    const placed = this.placement.add(k, indexedView(wrapped, el));
    if (placed.kind === 'condemned') {
      this.invalid(placed.reason);
      return;
    }
    // Written at once, not after the chunk: a chunk may hold many small candidates.
    this.pump();
    if (placed.kind === 'slot' && !placed.duplicate && this.placement.slots[placed.input]?.[placed.index] !== WRITTEN) {
      // Not its turn yet: it is held until the candidates before it are written.
      (this.ahead[placed.input] ??= [])[placed.index] = wrapped.length;
      this.running.socket.held(wrapped.length);
    }
  }

  /** The answer turned out not to be one: refused while nothing is written, else cut where it is. */
  private invalid(reason: string): void {
    const failure: AttemptFailure = { code: 'gateway_backend_invalid_response', message: reason };
    if (!this.committed) this.refused ??= reason;
    this.breakOff(failure);
    this.flow?.fail(failure);
  }

  private breakOff(failure: AttemptFailure): void {
    if (this.over) return;
    this.over = true;
    this.splitter.stop(failure.message);
    if (this.committed) {
      // A timeout stays one; anything else after the first byte (a reset, bytes that are not JSON) is a broken answer.
      this.cut = {
        code: failure.code === 'gateway_backend_timeout' ? failure.code : 'gateway_backend_invalid_response',
        message: `the answer broke off after ${this.written} candidates were forwarded: ${failure.message}`,
      };
    }
  }

  /** Write, in order, every candidate whose turn has come, until the client's buffer is full. */
  private pump(): void {
    if (this.pumping || this.refused !== undefined) return;
    this.pumping = true;
    try {
      const items = this.items;
      while (!this.congested && !this.sink.gone && !this.closed) {
        let item = items[this.k];
        while (item !== undefined && this.c >= item.count) {
          this.k++;
          this.c = 0;
          item = items[this.k];
        }
        if (item === undefined) {
          this.close();
          break;
        }
        // The placement has one row per item.
        const row = this.placement.slots[this.k];
        if (row === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `the streamed answer's placement has no row for item ${this.k}`);
        const slot = row[this.c];
        // A candidate placed ahead of its turn waits for the ones before it, until the answer is over.
        if (this.cut === undefined && slot === undefined && !this.over) return;
        let out: AgentOutput;
        if (this.cut !== undefined) out = this.slots.failed(item, this.c, this.cut);
        else {
          const placed = slot ?? this.placement.missing(this.k, this.c);
          if (!placed.ok) {
            this.bad++;
            this.badReason ??= placed.reason;
          }
          out = this.slots.candidate(item, this.c, placed);
        }
        row[this.c] = WRITTEN;
        const aheadRow = this.ahead[this.k];
        const wasAhead = aheadRow?.[this.c];
        if (aheadRow !== undefined && wasAhead !== undefined) {
          aheadRow[this.c] = 0;
          this.running.socket.released(wasAhead);
        }
        this.c++;
        const w = this.open();
        writeCandidate(out, w);
        this.written++;
        this.send(w);
      }
      if (this.sink.gone) this.running.socket.gone();
      if (this.sink.gone || (this.closed && !this.congested)) this.done();
    } finally {
      this.pumping = false;
    }
  }

  /** A writer for the next candidate, after the answer's `[` or the comma before it. */
  private open(): PartsWriter {
    const w = new PartsWriter();
    if (!this.committed) {
      this.committed = true;
      this.sink.begin();
      w.push(LBRACKET);
    } else w.push(COMMA);
    return w;
  }

  private close(): void {
    this.closed = true;
    if (this.committed) {
      this.running.socket.written(this.sink.write(RBRACKET));
      return;
    }
    const w = this.open();
    w.push(RBRACKET);
    this.send(w);
  }

  private send(w: PartsWriter): void {
    let ok = true;
    const body = w.done();
    // Every part is written: they are slices of one candidate at most, and the socket takes them in order.
    for (const part of body.parts) ok = this.sink.write(part) && ok;
    this.running.socket.written(ok);
    // The backend is read on while no more than this candidate waits for the socket: pausing at the socket's
    // first refusal would leave it idle while the next candidate is read, and the backend idle while it drains.
    if (ok || this.sink.buffered <= body.length) return;
    this.congested = true;
    this.flow?.pause();
  }

  /** The client's socket took everything written: a pump paused on it goes on. */
  private drained(): void {
    if (!this.congested) return;
    this.congested = false;
    this.pump();
    this.paceRead();
  }

  /** The backend is read while both the socket and the budget take more. */
  private paceRead(): void {
    if (!this.congested && !this.running.socket.starved) this.flow?.resume();
  }

  private done(): void {
    const resolve = this.resolveDone;
    if (resolve === undefined) return;
    this.resolveDone = undefined;
    resolve(this.outcome());
  }
}
