/** What the console keeps of one answered batch (docs/console.md#recent-batches): never memory, a prompt or a key. */
import type { BatchPlan } from '../routing/plan.js';
import type { BatchResult } from '../dispatch/batch-types.js';
import type { BatchSummary, BatchInputRecord } from './activity.js';

/** Longest input id kept: the id comes from the client (a big integer is a string of digits). */
export const INPUT_ID_CHARS = 32;

interface BatchRecordSource {
  request: { request_id: string; inputs: readonly { id: number | string; num_outputs: number }[] };
  plan: BatchPlan;
  result: BatchResult;
  agent: string;
  client: string | null;
  cacheHits: number | undefined;
  durationMs: number;
  overheadMs: number;
  inputsKept: number;
}

/** Sorted, so two rows list the same backends alike whatever answered first. */
function sortedCounts(c: Record<string, number>): Record<string, number> {
  const entries = Object.entries(c);
  // Most batches name one route and one backend: nothing to sort, and the record keeps a copy only when it must.
  if (entries.length < 2) return c;
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Milliseconds to the microsecond: a fast batch reads 0.412 ms, not 0. */
const micro = (ms: number): number => Math.round(ms * 1000) / 1000;

function countBy(xs: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}

function inputRows(s: BatchRecordSource): BatchInputRecord[] {
  const { request, plan, result } = s;
  const n = Math.min(request.inputs.length, Math.max(0, s.inputsKept));
  const backendOf = new Map<number, string[]>();
  for (const leg of result.legs) {
    const list = backendOf.get(leg.input) ?? [];
    if (!list.includes(leg.backend)) list.push(leg.backend);
    backendOf.set(leg.input, list);
  }
  const rows: BatchInputRecord[] = [];
  // Candidates come in request order, each input's num_outputs in a row (the contract's order), when kept.
  let offset = 0;
  for (let i = 0; i < n; i++) {
    const input = request.inputs[i];
    const p = plan.inputs[i];
    if (input === undefined) break;
    const own = Math.max(0, Math.min(input.num_outputs, result.outputs.length - offset));
    let failed = 0;
    let code: string | null = null;
    for (let k = offset; k < offset + own; k++) {
      const o = result.outputs[k];
      if (o?.status !== 'error') continue;
      failed++;
      code ??= o.error?.code ?? null;
    }
    offset += input.num_outputs;
    const cached = result.cached?.has(i) === true;
    const backends = backendOf.get(i) ?? [];
    const id = String(input.id);
    rows.push({
      id: id.length > INPUT_ID_CHARS ? id.slice(0, INPUT_ID_CHARS) : id,
      route: p?.route ?? null,
      arm: p?.arm ?? null,
      backend: cached ? null : backends.sort().join(', ') || (p?.legs.map((l) => l.backend).join(', ') ?? null),
      candidates: input.num_outputs,
      // A streamed answer is not held: its candidates' statuses are not known here, only the batch's codes.
      status: own === 0 ? null : failed === 0 ? 'completed' : failed === own ? 'error' : 'mixed',
      cached,
      error_code: code,
    });
  }
  return rows;
}

export function consoleRecord(s: BatchRecordSource): Omit<BatchSummary, 'at' | 'seq'> {
  const { request, plan, result } = s;
  return {
    request_id: request.request_id,
    agent: s.agent,
    client: s.client,
    inputs: request.inputs.length,
    candidates: result.streamed ?? result.outputs.length,
    streamed: result.streamed !== undefined,
    cache_hits: s.cacheHits ?? null,
    routes: sortedCounts(countBy(plan.inputs.map((p) => p.route))),
    backends: sortedCounts(result.backends),
    error_codes: sortedCounts(result.errorCodes),
    duration_ms: micro(s.durationMs),
    overhead_ms: micro(s.overheadMs),
    input_rows: inputRows(s),
  };
}
