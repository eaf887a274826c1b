/** What both stores do alike: count, hold the shared-value listeners, and hand calls to their parts. */
import type { AbortLike } from '../abort.js';
import {
  emptyStats,
  type AcquireOptions,
  type ClaimResult,
  type Permit,
  type ReplayBegin,
  type SharedListener,
  type StateLog,
  type StoreStats,
} from './types.js';
import { Listeners } from './util.js';

type Awaitable<T> = T | Promise<T>;

interface ClaimParts {
  claim(key: string, value: string, ttlMs: number): Awaitable<ClaimResult>;
  read(key: string): Awaitable<string | undefined>;
  release(key: string, value: string): Awaitable<void>;
  add(key: string, member: string, ttlMs: number, maxMembers: number): Awaitable<boolean>;
  members(key: string): Awaitable<string[]>;
}

export abstract class StoreBase {
  protected readonly counts = emptyStats();
  protected readonly sharedListeners: Listeners<Parameters<SharedListener>>;
  protected abstract readonly semaphores: {
    acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined>;
  };
  protected abstract readonly replay: {
    begin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin>;
  };
  protected abstract readonly claims: ClaimParts;

  constructor(log: StateLog) {
    this.sharedListeners = new Listeners((err) => log.warn({ err }, 'state: shared-value listener threw'));
  }

  replayBegin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin> {
    return this.replay.begin(requestId, bodyHash, signal);
  }

  acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined> {
    return this.semaphores.acquire(key, limit, opts);
  }

  onSharedChange(listener: SharedListener): () => void {
    return this.sharedListeners.add(listener);
  }

  async claim(key: string, value: string, ttlMs: number): Promise<ClaimResult> {
    return this.claims.claim(key, value, ttlMs);
  }

  async readClaim(key: string): Promise<string | undefined> {
    return this.claims.read(key);
  }

  async releaseClaim(key: string, value: string): Promise<void> {
    await this.claims.release(key, value);
  }

  async addToSet(key: string, member: string, ttlMs: number, maxMembers: number): Promise<boolean> {
    return this.claims.add(key, member, ttlMs, maxMembers);
  }

  async readSet(key: string): Promise<string[]> {
    return this.claims.members(key);
  }

  stats(): StoreStats {
    return { ...this.counts };
  }
}
