/** Planning a batch (docs/protocol-fidelity.md#the-path-of-a-batch), pure: its only view of the world is canServe. */
import { ensembleLegs } from './ensemble-shares.js';
import type { Headers } from './match.js';
import { selectRoute, type CompiledRoute, type CompiledRoutes } from './routes.js';
import { assignKeyText, chooseArmAt, keyPoint, splitPoint } from './split.js';
import { inputMemoryTag, tagRejection, type MemoryTag, type TagRejection, type TagSigner, type TrajectoryState } from '../protocol/memory-tag.js';
import type { RoutingInput, RoutingRequest } from './routing-input.js';

export { routeBackends, type CompiledRoute, type CompiledRoutes } from './routes.js';
export { readMemoryTag, type MemoryTag } from '../protocol/memory-tag.js';

export interface RoutingSnapshot {
  canServe(backend: string): boolean;
}

interface PlanContext {
  headers: Record<string, string | string[] | undefined>;
  /** Checks tags on experiment routes (docs/experiments.md#signed-tags); absent: tags are trusted. */
  tags?: TagSigner;
}

/** `count` candidates of one input from `backend`, numbered from `offset` in the input's output. */
interface Leg {
  backend: string;
  count: number;
  offset: number;
  fallbacks: string[];
}

export interface InputPlan {
  index: number;
  route: string;
  arm?: string;
  sticky: boolean;
  /** The input continues its trajectory on the backend of its memory tag (stickiness or coaching). */
  continued: boolean;
  /** Offsets ascend and counts sum to num_outputs. */
  legs: Leg[];
  shadows: string[];
  tag?: MemoryTag;
  /** Set after planning by the experiment recorder, on experiment routes only. */
  trajectory?: TrajectoryState;
  /** A new trajectory whose drawn arm could not serve: the sample-ratio check counts reroutes per arm. */
  drawnArm?: string;
  /** The `assign_by` key's value (text) a new trajectory's arm was drawn from. */
  assignKey?: string;
  rejectedTag?: TagRejection;
}

export interface BatchPlan {
  inputs: InputPlan[];
}

/** The arm a leg's candidates are accounted to: the split arm, else the ensemble member that leg is for. */
export function legArm(plan: InputPlan, leg: Leg): string | undefined {
  return plan.arm ?? (plan.legs.length > 1 ? leg.backend : undefined);
}

function hasCoaching(input: RoutingInput): boolean {
  const c = input.member('extra_keys', 'coaching');
  return c !== undefined && c !== null && c !== false;
}

function fallbacksFor(route: CompiledRoute, backend: string): string[] {
  return route.fallback.filter((b) => b !== backend);
}

function isMember(route: CompiledRoute, name: string | undefined): name is string {
  return name !== undefined && route.members.some((m) => m.name === name);
}

/** A tag's arm on split `route`; a tag without one was written by its arm's own backend. */
function taggedArm(route: CompiledRoute, tag: MemoryTag): string | undefined {
  return isMember(route, tag.arm) ? tag.arm : isMember(route, tag.backend) ? tag.backend : undefined;
}

/** The backend a new trajectory of `input` starts on (undefined for an ensemble), for planBatch and coaching alike. */
export function newTrajectoryBackend(
  route: CompiledRoute,
  requestId: string,
  input: RoutingInput,
  canServe: (backend: string) => boolean,
): string | undefined {
  switch (route.kind) {
    case 'backend':
      return route.members[0]?.name;
    case 'split':
      return chooseArmAt(assignment(route, requestId, input).point, route.members, canServe);
    case 'ensemble':
      return undefined;
  }
}

/** From its assign_by key's value when the input holds one, else from (request_id, input id). */
function assignment(route: CompiledRoute, requestId: string, input: RoutingInput): { point: number; key?: string } {
  const by = route.assignBy;
  const key = by === undefined ? undefined : assignKeyText(by.read(input));
  if (by === undefined || key === undefined) return { point: splitPoint(requestId, input.id) };
  return { point: keyPoint(by.salt, key), key };
}

export function planBatch(
  request: RoutingRequest,
  compiled: CompiledRoutes,
  snapshot: RoutingSnapshot,
  ctx: PlanContext,
): BatchPlan {
  return { inputs: request.inputs.map((input, index) => planInput(request.request_id, input, index, compiled, snapshot, ctx.headers, ctx.tags)) };
}

function planInput(
  requestId: string,
  input: RoutingInput,
  index: number,
  compiled: CompiledRoutes,
  snapshot: RoutingSnapshot,
  headers: Headers,
  signer: TagSigner | undefined,
): InputPlan {
  const route = selectRoute(compiled, input, headers);
  const read = inputMemoryTag(input, compiled.memoryKey);
  // An experiment route follows only a tag the gateway signed: a client cannot pick its arm or counters.
  const rejected = read === undefined || signer === undefined || route.kind === 'backend' ? undefined : tagRejection(read, signer);
  const tag = rejected === undefined ? read : undefined;
  const n = input.num_outputs;
  const plan: InputPlan = {
    index,
    route: route.name,
    sticky: route.sticky,
    continued: false,
    legs: [],
    shadows: [...route.shadow],
  };
  if (tag !== undefined) plan.tag = tag;
  if (rejected !== undefined) plan.rejectedTag = rejected;

  if (tag !== undefined) {
    const coaching = hasCoaching(input) && compiled.backends.has(tag.backend);
    const sticky = route.sticky && route.backends.has(tag.backend);
    if ((coaching || sticky) && snapshot.canServe(tag.backend)) {
      plan.continued = true;
      plan.legs.push({ backend: tag.backend, count: n, offset: 0, fallbacks: fallbacksFor(route, tag.backend) });
      if (route.kind === 'split') {
        // The assigned arm outlives fallbacks.
        const arm = taggedArm(route, tag);
        if (arm !== undefined) plan.arm = arm;
      }
      return plan;
    }
  }

  const backend = newTrajectoryBackend(route, requestId, input, (b) => snapshot.canServe(b));
  if (backend !== undefined) {
    if (route.kind === 'split') {
      const drawn = assignment(route, requestId, input);
      if (drawn.key !== undefined) plan.assignKey = drawn.key;
      // Intention to treat: a trajectory keeps its assigned arm even when its backend cannot serve; the step goes
      // elsewhere and is reported as a crossover (docs/experiments.md#crossover).
      const assigned = tag?.trajectory !== undefined && tag.route === route.name && route.sticky ? taggedArm(route, tag) : undefined;
      plan.arm = assigned ?? backend;
      // Only when some arm cannot serve can the draw differ; hashing again costs nothing otherwise.
      if (assigned === undefined && route.members.some((m) => !snapshot.canServe(m.name))) {
        const first = chooseArmAt(drawn.point, route.members);
        if (first !== backend) plan.drawnArm = first;
      }
    }
    plan.legs.push({ backend, count: n, offset: 0, fallbacks: fallbacksFor(route, backend) });
    return plan;
  }
  for (const share of ensembleLegs(n, route.members)) {
    plan.legs.push({ ...share, fallbacks: fallbacksFor(route, share.backend) });
  }
  return plan;
}
