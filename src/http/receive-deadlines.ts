/**
 * `server.body_timeout_s`: the time a request body may take to arrive, from when the gateway starts reading it.
 *
 * Not node's `requestTimeout`: that clock starts with the request line, so a batch waiting for admission
 * (src/admission.ts; its body deliberately not read) would be cut off with a 408, and node's own 408 has no
 * body. One interval sweeps the requests being received (a Map entry per request, no timer each): a body
 * still incomplete past its deadline is answered 408 with a JSON detail and its connection closed, so a
 * client trickling a byte every few seconds holds a connection for at most the timeout.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

interface Receiving {
  res: ServerResponse;
  deadline: number;
  expire: () => void;
}

export class ReceiveDeadlines {
  private readonly receiving = new Map<IncomingMessage, Receiving>();
  private timer: NodeJS.Timeout | undefined;

  /** @param timeoutMs the body timeout; may be changed (a reload), for requests tracked from then on */
  constructor(public timeoutMs: number) {}

  /** How often the sweep runs, fixed at start: a deadline is honoured within this (at most a second late). */
  get intervalMs(): number {
    return Math.max(1, Math.min(1000, Math.floor(this.timeoutMs / 2)));
  }

  /** Start the clock of a request whose body is about to be read; `expire` answers it if it runs out. */
  track(req: IncomingMessage, res: ServerResponse, expire: () => void): void {
    if (req.complete) return;
    this.receiving.set(req, { res, deadline: Date.now() + this.timeoutMs, expire });
  }

  /** The body is complete: forget the request now rather than at the next sweep (it may hold megabytes). */
  done(req: IncomingMessage): void {
    this.receiving.delete(req);
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.sweep(), this.intervalMs);
    // Never the reason the process stays alive.
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.receiving.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [req, r] of this.receiving) {
      if (req.complete || r.res.writableEnded || r.res.destroyed) {
        this.receiving.delete(req);
      } else if (now >= r.deadline) {
        this.receiving.delete(req);
        r.expire();
      }
    }
  }
}
