/**
 * Experiment accounting on the request path (docs/gateway-behaviour.md, "Execution feedback and the experiment
 * report"): after each batch, counts per (agent, route, arm) go to
 * the store's counters and environment feedback goes to `magma_gateway_execution_feedback_total`.
 *
 * Only Store.incr is used to write (fire-and-forget, batched by the store), so this costs a few map updates per
 * input and never waits; with Redis the counters are cluster-wide without any change here.
 *
 * What is counted, per route with a split or an ensemble, per arm:
 * - steps: inputs the route sent to the arm (an ensemble input asks every member with a leg: one step each);
 * - trajectories started: those inputs that arrived without a tag naming this route (a new trajectory);
 * - candidates completed / error and error codes: from each returned candidate's memory tag;
 * - latency: each leg's sub-request time, into the fixed buckets of stats.ts;
 * - feedback: from env inputs, by the tag they arrived with (below).
 * The arm is the split arm assigned to the trajectory (it outlives fallbacks), for ensembles the member that
 * produced the candidate; a backend outside the route's members (a fallback that served a trajectory, or a
 * single-leg ensemble input that fell back) is an arm of its own, flagged `member: false` in the report.
 *
 * Feedback attribution uses the env input's INCOMING tag: the client sends back the memory of the candidate it
 * follows, so the tag names the backend (and route, arm) whose decision the environment reports on, whatever
 * route the env input itself matches now. Tags come from clients, so a tag naming a route or backend that is
 * not configured is ignored: metric labels stay bounded by the config.
 */
import type { Logger } from '../logging.js';
import type { BatchResult } from '../dispatch/batch.js';
import { candidateTag } from '../dispatch/answer-bytes.js';
import { METRIC_OUTCOMES, type GatewayMetrics } from '../metrics.js';
import type { IndexedAgentRequest } from '../protocol/indexed-request.js';
import { ROOT_AGENT } from '../config/schema.js';
import { readMemoryTag, type BatchPlan, type CompiledRoute, type CompiledRoutes, type MemoryTag } from '../routing/plan.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Store } from '../state/types.js';
import { parseEnvFeedback, type FeedbackOutcome } from './feedback.js';
import { latencyBucket } from './stats.js';

/** What the recorder and the report read from the gateway, late-bound so a config reload is seen at once. */
export interface ExperimentsHost {
  current: Pick<GatewayRuntime, 'agents'>;
  store: Store;
  metrics: GatewayMetrics;
}

/**
 * The store key of a route's counters (the store adds its own prefix), per agent: two agents may both have a
 * route `ab`. The default agent's keys are what they were before virtual agents existed, so an upgrade keeps
 * its counts; a virtual agent's cannot collide with them, since route names hold no `/`.
 */
export function countersKey(agent: string, route: string): string {
  return agent === ROOT_AGENT ? `experiments:${route}` : `experiments:agents/${agent}/${route}`;
}

/**
 * Counter fields are `<arm>|<what>`: arm names cannot hold `|` (config names are [A-Za-z0-9_.-]), so the
 * first `|` splits them back; error codes, which come from backends, only ever follow it.
 */
const field = {
  started: (arm: string) => `${arm}|started`,
  steps: (arm: string) => `${arm}|steps`,
  completed: (arm: string) => `${arm}|completed`,
  error: (arm: string) => `${arm}|error`,
  code: (arm: string, code: string) => `${arm}|code|${code}`,
  feedback: (arm: string, outcome: FeedbackOutcome) => `${arm}|fb|${outcome}`,
  latency: (arm: string, bucket: number) => `${arm}|lat|${bucket}`,
};

/** Routes by name, built once per compiled config (the hot path looks a route up per input). */
const indexes = new WeakMap<CompiledRoutes, Map<string, CompiledRoute>>();
function routeIndex(routes: CompiledRoutes): Map<string, CompiledRoute> {
  let idx = indexes.get(routes);
  if (idx === undefined) {
    idx = new Map(routes.routes.map((r) => [r.name, r]));
    indexes.set(routes, idx);
  }
  return idx;
}

function isExperiment(route: CompiledRoute | undefined): route is CompiledRoute {
  return route !== undefined && route.kind !== 'backend';
}

/** The report arm of a tag on `route`: its split arm / ensemble member, else the backend if the route has it. */
function armOf(route: CompiledRoute, tag: Pick<MemoryTag, 'backend' | 'arm'>): string | undefined {
  if (tag.arm !== undefined && route.members.some((m) => m.name === tag.arm)) return tag.arm;
  return route.backends.has(tag.backend) ? tag.backend : undefined;
}

export class Experiments {
  constructor(
    private readonly host: () => ExperimentsHost,
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  /**
   * Counts one answered batch. Synchronous and never throws: accounting must not cost a client its answer.
   * `compiled` (the agent's route table), `plan` and `result` are the ones runBatch used and returned for
   * `request`.
   */
  recordBatch(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, result: BatchResult): void {
    try {
      this.record(compiled, request, plan, result);
    } catch (err) {
      this.log?.warn({ err }, 'experiment accounting failed for a batch');
    }
  }

  private record(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, result: BatchResult): void {
    const { store, metrics } = this.host();
    const routes = routeIndex(compiled);
    const agent = compiled.agent;
    const incr = (route: string, f: string, by = 1): void => store.incr(countersKey(agent, route), f, by);

    for (const p of plan.inputs) {
      const input = request.inputs[p.index];
      if (input === undefined) continue;
      const route = routes.get(p.route);
      if (isExperiment(route)) {
        const started = p.tag === undefined || p.tag.route !== p.route;
        for (const leg of p.legs) {
          const arm = p.arm ?? leg.backend;
          incr(route.name, field.steps(arm));
          if (started) incr(route.name, field.started(arm));
        }
      }
      if (input.instruction.type === 'env' && p.tag !== undefined) {
        this.attribute(agent, p.tag, input.instruction.content, routes, compiled.backends, incr);
      }
    }

    for (const out of result.outputs) {
      // The tag the candidate was written with; only a candidate decoded whole has its memory read for it.
      const tag = candidateTag(out) ?? readMemoryTag(out.memory, compiled.memoryKey);
      const route = tag === undefined ? undefined : routes.get(tag.route);
      if (tag === undefined || !isExperiment(route)) continue;
      const arm = armOf(route, tag);
      if (arm === undefined) continue;
      if (out.status === 'error') {
        incr(route.name, field.error(arm));
        // Capped per backend like the candidate error metric: a backend inventing codes cannot grow the hash.
        if (out.error) incr(route.name, field.code(arm, metrics.codeLabel(tag.backend, out.error.code)));
      } else {
        incr(route.name, field.completed(arm));
      }
    }

    for (const leg of result.legs) {
      if (leg.ms === undefined) continue;
      const route = routes.get(leg.route);
      if (!isExperiment(route)) continue;
      const arm = armOf(route, { backend: leg.backend, arm: leg.arm });
      if (arm !== undefined) incr(route.name, field.latency(arm, latencyBucket(leg.ms)));
    }
  }

  /** Feedback of one env input to the tag's (route, backend) metric and, on an experiment route, its arm. */
  private attribute(
    agent: string,
    tag: MemoryTag,
    content: string,
    routes: Map<string, CompiledRoute>,
    backends: ReadonlySet<string>,
    incr: (route: string, f: string, by?: number) => void,
  ): void {
    const route = routes.get(tag.route);
    if (route === undefined || !backends.has(tag.backend)) return;
    const counts = parseEnvFeedback(content);
    const { executionFeedback } = this.host().metrics;
    for (const outcome of METRIC_OUTCOMES) {
      const n = counts[outcome];
      if (n > 0) executionFeedback.inc({ agent, route: route.name, backend: tag.backend, outcome }, n);
    }
    if (!isExperiment(route)) return;
    const arm = armOf(route, tag);
    if (arm === undefined) return;
    for (const [outcome, n] of Object.entries(counts) as [FeedbackOutcome, number][]) { // Object.entries types keys as string; counts is keyed by FeedbackOutcome
      if (n > 0) incr(route.name, field.feedback(arm, outcome), n);
    }
  }
}
