/**
 * Idempotent replay shared through Redis: one hash per request_id, "pending" under a lease its owner renews, or
 * "done" for replay_ttl_s. Waiters on any replica are woken by pub/sub and poll as a safety net; an owner that
 * dies stops renewing and a waiter takes over. While Redis is unavailable, the local replay answers.
 */
import type { AbortLike } from '../abort.js';
import { createHash } from 'node:crypto';
import type { LocalReplay } from './local-replay.js';
import type { RedisLink } from './redis-link.js';
import { arrayReply, bufferAt, REPLAY_BEGIN, REPLAY_END, REPLAY_RENEW } from './redis-scripts.js';
import type { ReplayBegin, ReplayLease, StoreStats } from './types.js';
import { GAVE_UP, leaseRenewer, newId, raceAbort, replayBytes, Wakers } from './util.js';
import { GatewayError } from '../errors.js';

/** A lapsed owner lease announces nothing. */
const WAIT_POLL_MS = 200;

export class RedisReplay {
  private readonly waiters = new Wakers();
  /** Redis keys of the computations this process owns, by token. */
  private readonly owned = new Map<string, string>();
  /** Entries Redis may hold for this process that no one ends (an answer lost): abandoned once Redis is back. */
  private readonly orphans = new Map<string, string>();
  private readonly renewTimer: NodeJS.Timeout;

  constructor(
    private readonly link: RedisLink,
    private readonly local: LocalReplay,
    private readonly stats: StoreStats,
    private readonly opts: { prefix: string; ttlMs: number; maxBytes: number; leaseMs: number },
  ) {
    this.renewTimer = leaseRenewer(opts.leaseMs, () => void this.renew());
  }

  async begin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin> {
    const key = this.key(requestId);
    let waited = false;
    for (;;) {
      if (signal?.aborted) return { kind: 'aborted' };
      if (!this.link.isUp()) return this.fallback(requestId, bodyHash, signal);
      const token = newId();
      const attempt = this.link.script(REPLAY_BEGIN, [key], [bodyHash, token, this.opts.leaseMs], true);
      let reply: unknown;
      try {
        reply = await raceAbort(attempt, Infinity, signal);
      } catch {
        this.orphans.set(token, key); // the script may still have run and made us the owner
        return this.fallback(requestId, bodyHash, signal);
      }
      if (reply === GAVE_UP) {
        // Aborted with the attempt in flight: if it made us the owner, let go at once so nobody waits on us.
        attempt
          .then((r) => (bufferAt(arrayReply(r), 0)?.toString('latin1') === 'compute' ? this.lease(key, token).abandon() : undefined))
          .catch(() => this.orphans.set(token, key));
        return { kind: 'aborted' };
      }
      const replied = arrayReply(reply);
      const state = bufferAt(replied, 0);
      if (state === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'the replay script answered no state');
      const kind = state.toString('latin1');
      const body = bufferAt(replied, 1);
      if (kind === 'compute') return { kind: 'compute', lease: this.lease(key, token) };
      if (kind === 'hit') {
        this.stats.replayHits++;
        // The stored bytes as they are: never decoded to a string (a UTF-8 pass and a copy of every hit).
        return { kind: 'hit', body: body === undefined ? '' : { parts: [body], length: body.length } };
      }
      if (kind === 'conflict') {
        this.stats.replayConflicts++;
        return { kind: 'conflict' };
      }
      if (!waited) this.stats.replayWaits++;
      waited = true;
      await this.waiters.nap(key, WAIT_POLL_MS, signal);
    }
  }

  wake(key: string): void {
    this.waiters.wake(key);
  }

  onUp(): void {
    for (const [token, key] of this.orphans) {
      this.orphans.delete(token);
      void this.send(key, token, undefined);
    }
  }

  /** Abandons what this process still computes, so waiters elsewhere need not wait out the lease. */
  async close(): Promise<void> {
    clearInterval(this.renewTimer);
    const ends = [...this.owned].map(([token, key]) => this.end(key, token, undefined));
    const orphans = [...this.orphans].map(([token, key]) => this.send(key, token, undefined));
    await Promise.allSettled([...ends, ...orphans]);
  }

  private fallback(requestId: string, bodyHash: string, signal: AbortLike | undefined): Promise<ReplayBegin> {
    this.stats.fallbacks++;
    return this.local.begin(requestId, bodyHash, signal);
  }

  private lease(key: string, token: string): ReplayLease {
    this.owned.set(token, key);
    return {
      finish: async (answer) => {
        const body = replayBytes(answer, this.opts.maxBytes);
        if (body === undefined) this.stats.replayTooLarge++;
        return this.end(key, token, body);
      },
      abandon: () => this.end(key, token, undefined),
    };
  }

  /** A failure is not reported: the entry is abandoned once Redis is back, the outcome of an abandon. */
  private async end(key: string, token: string, body: string | Buffer | undefined): Promise<void> {
    if (!this.owned.delete(token)) return; // ended already (finish after close, or twice)
    return this.send(key, token, body);
  }

  /** Stores `body`, or abandons the entry without one. */
  private async send(key: string, token: string, body: string | Buffer | undefined): Promise<void> {
    const message = JSON.stringify({ t: 'replay', k: key });
    const args = body === undefined ? [token, 'abandon', '', 0] : [token, 'finish', body, this.opts.ttlMs];
    try {
      const ended = await this.link.script(REPLAY_END, [key], [...args, this.link.channel, message]);
      if (ended === 1 && body !== undefined) this.stats.replayStored++;
    } catch {
      this.orphans.set(token, key);
    }
  }

  private async renew(): Promise<void> {
    if (!this.link.isUp()) return;
    const renewals = [...this.owned].map(([token, key]) =>
      this.link.script(REPLAY_RENEW, [key], [token, this.opts.leaseMs]),
    );
    await Promise.allSettled(renewals);
  }

  private key(requestId: string): string {
    // request_id comes from clients: a very long one is hashed.
    const id = requestId.length > 200 ? createHash('sha256').update(requestId).digest('hex') : requestId;
    return `${this.opts.prefix}replay:{${id}}`;
  }
}
