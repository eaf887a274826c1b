/**
 * Idempotent replay, per process (LocalReplay) or through Redis (RedisReplay): one hash per request_id, "pending"
 * under a lease its owner renews, or "done" for replay_ttl_s. Waiters are woken by pub/sub and poll as a safety net.
 */
import type { AbortLike } from '../abort.js';
import { createHash } from 'node:crypto';
import { joinBody, type AnswerBody } from '../protocol/answer/answer-body.js';
import { PooledCopy } from '../protocol/byte-store.js';
import type { RedisLink } from './redis-link.js';
import { arrayReply, bufferAt, REPLAY_BEGIN, REPLAY_END, REPLAY_RENEW } from './redis-scripts.js';
import type { ReplayBegin, ReplayLease, ReplayStore, StateConfig, StoreStats } from './types.js';
import { Fifo, GAVE_UP, leaseRenewer, newId, raceAbort, Wakers } from './util.js';
import { GatewayError } from '../errors.js';
import { mbToBytes } from '../config/schema.js';

/** An entry's heap besides its answer, about 1 KB (measured under S1: uncounted, 16 MB of small answers held 32). */
const ENTRY_BYTES = 1024;

interface Pending {
  state: 'pending';
  hash: string;
}

/** A small answer's bytes as a latin1 string, one character a byte (replayKept says why). */
interface Packed {
  latin1: string;
}

interface Done {
  state: 'done';
  hash: string;
  /** A larger answer's copy is in reused memory, given back when the entry goes: a hit copies it out. */
  body: string | Packed | PooledCopy;
  /** What the entry keeps alive (replayKept), counted against the cache's bound. */
  bytes: number;
  expiresAt: number;
}

interface LocalReplayLimits {
  ttlMs: number;
  maxBytes: number;
  capBytes: number;
}

/** Whole milliseconds: Redis's PX takes integers only. */
export function replayLimits(config: StateConfig): LocalReplayLimits {
  return { ttlMs: Math.ceil(config.replay_ttl_s * 1000), maxBytes: config.replay_max_bytes, capBytes: mbToBytes(config.replay_cache_mb) };
}

export class LocalReplay implements ReplayStore {
  private readonly entries = new Map<string, Pending | Done>();
  /**
   * Stored answers, oldest first: with one ttl for all, the head is the next to expire or be evicted. Not a Set:
   * iterated from its start it walks every entry deleted since its last compaction (all the evicted, under S1).
   */
  private readonly doneOrder = new Fifo<{ rid: string; entry: Done }>();
  private readonly waiters = new Wakers();
  private bytes = 0;

  constructor(
    private readonly limits: LocalReplayLimits,
    private readonly stats: StoreStats,
  ) {}

  async begin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin> {
    let waited = false;
    for (;;) {
      if (signal?.aborted) return { kind: 'aborted' };
      this.expire();
      const entry = this.entries.get(requestId);
      if (entry === undefined) return { kind: 'compute', lease: this.start(requestId, bodyHash) };
      if (entry.hash !== bodyHash) {
        this.stats.replayConflicts++;
        return { kind: 'conflict' };
      }
      if (entry.state === 'done') {
        this.stats.replayHits++;
        return { kind: 'hit', body: unpacked(entry.body) };
      }
      if (!waited) this.stats.replayWaits++;
      waited = true;
      // Woken by finish/abandon, then look again: an abandoned entry is gone and this caller may compute.
      await this.waiters.nap(requestId, Infinity, signal);
    }
  }

  clear(): void {
    for (const [rid, entry] of this.entries) {
      if (entry.state === 'pending') this.settle(rid, entry, undefined);
      else letGo(entry.body);
    }
    this.entries.clear();
    this.doneOrder.clear();
    this.bytes = 0;
  }

  private start(requestId: string, hash: string): ReplayLease {
    const entry: Pending = { state: 'pending', hash };
    this.entries.set(requestId, entry);
    return {
      finish: async (body) => this.settle(requestId, entry, body),
      abandon: async () => this.settle(requestId, entry, undefined),
    };
  }

  /** Ends a computation once (later calls, e.g. after close, do nothing). */
  private settle(requestId: string, entry: Pending, answer: string | AnswerBody | undefined): void {
    if (this.entries.get(requestId) !== entry) return;
    this.entries.delete(requestId);
    if (answer !== undefined) {
      const kept = replayKept(answer, this.limits.maxBytes);
      if (kept === undefined) this.stats.replayTooLarge++;
      else this.store(requestId, entry.hash, kept);
    }
    this.waiters.wake(requestId);
  }

  private store(requestId: string, hash: string, kept: Kept): void {
    this.expire();
    const bytes = kept.bytes + ENTRY_BYTES;
    // One entry larger than the whole cache would evict every other one and then itself.
    if (bytes > this.limits.capBytes) {
      letGo(kept.body);
      this.stats.replayTooLarge++;
      return;
    }
    const done: Done = { state: 'done', hash, body: kept.body, bytes, expiresAt: Date.now() + this.limits.ttlMs };
    this.entries.set(requestId, done);
    this.doneOrder.push({ rid: requestId, entry: done });
    this.bytes += bytes;
    this.stats.replayStored++;
    while (this.bytes > this.limits.capBytes) {
      const oldest = this.doneOrder.shift();
      if (oldest === undefined) break;
      if (this.drop(oldest.rid, oldest.entry)) this.stats.replayEvicted++;
    }
  }

  /** Not a timer per entry: at thousands of batches a second that is thousands of live timers for the GC to carry. */
  private expire(): void {
    const now = Date.now();
    for (;;) {
      const oldest = this.doneOrder.peek();
      if (oldest === undefined || oldest.entry.expiresAt > now) return;
      this.doneOrder.shift();
      this.drop(oldest.rid, oldest.entry);
    }
  }

  private drop(requestId: string, entry: Done): boolean {
    if (this.entries.get(requestId) !== entry) return false;
    this.entries.delete(requestId);
    this.bytes -= entry.bytes;
    letGo(entry.body);
    return true;
  }
}

/** A lapsed owner lease announces nothing. */
const WAIT_POLL_MS = 200;

export class RedisReplay implements ReplayStore {
  private readonly waiters = new Wakers();
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

/** An answer as the Redis replay sends it (pieces joined, never decoded); undefined when over `max` bytes. */
function replayBytes(body: string | AnswerBody, max: number): string | Buffer | undefined {
  if (typeof body === 'string') return utf8Exceeds(body, max) ? undefined : body;
  return body.length > max ? undefined : joinBody(body);
}

/**
 * Under this many bytes an answer is kept packed: one flat string the collector never looks into, where a Buffer
 * is four objects and a store outside the heap. Small batches' entries are the most numerous things the gateway
 * holds (thousands a second for replay_ttl_s); held as Buffers they cost S1 a tenth of its CPU in collections.
 */
const PACK_UNDER_BYTES = 64 * 1024;

function unpacked(body: Done['body']): string | AnswerBody {
  if (typeof body === 'string') return body;
  const bytes = body instanceof PooledCopy ? body.copy() : Buffer.from(body.latin1, 'latin1');
  return { parts: [bytes], length: bytes.length };
}

function letGo(body: Done['body']): void {
  if (body instanceof PooledCopy) body.release();
}

type Kept = Pick<Done, 'body' | 'bytes'>;

/**
 * A small answer is packed; a larger one is copied into memory earlier batches gave back (byte-store.ts), given back
 * when the entry goes: held as they came, its pieces would keep a batch's memory alive (a store's pieces are empty
 * once it ends) and, held past two young collections, start full ones that free nothing.
 */
function replayKept(body: string | AnswerBody, max: number): Kept | undefined {
  if (typeof body === 'string') return utf8Exceeds(body, max) ? undefined : { body, bytes: body.length };
  if (body.length > max) return undefined;
  if (body.length < PACK_UNDER_BYTES) {
    const latin1 = body.parts.map((p) => p.toString('latin1')).join('');
    return { body: { latin1 }, bytes: body.length };
  }
  return { body: new PooledCopy(body.parts, body.length), bytes: body.length };
}

/** Without encoding `s` when its length tells (n UTF-16 units are n to 3n UTF-8 bytes): answers are megabytes. */
function utf8Exceeds(s: string, max: number): boolean {
  if (s.length > max) return true;
  if (s.length * 3 <= max) return false;
  return Buffer.byteLength(s, 'utf8') > max;
}
