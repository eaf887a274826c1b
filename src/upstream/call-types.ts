/** The shapes of one backend call (call-replica.ts) and of the pieces of its handler chain (backend-call.ts). */
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { AbortLike } from '../abort.js';
import type { StoreOwner } from '../protocol/byte-store.js';
import type { AttemptFailure } from '../errors.js';
import type { ReadPauses } from './read-pauses.js';
import type { Replica } from './replica.js';

export type CallResult =
  /** `bytes`: a raw answer (a view of its store when large). `streamed`: the body went to the tap; nothing kept. */
  | { ok: true; status: number; text: string; bytes?: Buffer; contentType?: string; streamed?: boolean }
  | { ok: false; failure: AttemptFailure; status?: number; unaskedContinue?: boolean };

export interface CallOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  timeoutMs: number;
  timeoutKey?: string;
  /** Reported as a timeout. */
  signal?: AbortLike;
  /** Keep the answer's bytes and content type undecoded. */
  raw?: boolean;
  /** One byte more aborts the call at once. Default: the replica's max_response_mb. */
  maxBytes?: number;
  maxBytesKey?: string;
  /** Raw mode: a 2xx answer longer than `overBytes` (declared, else received so far) goes to `tap`, not kept. */
  stream?: { overBytes: number; tap: { take(body: Readable, stop: (failure: AttemptFailure) => void): void } };
  memory?: AnswerCharge;
}

/** `charge` false: pause the read until `whenRoom` calls back (a shed shadow's charge aborts the call instead). */
export interface AnswerCharge extends StoreOwner {
  charge(bytes: number): boolean;
  whenRoom(fn: () => void): void;
  shrink(bytes: number): void;
  capacity(): number;
}

export interface CallRun {
  readonly replica: Replica;
  readonly opts: CallOptions;
  readonly maxBytes: number;
  readonly settled: boolean;
  pausesOf(controller: Dispatcher.DispatchController): ReadPauses;
  /** The answer streams from here on: undici's request() handler takes its head, and is returned to take the rest. */
  handOver(controller: Dispatcher.DispatchController, status: number): Dispatcher.DispatchHandler | undefined;
  /** Once: a second settle, or a stop after, does nothing. */
  settle(result: CallResult): void;
  /** End the call now with `failure`: each piece lets go of what it holds, then undici's request is aborted. */
  stop(failure: AttemptFailure): void;
}

/** A piece of the chain: undici's callbacks, each passed on to the next piece or not; `drop` when stopped early. */
export interface AnswerHandler {
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  onResponseEnd(controller: Dispatcher.DispatchController): void;
  drop(): void;
}

export type AnswerHeaders = Record<string, string | string[] | undefined>;
