/**
 * `server.body_timeout_s`, from when the gateway starts reading the body. Not node's `requestTimeout`: that clock
 * starts with the request line, so a batch waiting for admission would get a 408.
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

  /** @param timeoutMs for requests tracked from then on when a reload changes it */
  constructor(public timeoutMs: number) {}

  track(req: IncomingMessage, res: ServerResponse, expire: () => void): void {
    if (req.complete) return;
    this.receiving.set(req, { res, deadline: Date.now() + this.timeoutMs, expire });
  }

  /** Now rather than at the next sweep: the request may hold megabytes. */
  done(req: IncomingMessage): void {
    this.receiving.delete(req);
  }

  start(): void {
    if (this.timer !== undefined) return;
    // Fixed at start: a deadline is honoured at most a second late.
    this.timer = setInterval(() => this.sweep(), Math.max(1, Math.min(1000, Math.floor(this.timeoutMs / 2))));
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
