/** The contract harness and "deployments" (replicas sharing one key_prefix) for a Redis or Redis Cluster URL. */
import assert from 'node:assert/strict';
import { createStore, type Store } from '../../src/state/index.js';
import type { StateConfig } from '../../src/state/types.js';
import type { Harness } from './contract.js';
import { waitFor } from '../helpers/wait.js';
import { deleteKeys, listKeys, recordingLog, redisCall, redisConfig, uniquePrefix, waitUntilUp } from './helpers.js';

export interface Deployment {
  prefix: string;
  /** A new store (= gateway replica) of this deployment, connected. */
  replica(): Promise<Store>;
}

export class RedisDeployments {
  private readonly prefixes: string[] = [];
  private readonly stores: Store[] = [];

  constructor(
    private readonly url: string,
    private readonly options: Record<string, unknown> = {},
  ) {}

  deployment(over: Partial<StateConfig> = {}): Deployment {
    const prefix = uniquePrefix();
    this.prefixes.push(prefix);
    return {
      prefix,
      replica: async () => {
        const store = createStore(redisConfig(prefix, this.url, over, this.options), recordingLog());
        this.stores.push(store);
        assert.ok(await waitUntilUp(store, 3000), `redis at ${this.url} is reachable`);
        return store;
      },
    };
  }

  /** Closes every store made so far (all of which must have been served by Redis) and deletes their keys. */
  async cleanup(): Promise<void> {
    for (const s of this.stores) {
      assert.equal(s.stats().fallbacks, 0, 'every call was served by redis, not the fallback');
    }
    await Promise.all(this.stores.splice(0).map((s) => s.close()));
    await Promise.all(this.prefixes.splice(0).map((p) => deleteKeys(p, this.url)));
  }

  /** One deployment per contract test. */
  harness(): Harness {
    let current: Deployment | undefined;
    return {
      make: async (over) => {
        current = this.deployment(over);
        return current.replica();
      },
      assertIdle: async (key) => {
        const prefix = current?.prefix ?? '';
        // Releases travel asynchronously: wait for them; then nothing of the semaphore may remain.
        await waitFor('no permit or waiter left in redis', async () => {
          const keys = await listKeys(`${prefix}sem:{${key}}:`, this.url);
          return keys.every((k) => k.endsWith(':ticket'));
        }, { timeoutMs: 15_000 }); // a loaded machine (a cluster, a second runtime) delays the releases; passing costs no wait
      },
      waitQueued: async (key, n) => {
        const queue = `${current?.prefix ?? ''}sem:{${key}}:queue`;
        await waitFor(`${n} waiters in ${queue}`, async () => Number(await redisCall(this.url, 'ZCARD', queue)) === n);
      },
      cleanup: () => this.cleanup(),
    };
  }
}
