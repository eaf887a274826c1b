/**
 * Which backends take coaching calls, and which of their replicas (docs/routing.md#coaching-routing:
 * the gateway reads each backend's /v1/info and only counts backends reachable through routes).
 *
 * Session affinity: a coaching session (`PUT /v1/coaching/sessions/{run_id}`) is state inside one agent
 * process, so every later call for that run_id must reach the same replica of each backend. Two mechanisms:
 * - the replica is chosen by rendezvous hashing of (run_id, replica url) over the eligible replicas, so every
 *   gateway replica and a restarted gateway pick the same one without shared state, and a replica going away
 *   only moves its own sessions;
 * - the replica that accepted a session is remembered (run_id -> replica url, per backend, bounded) and
 *   preferred while it stays eligible, so a replica joining later does not pull existing sessions away.
 * Urls (not Replica objects) are remembered so the memory survives a config reload that keeps the replica.
 */
import type { CompiledAgent } from '../routing/agents.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Replica } from '../upstream/replica.js';
import { hash32 } from '../routing/split.js';
import { errorBody } from '../errors.js';

/** Sessions remembered per backend; older ones fall back to hashing, which picks the same replica when stable. */
const MAX_SESSIONS_PER_BACKEND = 10_000;

/** A replica may take coaching calls: probed ready and its own /v1/info says `coaching: true`. */
function coachingReplicas(runtime: GatewayRuntime, backend: string): Replica[] {
  const replicas = runtime.upstreams.backends.get(backend)?.replicas ?? [];
  return replicas.filter((r) => r.state === 'ready' && r.info?.capabilities.coaching === true);
}

/**
 * Backends reachable through `agent`'s routes that advertise coaching. A backend counts when a ready replica says so,
 * or, with no replica ready, when the last info it gave said so: that backend then shows up as a failure
 * (503) in a session fan-out instead of being skipped silently, which would leave its trajectories without a
 * session. Backends whose replicas all report coaching false (or never answered /v1/info) are not asked.
 */
export function coachingBackends(runtime: GatewayRuntime, agent: CompiledAgent): string[] {
  return agent.reachable.filter((b) => {
    const replicas = runtime.upstreams.backends.get(b)?.replicas ?? [];
    const ready = replicas.filter((r) => r.state === 'ready');
    const seen = ready.length > 0 ? ready : replicas.filter((r) => r.state !== 'incompatible');
    return seen.some((r) => r.info?.capabilities.coaching === true);
  });
}

/** One backend's answer in a session fan-out; `detail` only for a failure. */
export interface BackendOutcome {
  backend: string;
  status: number;
  detail?: string;
}

export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/**
 * One answer for a session fan-out. Every backend 2xx (the contract's answer is 204): 204. Otherwise the
 * highest status among the failures, so a 5xx (the gateway could not reach an agent) outranks a 409 (an agent
 * refused), with a detail naming each failed backend and the ones that succeeded: a partial PUT leaves
 * sessions on those, and the caller has to know.
 */
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

  /**
   * The replica for `runId` on `backend`: the remembered one while eligible, else the rendezvous choice.
   * Undefined when the backend has no eligible replica. Without a run_id, rendezvous on the empty string.
   */
  pick(runtime: GatewayRuntime, backend: string, runId: string | undefined): Replica | undefined {
    const eligible = coachingReplicas(runtime, backend);
    if (eligible.length === 0) return undefined;
    const key = runId ?? '';
    const known = this.byBackend.get(backend)?.get(key);
    const held = known === undefined ? undefined : eligible.find((r) => r.url === known);
    if (held !== undefined) return held;
    // hash32 is unsigned: the first replica's score beats -1, so an eligible replica is always chosen.
    let best: Replica | undefined;
    let bestScore = -1;
    for (const r of eligible) {
      const score = hash32(`${key}\n${r.url}`);
      if (score > bestScore) {
        best = r;
        bestScore = score;
      }
    }
    return best;
  }

  /** The session for `runId` now lives on `replica` (it accepted the PUT). */
  remember(backend: string, runId: string, replica: Replica): void {
    let m = this.byBackend.get(backend);
    if (m === undefined) {
      m = new Map();
      this.byBackend.set(backend, m);
    }
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
