/**
 * A streamed answer's body (docs/protocol-fidelity.md#streamed-answers): a chunk its reader has no room for pauses
 * the backend's read until it asks for more, so a pipeline on it carries the client's backpressure to the
 * backend's TCP window. A reader that destroys it (the client went away) ends the call.
 */
import { Readable } from 'node:stream';
import type { AttemptFailure } from '../errors.js';
import type { ReadPauses } from './read-pauses.js';

export class AnswerStream extends Readable {
  constructor(
    private readonly pauses: ReadPauses,
    /** Ends the call with `failure` (the reader found the answer invalid). */
    readonly fail: (failure: AttemptFailure) => void,
  ) {
    super();
  }

  feed(chunk: Buffer): void {
    if (!this.push(chunk)) this.pauses.pause('client');
  }

  override _read(): void {
    this.pauses.resume('client');
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.fail({ code: 'gateway_backend_timeout', message: 'cancelled before the answer was complete' });
    cb(err);
  }
}
