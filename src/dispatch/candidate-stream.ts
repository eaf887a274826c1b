/**
 * The Transform of a streamed answer (docs/protocol-fidelity.md#streamed-answers,
 * docs/memory-budget.md#streamed-answers).
 */
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { Transform, type TransformCallback } from 'node:stream';
import type { AttemptFailure } from '../errors.js';
import { PartsWriter } from '../protocol/answer/answer-body.js';
import { indexAgentResponse, type AnswerElement } from '../protocol/answer/answer-index.js';
import { markOwn } from '../protocol/byte-store.js';
import { indexAnswerYielding, OFFLOAD_BYTES } from '../reader/reader.js';
import { ElementSplitter } from '../protocol/answer/answer-split.js';
import { indexedView, Placement, type IndexedCandidate, type Slot } from '../protocol/answer/response-check.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AgentOutput } from '../protocol/types.js';
import type { AnswerCharge } from '../upstream/call-types.js';
import { READ_PER_TURN } from '../upstream/read-pauses.js';
import { writeCandidate } from './answer-bytes.js';
import type { Item } from './batch-item.js';
import type { BatchSlots } from './batch-slots.js';
import type { AnswerSink } from './batch-types.js';

const LBRACKET = Buffer.from('[', 'latin1');
const RBRACKET = Buffer.from(']', 'latin1');
const COMMA = Buffer.from(',', 'latin1');
/** Put in the place of a pushed candidate, so its bytes are freed. */
const WRITTEN: Slot<IndexedCandidate> = { ok: false, reason: 'written' };

export interface StreamTarget {
  readonly slots: BatchSlots;
  readonly request: IndexedAgentRequest;
  readonly items: readonly Item[];
  readonly sink: AnswerSink;
  readonly maxDepth: number;
  readonly memoryKey: string;
  /** server.max_memory_key_repeats. */
  readonly maxKeyRepeats: number;
  readonly memory?: AnswerCharge;
}

export interface StreamOutcome {
  /** The client's answer began: the batch is answered by this stream, whatever happens to it. */
  committed: boolean;
  refused?: string;
  /** Why it broke off after it began, when found invalid after its call ended well. */
  broke?: AttemptFailure;
  written: number;
  /** Candidates the backend's answer lacked or had invalid (not those cut off), and the first one's reason. */
  bad: { count: number; reason: string };
  /**
   * When it broke off the gateway was not reading it: the client's socket, or the budget its unread candidates
   * filled, held it back. A timeout then is the client's pace, not the backend's.
   */
  heldBack: boolean;
  workMs: number;
}

export class CandidateStream extends Transform {
  private readonly splitter = new ElementSplitter((wrapped) => this.element(wrapped));
  private elements = 0;
  /** Bytes counted for each candidate when placed, carried into inFlight when it is pushed. */
  private readonly charged: number[][] = [];
  /** Candidates pushed and still counted. */
  private readonly inFlight: { end: number; bytes: number }[] = [];
  private pushed = 0;
  /** The next position to push: item `k`, candidate `c`. */
  private k = 0;
  private c = 0;
  private written = 0;
  private bad = 0;
  private badReason: string | undefined;
  private committed = false;
  private shut = false;
  private over = false;
  /** Every candidate not yet pushed fails with this. */
  private cut: AttemptFailure | undefined;
  private broke: AttemptFailure | undefined;
  private refused: string | undefined;
  private heldBack = false;
  /** The callback of the chunk that found the budget full waits for room; that of one past the turn's bytes, for its end. */
  private starved = false;
  private yielding = false;
  private readThisTurn = 0;
  private stalled: TransformCallback | undefined;
  /** Candidates waiting for their index (element), and the chain that places them in order. */
  private offloaded = 0;
  private indexed: Promise<void> = Promise.resolve();
  private workMs = 0;
  private readonly placement: Placement<IndexedCandidate>;

  constructor(
    private readonly target: StreamTarget,
    private readonly stopCall: (failure: AttemptFailure) => void,
  ) {
    super();
    const { request, items } = target;
    this.placement = new Placement({ requestId: request.request_id, inputs: items.map((it) => ({ id: it.input.id, count: it.count })) });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (!this.over) {
      const t0 = performance.now();
      if (!this.splitter.write(chunk) && this.splitter.problem !== undefined) this.invalid(this.splitter.problem);
      this.pump();
      this.workMs += performance.now() - t0;
    }
    // The read yields to the event loop (docs/memory-budget.md#yielding): the pipeline fills and undici's Readable pauses.
    this.readThisTurn += chunk.length;
    if (this.readThisTurn >= READ_PER_TURN) {
      this.readThisTurn = 0;
      this.yielding = true;
      setImmediate(() => {
        this.yielding = false;
        if (!this.starved) this.wake();
      });
    }
    if (this.starved || this.yielding || this.offloaded > 0) this.stalled = cb;
    else cb();
  }

  override _flush(cb: TransformCallback): void {
    if (this.offloaded > 0) {
      void this.indexed.then(() => this._flush(cb));
      return;
    }
    if (!this.over && !this.splitter.closed) this.invalid('the answer ends before its array closes');
    this.over = true;
    this.pump();
    cb();
  }

  override _read(size: number): void {
    this.release();
    super._read(size);
  }

  outcome(): StreamOutcome {
    const { committed, refused, broke, written, workMs, heldBack } = this;
    return { committed, refused, broke, written, bad: { count: this.bad, reason: this.badReason ?? '' }, workMs, heldBack };
  }

  /** Refused while nothing is pushed (it can still fail over, as in Envoy), else cut where it is. */
  breakOff(failure: AttemptFailure): void {
    if (this.over) return;
    this.over = true;
    this.heldBack = this.starved || this.target.sink.out.writableNeedDrain || this.readableLength >= this.readableHighWaterMark;
    this.splitter.stop(failure.message);
    if (!this.committed) this.refused ??= failure.message;
    // A timeout stays one; anything else after the first byte (a reset, bytes that are not JSON) is a broken answer.
    else this.cut = { code: failure.code === 'gateway_backend_timeout' ? failure.code : 'gateway_backend_invalid_response', message: `the answer broke off after ${this.written} candidates were forwarded: ${failure.message}` };
    this.wake();
    this.pump();
  }

  /**
   * A candidate over OFFLOAD_BYTES is indexed on the reader thread, as a whole answer that large is: the chunk's
   * callback, and every candidate after it, wait for it in order.
   */
  private element(wrapped: Buffer): void {
    const k = this.elements++;
    const { maxDepth, memoryKey, maxKeyRepeats } = this.target;
    if (this.offloaded === 0 && wrapped.length <= OFFLOAD_BYTES) {
      if (!isUtf8(wrapped)) return this.invalid(`the answer is not valid UTF-8 (in candidate [${k}])`);
      const indexed = indexAgentResponse(wrapped, maxDepth, memoryKey, Number.MAX_SAFE_INTEGER, maxKeyRepeats);
      if (!indexed.ok) return this.invalid(`the answer is not JSON: ${indexed.reject.reason} (in candidate [${k}])`);
      return this.place(k, wrapped, indexed.elements);
    }
    this.offloaded++;
    const read = indexAnswerYielding(markOwn(wrapped), 1, maxDepth, memoryKey, maxKeyRepeats);
    this.indexed = this.indexed.then(async () => {
      const r = await read.catch((err: unknown) => ({ body: wrapped, outcome: { ok: false as const, skip: 0, reason: `the reader thread failed: ${err instanceof Error ? err.message : String(err)}`, decode: false } }));
      this.offloaded--;
      if (!this.over) {
        if (r.outcome.ok) this.place(k, r.body, r.outcome.elements);
        else this.invalid(`${r.outcome.reason} (in candidate [${k}])`);
      }
      // Woken even once over: the chunk's callback waits for the last of these (wake() does nothing before), and a
      // candidate queued behind one found invalid, or behind a break, returned here without it, so the pipeline,
      // and the batch, stalled until request_timeout_s dropped the client's connection.
      if (!this.starved) this.wake();
    });
  }

  private place(k: number, wrapped: Buffer, elements: readonly AnswerElement[]): void {
    const el = elements[0];
    if (el === undefined || elements.length !== 1) return this.invalid(`the answer is not JSON: a value is missing (candidate [${k}])`);
    const placed = this.placement.add(k, indexedView(wrapped, el));
    if (placed.kind === 'condemned') return this.invalid(placed.reason);
    if (placed.kind === 'slot' && !placed.duplicate) {
      (this.charged[placed.input] ??= [])[placed.index] = wrapped.length;
      this.charge(wrapped.length);
    }
    // Pushed at once, not after the chunk: a chunk may hold many small candidates.
    this.pump();
  }

  private invalid(reason: string): void {
    const failure: AttemptFailure = { code: 'gateway_backend_invalid_response', message: reason };
    if (this.committed) this.broke ??= failure;
    this.breakOff(failure);
    this.stopCall(failure);
  }

  private pump(): void {
    while (this.refused === undefined && !this.shut && !this.destroyed) {
      let item = this.target.items[this.k];
      for (; item !== undefined && this.c >= item.count; item = this.target.items[++this.k]) this.c = 0;
      if (item === undefined) return this.close();
      const row = this.placement.slots[this.k] ?? []; // one row per item
      const slot = row[this.c];
      // A candidate placed ahead of its turn waits for the ones before it, until the answer is over. The last one
      // waits for the answer's end: bytes after its `]` refuse the answer, as they refuse a whole one.
      const last = this.c === item.count - 1 && this.k === this.target.items.length - 1;
      if (this.cut === undefined && !this.over && (slot === undefined || last)) return;
      let out: AgentOutput;
      if (this.cut !== undefined) out = this.target.slots.failed(item, this.c, this.cut);
      else {
        const placed = slot ?? this.placement.missing(this.k, this.c);
        if (!placed.ok) {
          this.bad++;
          this.badReason ??= placed.reason;
        }
        out = this.target.slots.candidate(item, this.c, placed);
      }
      row[this.c] = WRITTEN;
      const bytes = this.charged[this.k]?.[this.c] ?? 0;
      const w = this.open();
      this.c++;
      writeCandidate(out, w);
      this.written++;
      this.send(w, bytes);
    }
  }

  private open(): PartsWriter {
    const w = new PartsWriter();
    if (this.committed) w.push(COMMA);
    else {
      this.committed = true;
      this.target.sink.begin();
      w.push(LBRACKET);
    }
    return w;
  }

  private close(): void {
    this.shut = true;
    const w = this.committed ? new PartsWriter() : this.open();
    w.push(RBRACKET);
    this.send(w, 0);
  }

  private send(w: PartsWriter, bytes: number): void {
    this.release();
    const body = w.done();
    for (const part of body.parts) this.push(part);
    this.pushed += body.length;
    if (bytes > 0) this.inFlight.push({ end: this.pushed, bytes });
  }

  /**
   * Candidates the response took are given back but the last, which may still wait in its buffer (that holds its
   * highWaterMark at most besides the last chunk written to it).
   */
  private release(): void {
    const taken = this.pushed - this.readableLength;
    for (let next = this.inFlight[1]; next !== undefined && next.end <= taken; next = this.inFlight[1]) this.target.memory?.shrink(this.inFlight.shift()?.bytes ?? 0);
  }

  /** Without room, the chunk being read is not done with until room comes. */
  private charge(bytes: number): void {
    const memory = this.target.memory;
    if (memory === undefined || memory.charge(bytes) || this.starved) return;
    this.starved = true;
    const roomCame = (): void => {
      // `charge(0)` asks without counting more.
      if (this.starved && !this.destroyed && !memory.charge(0)) memory.whenRoom(() => queueMicrotask(roomCame));
      else this.wake();
    };
    // In a microtask: room may come inside another backend connection's parser callback, and waking resumes this
    // answer's undici Readable, whose controller must not resume while a parser runs (read-pauses.ts).
    memory.whenRoom(() => queueMicrotask(roomCame));
  }

  private wake(): void {
    this.starved = false;
    if (this.yielding || this.offloaded > 0) return;
    const cb = this.stalled;
    this.stalled = undefined;
    if (!this.destroyed) cb?.();
  }
}
