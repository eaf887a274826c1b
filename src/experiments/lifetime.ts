/**
 * An experiment's lifetime (docs/experiments.md#an-experiments-lifetime). Reset times are shared values, so every
 * replica starts the new experiment; this process keeps them in a map fed by the store's change notifications.
 */
import { createHash } from 'node:crypto';
import type { CompiledRoute } from '../routing/plan.js';
import type { StorePorts } from '../state/types.js';
import { EPOCH_PREFIX, keys, parseExperimentRecord } from './keys.js';

export function experimentId(agent: string, route: CompiledRoute, epoch: string | undefined): string {
  const named = [agent, route.name, route.kind, route.members.map((m) => [m.name, m.weight]), route.experiment.name ?? null, epoch ?? null];
  return createHash('sha256').update(JSON.stringify(named), 'utf8').digest('hex').slice(0, 16);
}

export class Lifetimes {
  /** Reset time per `<agent>/<route>`; null = read, none set. */
  private readonly epochs = new Map<string, string | null>();
  private subscribed: Pick<StorePorts, 'shared'> | undefined;

  private readonly ids = new WeakMap<CompiledRoute, { agent: string; epoch: string | undefined; id: string }>();

  async id(store: Pick<StorePorts, 'shared'>, agent: string, route: CompiledRoute): Promise<string> {
    const epoch = await this.epoch(store, agent, route.name);
    // Asked per input on the request path.
    const hit = this.ids.get(route);
    if (hit !== undefined && hit.agent === agent && hit.epoch === epoch) return hit.id;
    const id = experimentId(agent, route, epoch);
    this.ids.set(route, { agent, epoch, id });
    return id;
  }

  async epoch(store: Pick<StorePorts, 'shared'>, agent: string, route: string): Promise<string | undefined> {
    this.subscribe(store);
    const k = `${agent}/${route}`;
    const known = this.epochs.get(k);
    if (known !== undefined) return known ?? undefined;
    const v = await store.shared.get(keys.epoch(agent, route));
    // A reset announced while reading wins over what was read.
    if (!this.epochs.has(k)) this.epochs.set(k, v ?? null);
    return this.epochs.get(k) ?? undefined;
  }

  async reset(store: Pick<StorePorts, 'shared'>, agent: string, route: string, ttlMs: number, now: Date): Promise<void> {
    this.subscribe(store);
    const at = now.toISOString();
    this.epochs.set(`${agent}/${route}`, at);
    await store.shared.set(keys.epoch(agent, route), at, ttlMs);
  }

  private subscribe(store: Pick<StorePorts, 'shared'>): void {
    if (this.subscribed === store) return;
    this.subscribed = store;
    this.epochs.clear();
    store.shared.onChange((key, value) => {
      if (key.startsWith(EPOCH_PREFIX)) this.epochs.set(key.slice(EPOCH_PREFIX.length), value ?? null);
    });
  }
}

/**
 * Did another experiment of the route already start at or after the reset `epoch`? Then a reload after that reset
 * started `experiment`, with its first trajectory, and the one before it ended there, not at the reset (which would
 * give it no lifetime at all).
 */
export async function epochTaken(store: Pick<StorePorts, 'claims'>, agent: string, route: string, experiment: string, epoch: string): Promise<boolean> {
  const others = (await store.claims.members(keys.list(agent, route))).filter((id) => id !== experiment);
  const records = await Promise.all(others.map((id) => store.claims.read(keys.experiment(id))));
  return records.some((r) => (parseExperimentRecord(r)?.started_at ?? '') >= epoch);
}
