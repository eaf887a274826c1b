/** The counters of one answered batch: increments from the tag's previous s and n, idempotent with the step marks. */
import type { BatchResult } from '../dispatch/batch.js';
import { candidateTag } from '../dispatch/answer-bytes.js';
import { METRIC_OUTCOMES, type GatewayMetrics } from '../metrics.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import { hasFlag, type TrajectoryFlag } from '../protocol/memory-tag.js';
import { candidateStarts } from '../protocol/request-limits.js';
import type { BatchPlan, CompiledRoutes } from '../routing/plan.js';
import type { StorePorts } from '../state/types.js';
import { FEEDBACK_OUTCOMES, parseEnvFeedback } from './feedback.js';
import { countersKey, field, keyCountersKey, keyField, keys, type KeySum } from './keys.js';
import { latencyBucket } from './latency.js';
import { armOf, routeIndex, type StepDecision } from './step-decision.js';

export interface CountSink {
  store: Pick<StorePorts, 'counters' | 'claims'>;
  metrics: GatewayMetrics;
  ttlMs: number;
  now: () => Date;
  track: (write: Promise<unknown>) => void;
}

export function countBatch(sink: CountSink, compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, result: BatchResult, decisions: readonly StepDecision[]): void {
  feedbackMetric(sink.metrics, compiled, request, plan);
  if (decisions.length === 0) return;
  const offsets = candidateStarts(request.inputs);
  for (const d of decisions) {
    const key = countersKey(compiled.agent, d.route.name, d.experiment);
    if (d.cached) sink.store.counters.incr(key, field.count(d.arm, 'cached'), 1);
    if (d.replay?.first === true) sink.store.counters.incr(key, field.count(d.arm, 'replays'), 1);
    if (d.rejected !== undefined) {
      sink.store.counters.incr(key, field.count(d.arm, 'rejectedTags'), 1);
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
    if (by !== 0) store.counters.incr(key, f, by);
  };
  const { arm, state, base } = d;
  const st = state.stratum;
  const unitIncr = (f: string, by = 1): void => {
    incr(f, by);
    if (st !== undefined) incr(field.inStratum(st, f), by);
  };
  if (d.supersedes !== undefined) incr(field.count(arm, 'superseded'));
  if (d.newUnit) {
    unitIncr(field.count(arm, 'units'));
    metrics.trajectoriesStarted.inc({ agent, route: d.route.name, arm });
    if (d.rerouted !== undefined) incr(field.rerouted(d.rerouted.from, d.rerouted.why));
    if (d.keyless) incr(field.count(arm, 'keyless'));
    if (d.keysOver) incr(field.count(arm, 'keysOver'));
  }
  if (base.n === 0 && state.n > 0) unitIncr(field.count(arm, 'unitsWithLines'));
  unitIncr(field.count(arm, 's'), state.s - base.s);
  unitIncr(field.count(arm, 'n'), state.n - base.n);
  unitIncr(field.count(arm, 'ss'), state.s * state.s - base.s * base.s);
  unitIncr(field.count(arm, 'nn'), state.n * state.n - base.n * base.n);
  unitIncr(field.count(arm, 'sn'), state.s * state.n - base.s * base.n);
  if (state.key !== undefined) {
    // Per-key totals are plain sums, so replicas merge them by addition; squares are taken at report time.
    const kk = keyCountersKey(agent, d.route.name, d.experiment);
    const keyIncr = (what: KeySum, by: number): void => {
      if (by !== 0 && state.key !== undefined) store.counters.incr(kk, keyField(arm, st ?? 0, state.key, what), by);
    };
    keyIncr('t', d.newUnit ? 1 : 0);
    keyIncr('s', state.s - base.s);
    keyIncr('n', state.n - base.n);
  }
  // A fork's unit carries the history it shares with its parent: its steps and stages count from 0.
  incr(field.count(arm, 'steps'), state.step - base.step);
  incr(field.count(arm, 'stepsSquared'), state.step * state.step - base.step * base.step);
  incr(field.count(arm, 'stages'), state.stages - base.stages);
  incr(field.count(arm, 'stagesSquared'), state.stages * state.stages - base.stages * base.stages);
  const newly = (flag: TrajectoryFlag, now: boolean): boolean => (now || hasFlag(state, flag)) && !base.flags.includes(flag);
  if (newly('e', false)) incr(field.count(arm, 'envError'));
  if (newly('f', false)) incr(field.count(arm, 'failureReason'));

  const outputs = result.outputs.length === 0 ? [] : result.outputs.slice(offsets[d.index], offsets[d.index + 1]);
  const errored = outputs.some((o) => o.status === 'error');
  if (newly('c', errored)) incr(field.count(arm, 'errorCandidate'));
  const crossed = d.route.kind === 'split' && result.legs.some((l) => l.input === d.index && l.backend !== arm);
  if (newly('x', crossed)) {
    incr(field.count(arm, 'crossed'));
    sink.track(store.claims.claim(keys.crossed(d.experiment, arm), sink.now().toISOString(), sink.ttlMs));
  }

  for (const out of outputs) {
    // An ensemble's candidates are each their producing member's (or fallback's); a split's are its arm's.
    const tag = candidateTag(out);
    const by = d.route.kind === 'ensemble' && tag !== undefined ? (armOf(d.route, tag) ?? arm) : arm;
    if (out.status === 'error') {
      incr(field.count(by, 'error'));
      // Capped per backend like the candidate error metric: a backend inventing codes cannot grow the hash.
      if (out.error) incr(field.code(by, metrics.codeLabel(tag?.backend ?? by, out.error.code)));
    } else incr(field.count(by, 'completed'));
  }
  const input = request.inputs[d.index];
  if (input?.instruction.type === 'env') {
    const counts = parseEnvFeedback(input.instruction.content);
    for (const outcome of FEEDBACK_OUTCOMES) incr(field.feedback(arm, outcome), counts[outcome]);
  }
}

function countLatency(store: Pick<StorePorts, 'counters'>, compiled: CompiledRoutes, result: BatchResult, decisions: readonly StepDecision[]): void {
  const byInput = new Map(decisions.filter((d) => d.counted).map((d) => [d.index, d]));
  // Failed and timed-out calls count too; a split's leg is its trajectory's arm's (intention to treat). A call
  // the client's departure cut short says nothing of the arm.
  for (const call of result.calls ?? []) {
    if (call.outcome === 'cancelled') continue;
    for (const leg of call.legs) {
      const d = byInput.get(leg.input);
      if (d === undefined || result.cached?.has(d.index) === true) continue;
      const by = d.route.kind === 'ensemble' ? (armOf(d.route, { backend: call.backend, arm: leg.arm }) ?? d.arm) : d.arm;
      const key = countersKey(compiled.agent, d.route.name, d.experiment);
      store.counters.incr(key, field.latency(by, latencyBucket(call.ms)));
      if (call.outcome !== 'ok') store.counters.incr(key, field.count(by, 'failedCalls'));
    }
  }
}

/** Env feedback to `magma_gateway_execution_feedback_total` on every route, by the tag each env input arrived with. */
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
