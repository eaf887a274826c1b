/** What `begin` decides for one input of an experiment route, and the arm rules both halves of the recorder use. */
import type { MemoryTag, TagRejection, TrajectoryState } from '../protocol/memory-tag.js';
import type { TrajectoryRecord } from './keys.js';
import type { CompiledRoute, CompiledRoutes, InputPlan } from '../routing/plan.js';

export interface StepDecision {
  readonly index: number;
  readonly route: CompiledRoute;
  readonly experiment: string;
  readonly arm: string;
  readonly state: TrajectoryState;
  /** What the increments start from: the members the input arrived with, or nothing for a new unit. */
  readonly base: { s: number; n: number; step: number; stages: number; flags: string };
  /** False for a replayed step: its increments were made when it was first counted. */
  readonly counted: boolean;
  /** The value of the step's mark (keys.step) when this decision claimed it: the input's request key. */
  readonly by?: string;
  readonly newUnit: boolean;
  readonly keyless: boolean;
  readonly keysOver: boolean;
  readonly rerouted?: { from: string; why: 'not_ready' | 'ejected' };
  readonly cached: boolean;
  readonly replay?: { of: string; first: boolean };
  /** A resumed episode took this trajectory's unit over. */
  readonly supersedes?: { id: string; record: TrajectoryRecord };
  /** Set on the first step of an uncounted trajectory started by an untrusted tag only. */
  readonly rejected?: TagRejection;
}

/** Built once per compiled config: the hot path looks a route up per input. */
const indexes = new WeakMap<CompiledRoutes, Map<string, CompiledRoute>>();
export function routeIndex(routes: CompiledRoutes): Map<string, CompiledRoute> {
  let idx = indexes.get(routes);
  if (idx === undefined) indexes.set(routes, (idx = new Map(routes.routes.map((r) => [r.name, r]))));
  return idx;
}

export function isExperiment(route: CompiledRoute | undefined): route is CompiledRoute {
  return route !== undefined && route.kind !== 'backend';
}

/** The report arm of a tag on `route`: its split arm / ensemble member, else the backend if the route has it. */
export function armOf(route: CompiledRoute, tag: Pick<MemoryTag, 'backend' | 'arm'>): string | undefined {
  if (tag.arm !== undefined && route.members.some((m) => m.name === tag.arm)) return tag.arm;
  return route.backends.has(tag.backend) ? tag.backend : undefined;
}

/**
 * The arm its trajectory was assigned (intention to treat: a `sticky: false` split draws again at every step), else
 * the split arm drawn now, else the ensemble member its trajectory follows.
 */
export function trajectoryArm(route: CompiledRoute, p: InputPlan, continuing: boolean): string | undefined {
  if (continuing && p.tag?.arm !== undefined && route.members.some((m) => m.name === p.tag?.arm)) return p.tag.arm;
  if (p.arm !== undefined) return p.arm;
  if (continuing && p.tag !== undefined) return armOf(route, p.tag);
  return p.legs[0]?.backend;
}
