/**
 * The counters of one answered batch (docs/experiments.md#what-each-number-means): plain increments (Counters.incr,
 * fire-and-forget, batched by the store) per experiment and arm, from what `begin` decided for each input. The unit
 * sums K, Σs, Σn, Σs², Σn², Σs·n are increments from the tag's previous s and n, so they are idempotent with the
 * step marks; then steps, stages, trajectories with an env error / failure reason / error candidate / crossover,
 * rerouted new trajectories (for the SRM cause), cached steps, replays, superseded trajectories, rejected tags,
 * candidates, latency. Env feedback also feeds
 * `magma_gateway_execution_feedback_total` by the tag the input arrived with, on every route.
 */
import type { BatchResult } from '../dispatch/batch.js';
import { candidateTag } from '../dispatch/answer-bytes.js';
import { METRIC_OUTCOMES, type GatewayMetrics } from '../metrics.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import { hasFlag, type TrajectoryFlag } from '../protocol/memory-tag.js';
import type { BatchPlan, CompiledRoutes } from '../routing/plan.js';
import type { Claims, Counters } from '../state/types.js';
import { FEEDBACK_OUTCOMES, parseEnvFeedback } from './feedback.js';
import { countersKey, field, keyCountersKey, keyField, keys, type KeySum } from './keys.js';
import { latencyBucket } from './latency.js';
import { armOf, routeIndex, type StepDecision } from './step-decision.js';

/** Where a batch's counts go, and what the crossover mark needs. */
export interface CountSink {
  store: Counters & Claims;
  metrics: GatewayMetrics;
  /** experiments.index_ttl_s in ms: how long a crossover mark stays. */
  ttlMs: number;
  now: () => Date;
  /** Keeps a store write the outcomes and the report wait for. */
  track: (write: Promise<unknown>) => void;
}

/** Counts one answered batch from `decisions` (what begin returned for it). */
export function countBatch(sink: CountSink, compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, result: BatchResult, decisions: readonly StepDecision[]): void {
  feedbackMetric(sink.metrics, compiled, request, plan);
  const offsets = outputOffsets(request, result);
  for (const d of decisions) {
    const key = countersKey(compiled.agent, d.route.name, d.experiment);
    // Steps the response cache served: counted below like live ones unless they replay another trajectory's.
    if (d.cached) sink.store.incr(key, field.cached(d.arm), 1);
    if (d.replay?.first === true) sink.store.incr(key, field.replays(d.arm), 1);
    if (d.rejected !== undefined) {
      sink.store.incr(key, field.rejectedTags(d.arm), 1);
      sink.metrics.rejectedTags.inc({ agent: compiled.agent, route: d.route.name, reason: d.rejected });
    }
    if (d.counted) countStep(sink, compiled.agent, request, result, d, offsets);
  }
  countLatency(sink.store, compiled, result, decisions);
}

function countStep(sink: CountSink, agent: string, request: IndexedAgentRequest, result: BatchResult, d: StepDecision, offsets: readonly number[]): void {
  const { store, metrics } = sink;
  const key = countersKey(agent, d.route.name, d.experiment);
  const incr = (f: string, by = 1): void => {
    if (by !== 0) store.incr(key, f, by);
  };
  const { arm, state, base } = d;
  const st = state.stratum;
  // The unit sums, also in the trajectory's stratum when the experiment is stratified.
  const unitIncr = (f: string, by = 1): void => {
    incr(f, by);
    if (st !== undefined) incr(field.inStratum(st, f), by);
  };
  if (d.supersedes !== undefined) incr(field.superseded(arm));
  if (d.newUnit) {
    unitIncr(field.units(arm));
    metrics.trajectoriesStarted.inc({ agent, route: d.route.name, arm });
    if (d.rerouted !== undefined) incr(field.rerouted(d.rerouted.from, d.rerouted.why));
    if (d.keyless) incr(field.keyless(arm));
    if (d.keysOver) incr(field.keysOver(arm));
  }
  if (base.n === 0 && state.n > 0) unitIncr(field.unitsWithLines(arm));
  unitIncr(field.s(arm), state.s - base.s);
  unitIncr(field.n(arm), state.n - base.n);
  unitIncr(field.ss(arm), state.s * state.s - base.s * base.s);
  unitIncr(field.nn(arm), state.n * state.n - base.n * base.n);
  unitIncr(field.sn(arm), state.s * state.n - base.s * base.n);
  if (state.key !== undefined) {
    // Per-key totals are plain sums, so replicas merge them by addition; squares are taken at report time.
    const kk = keyCountersKey(agent, d.route.name, d.experiment);
    const keyIncr = (what: KeySum, by: number): void => {
      if (by !== 0 && state.key !== undefined) store.incr(kk, keyField(arm, st ?? 0, state.key, what), by);
    };
    keyIncr('t', d.newUnit ? 1 : 0);
    keyIncr('s', state.s - base.s);
    keyIncr('n', state.n - base.n);
  }
  // A fork's unit carries the history it shares with its parent: its steps and stages count from 0.
  incr(field.steps(arm), state.step - base.step);
  incr(field.stepsSquared(arm), state.step * state.step - base.step * base.step);
  incr(field.stages(arm), state.stages - base.stages);
  incr(field.stagesSquared(arm), state.stages * state.stages - base.stages * base.stages);
  const newly = (flag: TrajectoryFlag, now: boolean): boolean => (now || hasFlag(state, flag)) && !base.flags.includes(flag);
  if (newly('e', false)) incr(field.envError(arm));
  if (newly('f', false)) incr(field.failureReason(arm));

  const outputs = result.outputs.length === 0 ? [] : result.outputs.slice(offsets[d.index], offsets[d.index + 1]);
  const errored = outputs.some((o) => o.status === 'error');
  if (newly('c', errored)) incr(field.errorCandidate(arm));
  const crossed = d.route.kind === 'split' && result.legs.some((l) => l.input === d.index && l.backend !== arm);
  if (newly('x', crossed)) {
    incr(field.crossed(arm));
    sink.track(store.claim(keys.crossed(d.experiment, arm), sink.now().toISOString(), sink.ttlMs));
  }

  for (const out of outputs) {
    // An ensemble's candidates are each their producing member's (or fallback's); a split's are its arm's.
    const tag = candidateTag(out);
    const by = d.route.kind === 'ensemble' && tag !== undefined ? (armOf(d.route, tag) ?? arm) : arm;
    if (out.status === 'error') {
      incr(field.error(by));
      // Capped per backend like the candidate error metric: a backend inventing codes cannot grow the hash.
      if (out.error) incr(field.code(by, metrics.codeLabel(tag?.backend ?? by, out.error.code)));
    } else incr(field.completed(by));
  }
  const input = request.inputs[d.index];
  if (input?.instruction.type === 'env') {
    const counts = parseEnvFeedback(input.instruction.content);
    for (const outcome of FEEDBACK_OUTCOMES) incr(field.feedback(arm, outcome), counts[outcome]);
  }
}

/** Each leg's sub-request time, per arm, for the counted steps. */
function countLatency(store: Counters, compiled: CompiledRoutes, result: BatchResult, decisions: readonly StepDecision[]): void {
  if (decisions.length === 0) return;
  const byInput = new Map(decisions.filter((d) => d.counted).map((d) => [d.index, d]));
  // Every sub-request that served a counted step, failed and timed-out ones too (as the Backends page counts them,
  // and those also as failed calls), a leg's first try before its fallback among them. A split's leg is its
  // trajectory's arm's (intention to treat); an ensemble's, the member's that was asked. A call the client's
  // departure cut short says nothing of the arm and is left out.
  for (const call of result.calls ?? []) {
    if (call.outcome === 'cancelled') continue;
    for (const leg of call.legs) {
      const d = byInput.get(leg.input);
      if (d === undefined || result.cached?.has(d.index) === true) continue;
      const by = d.route.kind === 'ensemble' ? (armOf(d.route, { backend: call.backend, arm: leg.arm }) ?? d.arm) : d.arm;
      const key = countersKey(compiled.agent, d.route.name, d.experiment);
      store.incr(key, field.latency(by, latencyBucket(call.ms)));
      if (call.outcome !== 'ok') store.incr(key, field.failedCalls(by));
    }
  }
}

/** Env feedback to `magma_gateway_execution_feedback_total`, by the tag each env input arrived with. */
function feedbackMetric(metrics: GatewayMetrics, compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan): void {
  const routes = routeIndex(compiled);
  const { executionFeedback } = metrics;
  for (const p of plan.inputs) {
    const input = request.inputs[p.index];
    const tag = p.tag;
    if (input === undefined || tag === undefined || input.instruction.type !== 'env') continue;
    const route = routes.get(tag.route);
    // Tags come from clients: only configured names become metric labels.
    if (route === undefined || !compiled.backends.has(tag.backend)) continue;
    const counts = parseEnvFeedback(input.instruction.content);
    for (const outcome of METRIC_OUTCOMES) {
      const n = counts[outcome];
      if (n > 0) executionFeedback.inc({ agent: compiled.agent, route: route.name, backend: tag.backend, outcome }, n);
    }
  }
}

/** Where each input's candidates start in `outputs` (input order, `num_outputs` each), and the end. */
function outputOffsets(request: IndexedAgentRequest, result: BatchResult): number[] {
  const offsets = [0];
  if (result.outputs.length === 0) return offsets;
  let at = 0;
  for (const input of request.inputs) offsets.push((at += input.num_outputs));
  return offsets;
}
