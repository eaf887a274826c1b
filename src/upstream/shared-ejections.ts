/**
 * Ejections shared across gateway replicas (docs/deployment.md#several-gateway-replicas-redis): a backend ejected by one is seen by all:
 * an ejection decided here is published in the store with its end time; one published elsewhere is applied
 * here at once (the store pushes changes; with Redis across replicas, in memory within the process).
 * Probe results need no sharing: every replica probes every backend each probe_interval_s itself, so a probe
 * outcome reaches every replica within one interval by construction.
 */
import type { Logger } from '../logging.js';
import type { SharedValues } from '../state/types.js';
import type { Replica } from './replica.js';
import type { Upstreams } from './upstreams.js';

const PREFIX = 'eject:';

function ejectionKey(r: Replica): string {
  return `${PREFIX}${r.backend}:${r.url}`;
}

export class SharedEjections {
  private unsubscribe: (() => void) | undefined;
  private readonly byKey = new Map<string, Replica>();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly store: SharedValues,
    private readonly log: Logger,
  ) {
    for (const r of upstreams.all()) this.byKey.set(ejectionKey(r), r);
  }

  /** What a local ejection does: publish it for the other replicas, for as long as it lasts. */
  private publisher(): (r: Replica) => void {
    return (r) => {
      const ttl = r.ejectedUntil - Date.now();
      if (ttl <= 0) return;
      this.store
        .setShared(ejectionKey(r), String(r.ejectedUntil), ttl)
        .catch((err: unknown) => this.log.debug({ err }, 'could not share an ejection'));
    };
  }

  /** Publish local ejections, follow remote ones, and catch up with those already in force. */
  async start(): Promise<void> {
    this.upstreams.onEject = this.publisher();
    this.unsubscribe = this.store.onSharedChange((key, value) => {
      if (value !== undefined) this.apply(key, value);
    });
    await Promise.all(
      [...this.byKey.keys()].map(async (key) => {
        const value = await this.store.getShared(key).catch(() => undefined);
        if (value !== undefined) this.apply(key, value);
      }),
    );
  }

  stop(): void {
    this.unsubscribe?.();
    this.upstreams.onEject = undefined;
  }

  private apply(key: string, value: string): void {
    const r = this.byKey.get(key);
    const until = Number(value);
    if (r === undefined || !Number.isFinite(until)) return;
    if (this.upstreams.applyRemoteEjection(r, until)) {
      this.log.warn({ backend: r.backend, replica: r.id, until: new Date(until).toISOString() }, 'replica ejected by another gateway replica');
    }
  }
}
