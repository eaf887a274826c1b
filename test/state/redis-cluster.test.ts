/**
 * The store contract on Redis Cluster (`options: { cluster: true }`), on a private one-node cluster: proves
 * every script's keys share a slot and that the Cluster client is wired (connect, scripts, pub/sub).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { contractSuite } from './contract.js';
import { waitFor } from '../helpers/wait.js';
import { freePort, killHard, startRedisClusterNode, replayed } from './helpers.js';
import { RedisDeployments } from './redis-harness.js';

const port = await freePort();
let node: ChildProcess | undefined;
const cluster = new RedisDeployments(`redis://127.0.0.1:${port}`, { cluster: true });

before(async () => {
  node = await startRedisClusterNode(port, mkdtempSync(join(tmpdir(), 'magma-gw-cluster-')));
});
after(async () => {
  try {
    await cluster.cleanup();
  } finally {
    if (node !== undefined) await killHard(node); // a live child would keep the test process from exiting
  }
});

contractSuite('redis cluster', cluster.harness());

describe('redis cluster across replicas', { timeout: 30_000 }, () => {
  it('announces shared values and replays between replicas', async () => {
    const d = cluster.deployment();
    const [a, b] = await Promise.all([d.replica(), d.replica()]);
    const seen: (string | undefined)[] = [];
    b.shared.onChange((_k, v) => seen.push(v));
    await a.shared.set('eject:x', 'yes', 5000);
    await waitFor('pub/sub works on the cluster', () => seen.length === 1, { timeoutMs: 1000 });
    const rid = randomUUID();
    const first = await a.replay.begin(rid, 'h');
    const waiting = b.replay.begin(rid, 'h');
    if (first.kind === 'compute') await first.lease.finish('body');
    assert.deepEqual(replayed(await waiting), { kind: 'hit', body: 'body' });
  });
});
