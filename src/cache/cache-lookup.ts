/**
 * The response cache's step of one batch (docs/cache.md). A new trajectory on a split is keyed by every arm, not by
 * the arm drawn: the draw hashes the request_id, which a rerun changes.
 */
import type { AgentOutput } from '../protocol/types.js';
import { candidateStarts } from '../protocol/request-limits.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { BatchPlan, CompiledRoute, CompiledRoutes, InputPlan } from '../routing/plan.js';
import type { BatchResult } from '../dispatch/batch.js';
import { cachedCandidate, candidateTag, untaggedTail } from '../dispatch/answer-bytes.js';
import { candidateTagOf, hasFlag } from '../protocol/memory-tag.js';
import type { Upstreams } from '../upstream/upstreams.js';
import type { Logger } from '../logging.js';
import { backendTarget, cacheKey, cacheOwner } from './cache-key.js';
import { decodeEntry, encodeEntry, type CacheEntry } from './cache-entry.js';
import type { BypassReason } from './cache-metrics.js';
import { ALL_SCOPE, agentScope, backendScope, type ResponseCache } from './response-cache.js';
import { GatewayError } from '../errors.js';
import type { MemoryBudget } from '../memory/budget.js';

type CopyRoom = Pick<MemoryBudget, 'reserve'>;

interface Candidate {
  input: number;
  route: string;
  /** The backends the key's target names (one, or a split's arms). */
  backends: string[];
  target: string;
  /** The backend whose candidates may be stored under this key: the one planned. */
  servedBy: string;
  key?: string;
}

function identityOf(upstreams: Upstreams, backend: string): { identity: string } | { bypass: BypassReason } {
  const replicas = upstreams.backends.get(backend)?.replicas ?? [];
  const ready = replicas.flatMap((r) => (r.state === 'ready' && r.info !== undefined ? [r.info] : []));
  const known = ready.length > 0 ? ready : replicas.flatMap((r) => (r.info === undefined ? [] : [r.info]));
  const ids = new Set(known.map((info) => JSON.stringify([info.agent_id, info.agent_version])));
  const [identity] = ids;
  if (identity === undefined) return { bypass: 'unprobed' };
  // A rolling deploy: which version answers is decided later, so neither can key it.
  if (ids.size > 1) return { bypass: 'identity_mixed' };
  return { identity };
}

function inputAt(request: IndexedAgentRequest, index: number): IndexedAgentRequest['inputs'][number] {
  const input = request.inputs[index];
  if (input === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `plan input ${index} of a request of ${request.inputs.length}`);
  return input;
}

export class CacheLookup {
  readonly dispatchPlan: BatchPlan;
  /** By input index, once `answer` built them. */
  readonly cached = new Map<number, readonly AgentOutput[]>();
  /**
   * Hits a live step of another experiment than their producer's used: stored again with that step as producer,
   * so the next rerun of the new experiment is seen to replay it (after a reset every rerun counted anew).
   */
  private readonly adopted: { key: string; entry: CacheEntry }[] = [];

  private constructor(
    private readonly cache: ResponseCache,
    private readonly agent: string,
    plan: BatchPlan,
    private readonly misses: readonly Candidate[],
    /** By input index: what produced them, for the experiment recorder. */
    readonly found: ReadonlyMap<number, CacheEntry>,
    private readonly foundKeys: ReadonlyMap<number, string> = new Map(),
  ) {
    this.dispatchPlan = found.size === 0 ? plan : { inputs: plan.inputs.filter((p) => !found.has(p.index)) };
  }

  get hits(): number {
    return this.found.size;
  }

  /** Tags each cached candidate as a live one is; called once the recorder has set the trajectory members. */
  answer(request: IndexedAgentRequest, plan: BatchPlan, memoryKey: string): void {
    for (const p of plan.inputs) {
      const entry = this.found.get(p.index);
      if (entry === undefined) continue;
      const input = inputAt(request, p.index);
      const tag = candidateTagOf({ backend: entry.backend, route: p.route, arm: p.arm, trajectory: p.trajectory });
      this.cached.set(p.index, entry.tails.map((tail, k) => cachedCandidate(request.request_id, input, k, tail, memoryKey, tag)));
      const t = p.trajectory;
      const key = this.foundKeys.get(p.index);
      if (t !== undefined && key !== undefined && t.replay === undefined && !hasFlag(t, 'r') && !hasFlag(t, 'o') && t.experiment !== entry.by?.x) {
        this.adopted.push({ key, entry: { ...entry, by: { t: t.id, k: t.step, x: t.experiment } } });
      }
    }
  }

  /** Never rejects: the store's failures are misses. */
  static async begin(
    cache: ResponseCache,
    compiled: CompiledRoutes,
    upstreams: Upstreams,
    request: IndexedAgentRequest,
    plan: BatchPlan,
    client: string | undefined,
  ): Promise<CacheLookup> {
    const { metrics, entries } = cache;
    const agent = compiled.agent;
    const routes = new Map(compiled.routes.map((r) => [r.name, r]));
    const asked: Candidate[] = [];
    for (const p of plan.inputs) {
      const route = routes.get(p.route);
      if (route === undefined) continue;
      const c = candidateFor(route, p, request, upstreams);
      if ('bypass' in c) metrics.bypasses.inc({ agent, route: p.route, reason: c.bypass });
      else asked.push(c);
    }
    const found = new Map<number, CacheEntry>();
    const foundKeys = new Map<number, string>();
    const misses: Candidate[] = [];
    if (asked.length === 0) return new CacheLookup(cache, agent, plan, misses, found);
    const scopes = [ALL_SCOPE, agentScope(agent), ...new Set(asked.flatMap((c) => c.backends.map(backendScope)))];
    const gens = await entries.generations(scopes);
    const values = gens === undefined ? undefined : await entries.get(keysOf(asked, cacheOwner(client, cache.sharedAcrossClients), agent, request, new Map(scopes.map((s, i) => [s, gens[i] ?? '0']))));
    if (values === undefined) {
      metrics.storeFailures.inc({ reason: 'unavailable' }, asked.length);
    } else {
      asked.forEach((c, i) => {
        const input = inputAt(request, c.input);
        const buf = values[i];
        const entry = buf === undefined ? undefined : decodeEntry(buf, input.num_outputs);
        if (entry === undefined || !c.backends.includes(entry.backend)) misses.push(c);
        else {
          found.set(c.input, entry);
          if (c.key !== undefined) foundKeys.set(c.input, c.key);
        }
      });
    }
    for (const c of asked) (found.has(c.input) ? metrics.hits : metrics.misses).inc({ agent, route: c.route });
    return new CacheLookup(cache, agent, plan, misses, found, foundKeys);
  }

  /** The misses answered in full by the backend their key names, in the background. */
  store(request: IndexedAgentRequest, result: BatchResult, log: Logger, memory: CopyRoom, done: () => void = () => undefined): void {
    if ((this.misses.length === 0 && this.adopted.length === 0) || result.streamed !== undefined) return done();
    // Copying the candidates' bytes must not delay the answer; `done` lets the batch's bytes go.
    setImmediate(() => {
      try {
        this.storeNow(request, result, log, memory);
      } catch (err) {
        log.warn({ err }, 'response cache store failed');
      } finally {
        done();
      }
    });
  }

  private storeNow(request: IndexedAgentRequest, result: BatchResult, log: Logger, memory: CopyRoom): void {
    const { metrics, entries, ttlMs, maxEntryBytes } = this.cache;
    for (const { key, entry } of this.adopted) {
      const value = encodeEntry(entry);
      const copy = memory.reserve(value.length);
      if (copy === undefined) continue; // it stays the old experiment's: the next rerun counts as this one did
      entries.set(key, value, ttlMs).finally(() => copy.release()).catch((err: unknown) => log.warn({ err }, 'response cache store failed'));
    }
    const offsets = candidateStarts(request.inputs);
    const servedBy = new Map<number, Set<string>>();
    for (const leg of result.legs) {
      let s = servedBy.get(leg.input);
      if (s === undefined) servedBy.set(leg.input, (s = new Set()));
      s.add(leg.backend);
    }
    for (const c of this.misses) {
      const input = inputAt(request, c.input);
      const from = offsets[c.input] ?? result.outputs.length;
      const legs = servedBy.get(c.input);
      if (legs === undefined || legs.size !== 1 || !legs.has(c.servedBy)) continue;
      const outs = result.outputs.slice(from, from + input.num_outputs);
      if (outs.length !== input.num_outputs || outs.some((o) => o.status !== 'completed')) continue;
      const first = outs[0];
      const tag = first === undefined ? undefined : candidateTag(first);
      const tails = outs.flatMap((o) => untaggedTail(o) ?? []);
      if (tag === undefined || tag.backend !== c.servedBy || tails.length !== outs.length) {
        metrics.storeFailures.inc({ reason: 'unstorable' });
        continue;
      }
      // Lets a later trajectory be seen to replay this step.
      const t = tag.trajectory;
      const by = t === undefined ? undefined : { t: t.id, k: t.step, x: t.experiment };
      const value = encodeEntry({ backend: tag.backend, ...(tag.arm === undefined ? {} : { arm: tag.arm }), ...(by === undefined ? {} : { by }), tails });
      if (value.length > maxEntryBytes) {
        metrics.storeFailures.inc({ reason: 'too_large' });
        continue;
      }
      const { route, key } = c;
      if (key === undefined) continue; // every miss has its key (keysOf ran before it could miss)
      const copy = memory.reserve(value.length);
      if (copy === undefined) {
        metrics.storeFailures.inc({ reason: 'memory_budget' });
        continue;
      }
      entries
        .set(key, value, ttlMs)
        .finally(() => copy.release())
        .then((stored) => {
          if (stored) {
            metrics.stores.inc({ agent: this.agent, route });
            metrics.storedBytes.inc(value.length);
          } else metrics.storeFailures.inc({ reason: entries.kind === 'memory' ? 'too_large' : 'unavailable' }); // memory refuses only what exceeds max_mb
        })
        .catch((err: unknown) => log.warn({ err }, 'response cache store failed'));
    }
  }
}

/** Each candidate's key, also written into it for store(). */
function keysOf(asked: Candidate[], owner: string, agent: string, request: IndexedAgentRequest, genOf: ReadonlyMap<string, string>): string[] {
  return asked.map((c) => {
    const input = inputAt(request, c.input);
    const generations = [ALL_SCOPE, agentScope(agent), ...c.backends.map(backendScope)].map((s) => genOf.get(s) ?? '0');
    c.key = cacheKey({ owner, agent, route: c.route, target: c.target, generations }, input.raw, input.num_outputs);
    return c.key;
  });
}

function candidateFor(route: CompiledRoute, p: InputPlan, request: IndexedAgentRequest, upstreams: Upstreams): Candidate | { bypass: BypassReason } {
  if (route.cache === 'off') return { bypass: 'off' };
  const input = inputAt(request, p.index);
  const deterministic = input.member('extra_keys', 'inference_mode') === true;
  if (route.cache === 'deterministic' && !deterministic) return { bypass: 'sampling' };
  const [leg] = p.legs;
  if (p.legs.length !== 1 || leg === undefined) return { bypass: 'ensemble' };
  const planned = leg.backend;
  const split = route.kind === 'split' && !p.continued;
  const members: readonly { name: string; weight?: number }[] = split ? route.members : [{ name: planned }];
  const backends = members.map((m) => m.name);
  const parts: string[] = [];
  for (const m of members) {
    const id = identityOf(upstreams, m.name);
    if ('bypass' in id) return id;
    parts.push(backendTarget(m.name, id.identity) + (m.weight === undefined ? '' : `*${m.weight}`));
  }
  const target = `${backends.length > 1 || split ? 'split' : 'backend'}:${parts.join(',')}`;
  return { input: p.index, route: p.route, backends, target, servedBy: planned };
}
