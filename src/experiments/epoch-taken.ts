import type { Claims } from '../state/types.js';
import { keys, parseExperimentRecord } from './keys.js';

/**
 * Did another experiment of the route already start at or after the reset `epoch`
 * (docs/experiments.md#an-experiments-lifetime)? Then a reload after that reset started `experiment`, with its
 * first trajectory, and the one before it ended there, not at the reset (which would give it no lifetime at all).
 */
export async function epochTaken(store: Claims, agent: string, route: string, experiment: string, epoch: string): Promise<boolean> {
  const others = (await store.readSet(keys.list(agent, route))).filter((id) => id !== experiment);
  const records = await Promise.all(others.map((id) => store.readClaim(keys.experiment(id))));
  return records.some((r) => (parseExperimentRecord(r)?.started_at ?? '') >= epoch);
}
