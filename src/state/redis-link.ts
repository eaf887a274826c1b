/**
 * The Redis connection and its pub/sub. No command is queued or retried; a failure other than a command error marks
 * Redis down, and while down `run` fails without touching the network so callers fall back at once.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { LuaScript } from './redis-scripts.js';
import type { StateConfig, StateLog } from './types.js';
import { Listeners } from './util.js';
import { GatewayError } from '../errors.js';

type Client = Redis | Cluster;
type RedisConfig = NonNullable<StateConfig['redis']>;

class RedisUnavailable extends GatewayError {
  constructor() {
    super('GATEWAY_ERR_STATE_UNAVAILABLE', 'redis unavailable');
    this.name = 'RedisUnavailable';
  }
}

/** Server replies that mean "not serving right now" rather than "this command is wrong". */
const TRANSIENT_REPLY = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|NOREPLICAS)\b/;

/** A reply error about the command itself (a bug, a wrong type, OOM), not Redis not serving. */
export function isCommandError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError' && !TRANSIENT_REPLY.test(err.message);
}

const PROBE_MS = 250;

/** Defaults that keep every command short; `state.redis.options` may override any of them. */
const DEFAULTS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  commandTimeout: 500,
  connectTimeout: 1000,
  // Reconnect soon after Redis returns; the cap keeps a long outage from turning into a tight loop.
  retryStrategy: (times: number) => Math.min(100 * times, 1000),
};

export class RedisLink {
  readonly client: Client;
  private readonly sub: Client;
  private up = false;
  /** Decided once: the first "down" (Redis unreachable at start) is logged too. */
  private known = false;
  private closed = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private lastError: string | undefined;
  private readonly upListeners: Listeners<[boolean]>;
  private lastCommandErrorLog = 0;

  constructor(
    config: RedisConfig,
    readonly channel: string,
    private readonly log: StateLog,
    onMessage: (message: string) => void,
  ) {
    this.upListeners = new Listeners((err) => log.warn({ err }, 'state: up-change listener threw'));
    // `cluster` is the store's own key (true or ClusterOptions, `url` the seed node); the rest go to ioredis.
    const { cluster, ...rest } = config.options;
    const options = { ...DEFAULTS, ...rest } as RedisOptions; // ioredis' options type does not accept our defaults' narrower literal types
    // The subscriber sends one SUBSCRIBE, queued until connected and renewed by ioredis on every reconnect.
    const subOverride = { enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined };
    if (cluster !== undefined && cluster !== false) {
      const { retryStrategy, ...nodeOptions } = options;
      const clusterOptions: ClusterOptions = {
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy ?? null,
        ...(typeof cluster === 'object' ? (cluster as ClusterOptions) : {}), // ioredis' cluster options type does not accept our narrower literal types
        redisOptions: nodeOptions,
      };
      this.client = new Cluster([config.url], clusterOptions);
      this.sub = new Cluster([config.url], {
        ...clusterOptions,
        ...subOverride,
        redisOptions: { ...nodeOptions, ...subOverride },
      });
    } else {
      this.client = new Redis(config.url, options);
      this.sub = new Redis(config.url, { ...options, ...subOverride });
    }
    // The first "up" also waits for the subscription (or its failure), so that once up, this replica hears
    // every announcement; later reconnects resubscribe by themselves (ioredis autoResubscribe).
    const subscribed = this.sub.subscribe(channel).then(
      () => {},
      (err: unknown) => {
        if (!this.closed) log.warn({ err }, 'state: subscribing to redis failed; other replicas are seen by polling');
      },
    );
    this.client.on('ready', () => void subscribed.then(() => this.setUp(this.client.status === 'ready')));
    this.client.on('close', () => this.setUp(false));
    this.client.on('end', () => this.setUp(false));
    this.client.on('error', (err: Error) => {
      this.lastError = err.message; // reported with the next transition, not once per reconnect attempt
    });
    this.sub.on('error', () => {}); // its state follows the client's; without a listener ioredis prints each
    this.sub.on('message', (ch: string, message: string) => {
      if (ch === channel) onMessage(message);
    });
  }

  isUp(): boolean {
    return this.up;
  }

  onUpChange(listener: (up: boolean) => void): () => void {
    return this.upListeners.add(listener);
  }

  async run<T>(op: (client: Client) => Promise<T>): Promise<T> {
    if (!this.up) throw new RedisUnavailable();
    try {
      return await op(this.client);
    } catch (err) {
      if (isCommandError(err)) {
        // A bug or a server limit (e.g. OOM), not an outage: this call falls back; log at most once a minute.
        if (Date.now() - this.lastCommandErrorLog > 60_000) {
          this.lastCommandErrorLog = Date.now();
          this.log.warn({ err }, 'state: redis command failed; answering from local state');
        }
      } else {
        this.lastError = err instanceof Error ? err.message : String(err);
        this.setUp(false);
      }
      throw err;
    }
  }

  /** Loads the script on NOSCRIPT (first use, or a restart or failover emptied the cache). */
  script(s: LuaScript, keys: string[], args: (string | number | Buffer)[], asBuffers = false): Promise<unknown> {
    return this.run(async (c) => {
      const call = (cmd: 'evalsha' | 'eval', first: string): Promise<unknown> => {
        const callArgs = [first, keys.length, ...keys, ...args];
        return asBuffers ? c.callBuffer(cmd, callArgs) : c.call(cmd, callArgs);
      };
      try {
        return await call('evalsha', s.sha);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return call('eval', s.lua);
        throw err;
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return; // a second disconnect would leave ioredis's 2 s timer holding the process
    this.closed = true;
    clearInterval(this.probeTimer);
    this.up = false;
    // disconnect, not quit: quit would wait on a server that may be the reason we are closing.
    this.client.disconnect();
    this.sub.disconnect();
  }

  private setUp(up: boolean): void {
    if (this.closed) return;
    if (!up) this.startProbe();
    else {
      clearInterval(this.probeTimer);
      this.probeTimer = undefined;
    }
    if (up === this.up && this.known) return;
    const changed = up !== this.up;
    this.known = true;
    this.up = up;
    if (up) this.log.info({}, 'state: redis available; limits, replay, counters and shared values are cluster-wide');
    else {
      this.log.warn(
        { error: this.lastError },
        'state: redis unavailable; limits and replay fall back to this process until it returns',
      );
    }
    if (changed) this.upListeners.emit(up);
  }

  /** Down with the connection open (Redis was slow, not gone): PINGs until it answers within the timeout. */
  private startProbe(): void {
    if (this.probeTimer !== undefined) return;
    let inFlight = false;
    this.probeTimer = setInterval(() => {
      if (inFlight || this.client.status !== 'ready') return;
      inFlight = true;
      this.client
        .ping()
        .then(() => this.setUp(true))
        .catch(() => {})
        .finally(() => {
          inFlight = false;
        });
    }, PROBE_MS);
    this.probeTimer.unref();
  }
}
