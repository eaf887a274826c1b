/**
 * Ejections shared across gateway replicas (docs/deployment.md#several-gateway-replicas-redis). Probe results need
 * no sharing: every gateway replica probes every backend itself each probe_interval_s.
 */
import type { Logger } from '../logging.js';
import type { SharedValues } from '../state/types.js';
import type { Replica } from './replica.js';
import type { Upstreams } from './upstreams.js';

function ejectionKey(r: Replica): string {
  return `eject:${r.backend}:${r.url}`;
}

export class SharedEjections {
  private unsubscribe: (() => void) | undefined;
  private readonly byKey = new Map<string, Replica>();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly shared: SharedValues,
    private readonly log: Logger,
  ) {
    for (const r of upstreams.all()) this.byKey.set(ejectionKey(r), r);
  }

  /** Publishes a local ejection for as long as it lasts. */
  private publisher(): (r: Replica) => void {
    return (r) => {
      const ttl = r.ejectedUntil - Date.now();
      if (ttl <= 0) return;
      this.shared
        .set(ejectionKey(r), String(r.ejectedUntil), ttl)
        .catch((err: unknown) => this.log.debug({ err }, 'could not share an ejection'));
    };
  }

  /** Also catches up with the ejections already in force. */
  async start(): Promise<void> {
    this.upstreams.onEject = this.publisher();
    this.unsubscribe = this.shared.onChange((key, value) => {
      if (value !== undefined) this.apply(key, value);
    });
    await Promise.all(
      [...this.byKey.keys()].map(async (key) => {
        const value = await this.shared.get(key).catch(() => undefined);
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
