/**
 * The shapes of one backend call (upstream/call-replica.ts): what it is asked, what it answers, and the hooks a
 * caller gives it to count an answer's bytes or take them as they arrive.
 */
import type { Dispatcher } from 'undici';
import type { AbortLike } from '../abort.js';
import type { StoreOwner } from '../protocol/byte-store.js';
import type { AttemptFailure } from '../errors.js';
import type { AnswerStream } from './answer-stream.js';
import type { ReadPauses } from './read-pauses.js';
import type { Replica } from './replica.js';

export type CallResult =
  /**
   * `bytes`: a raw answer as received (a view of its store when large: protocol/byte-store.ts). `streamed`: the
   * body went to the options' stream tap as it arrived; `bytes` and `text` are then empty.
   */
  | { ok: true; status: number; text: string; bytes?: Buffer; contentType?: string; streamed?: boolean }
  /**
   * `status`: the HTTP status when the backend answered (a non-2xx, or a 2xx refused by a bound).
   * `unaskedContinue`: the answer began with `100 Continue`, which undici ends the connection on (see classifyError).
   */
  | { ok: false; failure: AttemptFailure; status?: number; unaskedContinue?: boolean };

export interface CallOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Bounds the whole attempt: connect, headers and every byte of the body. */
  timeoutMs: number;
  /** The config key of timeoutMs, named in the failure message; default `timeout_s`. */
  timeoutKey?: string;
  /** Aborts the call (client went away, deadline); reported as a timeout. */
  signal?: AbortLike;
  /** Keep the answer's bytes and content type undecoded (passed back unchanged: coaching), `text` stays empty. */
  raw?: boolean;
  /**
   * Bytes of the answer kept; one byte more aborts the call at once (nothing more is buffered) as
   * gateway_backend_invalid_response. Default: the replica's backends.<name>.max_response_mb.
   */
  maxBytes?: number;
  /** The config key of maxBytes, named in the failure message; default `backends.<name>.max_response_mb`. */
  maxBytesKey?: string;
  /**
   * Raw mode: a 2xx answer longer than `overBytes` (its declared length, else the bytes received so far) is
   * handed to `tap` as a Readable of its bytes (answer-stream.ts) instead of being kept. The byte bound and the
   * timer still hold.
   */
  stream?: { overBytes: number; tap: { take(body: AnswerStream): void } };
  /** Raw mode: the answer's bytes are counted here as they arrive, its read paused while there is no room. */
  memory?: AnswerCharge;
}

/**
 * The memory budget's count of one answer (memory/budget.ts, docs/memory-budget.md), as the call sees it.
 * `charge` false: pause the read until `whenRoom` calls back (a shed shadow's charge aborts the call instead).
 */
export interface AnswerCharge extends StoreOwner {
  charge(bytes: number): boolean;
  whenRoom(fn: () => void): void;
  /** Give back `bytes` counted by charge (the answer was dropped). */
  shrink(bytes: number): void;
  /** The whole budget: an answer larger can never be held. */
  capacity(): number;
}

/** What the pieces of one call's handler chain (upstream/backend-call.ts) share: its options, its read, its end. */
export interface CallRun {
  readonly replica: Replica;
  readonly opts: CallOptions;
  /** Bytes of the answer kept: opts.maxBytes, else the replica's max_response_mb. */
  readonly maxBytes: number;
  readonly settled: boolean;
  /** Why the read is paused (read-pauses.ts), made on first use. */
  pausesOf(controller: Dispatcher.DispatchController): ReadPauses;
  /** The answer, once: a second settle, or a stop after, does nothing. */
  settle(result: CallResult): void;
  /** End the call now with `failure`, each piece letting go of what it holds, then undici's request aborted. */
  stop(failure: AttemptFailure): void;
}

/**
 * A piece of the chain: undici's controller-API callbacks of an answer, each passed on to the next piece or not,
 * and `drop` when the call is stopped before its end.
 */
export interface AnswerHandler {
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  onResponseEnd(): void;
  drop(): void;
}

export type AnswerHeaders = Record<string, string | string[] | undefined>;
