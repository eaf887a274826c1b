/** Test helpers for the state stores: configs, a recording logger, a private redis-server, key cleanup. */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import type { ReplayBegin, StateConfig, StateLog, Store } from '../../src/state/types.js';
import { waitFor } from '../helpers/wait.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';

export interface LogLine {
  level: 'info' | 'warn';
  msg: string;
}

/** A logger that records what the store logs, so tests can check "logged once". */
export function recordingLog(): StateLog & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (_obj, msg) => void lines.push({ level: 'info', msg }),
    warn: (_obj, msg) => void lines.push({ level: 'warn', msg }),
  };
}

/** Resolves true once the store is up, false after `timeoutMs` (the store works on local state before that too). */
export function waitUntilUp(store: Store, timeoutMs: number): Promise<boolean> {
  if (store.isUp()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve(store.isUp());
    }, timeoutMs);
    const off = store.onUpChange((up) => {
      if (!up) return;
      clearTimeout(timer);
      off();
      resolve(true);
    });
  });
}

export function uniquePrefix(): string {
  return `magma-gw-test:${randomUUID()}:`;
}

/**
 * The `state.redis` block of a gateway test on the shared Redis. A test about what is stored, not about outages,
 * gives commands more than the 500 ms default: on a loaded CI machine one slow reply would otherwise send a write to
 * the local fallback and the test would read what it did not store.
 */
export function sharedRedis(prefix: string): { url: string; key_prefix: string; options: { commandTimeout: number } } {
  return { url: REDIS_URL, key_prefix: prefix, options: { commandTimeout: 10_000 } };
}

export function memoryConfig(over: Partial<StateConfig> = {}): StateConfig {
  return { replay_ttl_s: 600, replay_max_bytes: 1024, replay_cache_mb: 64, lease_s: 1, counters_ttl_s: 3600, index_max_entries: 10_000, ...over };
}

export function redisConfig(
  prefix: string,
  url = REDIS_URL,
  over: Partial<StateConfig> = {},
  options: Record<string, unknown> = {},
): StateConfig {
  return memoryConfig({ redis: { url, key_prefix: prefix, options }, ...over });
}

/** Deletes every key under `prefix` (tests share the CI Redis). */
export async function deleteKeys(prefix: string, url = REDIS_URL): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      // One key per DEL: on Redis Cluster a multi-key DEL across slots is refused.
      await Promise.all(keys.map((k) => r.del(k)));
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/** Keys under `prefix` that still exist (leak checks). */
export async function listKeys(prefix: string, url = REDIS_URL): Promise<string[]> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return await r.keys(`${prefix}*`);
  } finally {
    r.disconnect();
  }
}

export async function redisCall(url: string, ...args: (string | number)[]): Promise<unknown> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const [cmd, ...rest] = args;
    return await r.call(String(cmd), ...rest);
  } finally {
    r.disconnect();
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A throwaway redis-server on `port` (no persistence), started and answering PING when this resolves. */
export async function startRedisServer(port: number, extra: string[] = []): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const answers = async (): Promise<boolean> => {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      await r.connect();
      await r.ping();
      return true;
    } catch {
      return false;
    } finally {
      r.disconnect();
    }
  };
  try {
    await waitFor(`redis-server on port ${port} answering PING`, answers, { timeoutMs: 5000, everyMs: 50 });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return child;
}

/**
 * A one-node Redis Cluster owning every slot: enough to prove the store's keys and scripts are Cluster-safe
 * (Redis rejects a multi-key command or script whose keys span slots even on one node).
 */
export async function startRedisClusterNode(port: number, dir: string): Promise<ChildProcess> {
  const child = await startRedisServer(port, [
    '--cluster-enabled', 'yes',
    '--cluster-config-file', `${dir}/nodes-${port}.conf`,
    // Without it a lone node announces an empty address in CLUSTER SLOTS, which clients cannot follow.
    '--cluster-announce-ip', '127.0.0.1',
  ]);
  const url = `redis://127.0.0.1:${port}`;
  await redisCall(url, 'CLUSTER', 'ADDSLOTSRANGE', 0, 16383);
  try {
    await waitFor(`redis cluster node on port ${port} ok`, async () => String(await redisCall(url, 'CLUSTER', 'INFO')).includes('cluster_state:ok'), { timeoutMs: 5000, everyMs: 50 });
  } catch (err) {
    await killHard(child);
    throw err;
  }
  return child;
}

/** kill -9 and wait for the process to be gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/**
 * A replay outcome with a hit's body as text, whichever form the store kept it in (a string, or the answer's
 * pieces as the memory store keeps them and the Redis store reads them back).
 */
export function replayed(b: ReplayBegin): { kind: ReplayBegin['kind']; body?: string } {
  if (b.kind !== 'hit') return { kind: b.kind };
  const body = b.body;
  return { kind: 'hit', body: typeof body === 'string' ? body : Buffer.concat(body.parts as Buffer[], body.length).toString('utf8') };
}
