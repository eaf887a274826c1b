/**
 * A streamed answer's body (docs/protocol-fidelity.md#streamed-answers): a Readable of the backend's bytes, made
 * from the call's handler chain once the answer proves long enough (answer-collector.ts), as undici's request()
 * makes its body. Its reader paces the backend: a chunk it has no room for pauses the read until it asks for
 * more, so a pipeline built on it carries the client's socket's backpressure to the backend's TCP window. The
 * call keeps its one timer and byte cap; the body ends when the answer does, and a reader that destroys it (its
 * pipeline broke: the client went away) ends the call.
 */
import { Readable } from 'node:stream';
import type { AttemptFailure } from '../errors.js';
import type { ReadPauses } from './read-pauses.js';

export class AnswerStream extends Readable {
  constructor(
    private readonly pauses: ReadPauses,
    /** Ends the call with `failure` (upstream/backend-call.ts stop): nothing once it is settled. */
    private readonly stop: (failure: AttemptFailure) => void,
  ) {
    super();
  }

  feed(chunk: Buffer): void {
    if (!this.push(chunk)) this.pauses.pause('client');
  }

  override _read(): void {
    this.pauses.resume('client');
  }

  /** The reader found the answer invalid: the call ends with `failure`. */
  fail(failure: AttemptFailure): void {
    this.stop(failure);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.stop({ code: 'gateway_backend_timeout', message: 'cancelled before the answer was complete' });
    cb(err);
  }
}
