/**
 * Which backends and replicas take coaching calls (docs/routing.md#coaching-routing). A session is state in one
 * agent process, so a run_id's calls go to one replica: rendezvous hashing, or the one that accepted it.
 */
import type { CompiledAgent } from '../routing/agents.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Replica } from '../upstream/replica.js';
import { hash32 } from '../routing/split.js';
import { errorBody } from '../errors.js';

/** Sessions remembered per backend; older ones fall back to hashing, which picks the same replica when stable. */
const MAX_SESSIONS_PER_BACKEND = 10_000;

function coachingReplicas(runtime: GatewayRuntime, backend: string): Replica[] {
  return (runtime.upstreams.backends.get(backend)?.replicas ?? []).filter((r) => r.state === 'ready' && r.info?.capabilities.coaching === true);
}

/** With no replica ready, a backend counts when its last info said coaching: a 503 rather than silently skipped. */
export function coachingBackends(runtime: GatewayRuntime, agent: CompiledAgent): string[] {
  return agent.reachable.filter((b) => {
    const replicas = runtime.upstreams.backends.get(b)?.replicas ?? [];
    const ready = replicas.filter((r) => r.state === 'ready');
    const seen = ready.length > 0 ? ready : replicas.filter((r) => r.state !== 'incompatible');
    return seen.some((r) => r.info?.capabilities.coaching === true);
  });
}

export interface BackendOutcome {
  backend: string;
  status: number;
  detail?: string;
}

export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** The highest failure status naming the backends that succeeded too: a partial PUT leaves sessions on those. */
export function aggregate(method: string, runId: string, outcomes: BackendOutcome[]): { status: number; body?: object } {
  const failed = outcomes.filter((o) => !isSuccess(o.status));
  if (failed.length === 0) return { status: 204 };
  const status = Math.max(...failed.map((o) => o.status));
  const names = failed.map((o) => `${o.backend} (${o.status}${o.detail ? `: ${o.detail}` : ''})`).join('; ');
  const ok = outcomes.filter((o) => isSuccess(o.status)).map((o) => o.backend);
  const rest = ok.length > 0 ? `; succeeded on ${ok.join(', ')}` : '';
  return { status, body: { ...errorBody('GATEWAY_ERR_COACHING_BACKEND', `${method} coaching session ${runId} failed on ${names}${rest}`), backends: outcomes } };
}

export class SessionAffinity {
  private readonly byBackend = new Map<string, Map<string, string>>();

  pick(runtime: GatewayRuntime, backend: string, runId: string | undefined): Replica | undefined {
    const eligible = coachingReplicas(runtime, backend);
    if (eligible.length === 0) return undefined;
    const key = runId ?? '';
    const known = this.byBackend.get(backend)?.get(key);
    const held = known === undefined ? undefined : eligible.find((r) => r.url === known);
    if (held !== undefined) return held;
    // Rendezvous hashing: the replica whose (run_id, url) scores highest, the first of equals.
    const score = (r: Replica): number => hash32(`${key}\n${r.url}`);
    return eligible.reduce((best, r) => (score(r) > score(best) ? r : best));
  }

  remember(backend: string, runId: string, replica: Replica): void {
    let m = this.byBackend.get(backend);
    if (m === undefined) this.byBackend.set(backend, (m = new Map()));
    m.delete(runId); // re-insert at the end: Map order is the eviction order
    m.set(runId, replica.url);
    if (m.size > MAX_SESSIONS_PER_BACKEND) {
      const oldest = m.keys().next().value;
      if (oldest !== undefined) m.delete(oldest);
    }
  }

  forget(backend: string, runId: string): void {
    this.byBackend.get(backend)?.delete(runId);
  }
}
