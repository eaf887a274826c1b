/**
 * Idempotent replay shared through Redis: one hash per request_id holding the body hash and either "pending"
 * (with the owner's token, expiring after a lease the owner renews while it computes) or "done" (the response,
 * kept for replay_ttl_s). REPLAY_BEGIN decides atomically who computes; identical batches on any replica wait,
 * woken by pub/sub when the owner ends and polling as a safety net. An owner that dies stops renewing, the
 * entry expires within the lease, and a waiter takes over.
 *
 * While Redis is unavailable, replay uses this process's local replay (same semantics within the process).
 */
import type { AbortLike } from '../abort.js';
import { createHash } from 'node:crypto';
import type { LocalReplay } from './local-replay.js';
import type { RedisLink } from './redis-link.js';
import { arrayReply, bufferAt, REPLAY_BEGIN, REPLAY_END, REPLAY_RENEW } from './redis-scripts.js';
import type { ReplayBegin, ReplayLease, StoreStats } from './types.js';
import { GAVE_UP, leaseRenewer, newId, raceAbort, replayBytes, Wakers } from './util.js';
import { GatewayError } from '../errors.js';

/** Safety-net poll of a waiter (a lapsed owner lease announces nothing). */
const WAIT_POLL_MS = 200;

interface ReplayOptions {
  prefix: string;
  ttlMs: number;
  maxBytes: number;
  leaseMs: number;
}

export class RedisReplay {
  /** This process's waiters, woken when an owner's end is announced. */
  private readonly waiters = new Wakers();
  /** Redis keys of the computations this process owns, by token: renewed while running, abandoned on close. */
  private readonly owned = new Map<string, string>();
  /**
   * Entries Redis may hold for this process but no one renews or ends (a begin whose answer was lost, an end
   * that failed): abandoned once Redis is back, so identical batches need not wait for the lease to lapse.
   */
  private readonly orphans = new Map<string, string>();
  private readonly renewTimer: NodeJS.Timeout;

  constructor(
    private readonly link: RedisLink,
    private readonly local: LocalReplay,
    private readonly stats: StoreStats,
    private readonly opts: ReplayOptions,
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
      const attempt = this.link.scriptBuffer(REPLAY_BEGIN, [key], [bodyHash, token, this.opts.leaseMs]);
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
      const replied = arrayReply(reply); // [state, body?], as Buffers
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

  /** Wakes this process's waiters for a replay key (its owner ended). */
  wake(key: string): void {
    this.waiters.wake(key);
  }

  /** Redis is back: abandons the entries left without an owner meanwhile. */
  onUp(): void {
    for (const [token, key] of this.orphans) {
      this.orphans.delete(token);
      void this.abandon(key, token);
    }
  }

  /** Abandons what this process still computes, so waiters elsewhere take over now rather than after the lease. */
  async close(): Promise<void> {
    clearInterval(this.renewTimer);
    const ends = [...this.owned].map(([token, key]) => this.end(key, token, undefined));
    const orphans = [...this.orphans].map(([token, key]) => this.abandon(key, token));
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
        if (body === undefined) {
          this.stats.replayTooLarge++;
          return this.end(key, token, undefined);
        }
        return this.end(key, token, body);
      },
      abandon: () => this.end(key, token, undefined),
    };
  }

  /**
   * Stores the body (or abandons) if this token still owns the entry. A failure is not reported to the caller:
   * the entry is abandoned once Redis is back (or lapses with its lease) and a waiter computes, the same
   * outcome as an abandon.
   */
  private async end(key: string, token: string, body: string | Buffer | undefined): Promise<void> {
    if (!this.owned.delete(token)) return; // ended already (finish after close, or twice)
    if (body === undefined) return this.abandon(key, token);
    const message = JSON.stringify({ t: 'replay', k: key });
    try {
      const args = [token, 'finish', body, this.opts.ttlMs, this.link.channel, message];
      if ((await this.link.script(REPLAY_END, [key], args)) === 1) this.stats.replayStored++;
    } catch {
      this.orphans.set(token, key);
    }
  }

  private async abandon(key: string, token: string): Promise<void> {
    const message = JSON.stringify({ t: 'replay', k: key });
    try {
      await this.link.script(REPLAY_END, [key], [token, 'abandon', '', 0, this.link.channel, message]);
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
    // request_id comes from clients: a very long one is hashed so that keys stay small.
    const id = requestId.length > 200 ? createHash('sha256').update(requestId).digest('hex') : requestId;
    return `${this.opts.prefix}replay:{${id}}`;
  }
}
