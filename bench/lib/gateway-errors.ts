/** Reading the gateway's error candidates from its metrics after a scenario, and finding a target's figures. */
import { request } from 'undici';
import type { RunContext } from './run-context.js';
import { promSum, type Running } from './servers.js';
import type { ScenarioResult, TargetSummary } from './types.js';

export function byId(s: ScenarioResult | undefined, id: string): TargetSummary | undefined {
  return s?.targets.find((t) => t.id === id);
}

async function gatewayMetrics(url: string): Promise<string> {
  const r = await request(`${url}/metrics`);
  return r.body.text();
}

export async function errorCandidates(gw: Running | undefined): Promise<number | undefined> {
  if (gw === undefined) return undefined;
  try {
    const text = await gatewayMetrics(gw.url);
    return promSum(text, 'magma_gateway_candidates_total', 'status="error"');
  } catch {
    return undefined;
  }
}

/** Error candidates per code from the gateway's metrics, e.g. `{gateway_backend_timeout: 26}`. */
export async function errorCodes(gw: Running | undefined): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (gw === undefined) return out;
  try {
    const text = await gatewayMetrics(gw.url);
    for (const m of text.matchAll(/^magma_gateway_candidate_errors_total\{([^}]*)\} (\S+)$/gm)) {
      const code = /code="([^"]*)"/.exec(m[1]!)?.[1] ?? '?';
      out[code] = (out[code] ?? 0) + Number(m[2]);
    }
  } catch {
    // metrics are a diagnosis aid only
  }
  return out;
}

/**
 * Notes on error candidates. The load generator closes its connections at the end of each run (warm-up and
 * measured), aborting the batches in flight: up to connections x candidates per batch per run are expected.
 */
export async function noteErrors(run: RunContext, res: ScenarioResult, gw: Running | undefined, connections: number, perBatch: number): Promise<void> {
  const n = await errorCandidates(gw);
  if (n === undefined) return;
  const codes = await errorCodes(gw);
  const runs = res.targets.find((t) => t.role === 'gateway')?.rounds.length ?? 0;
  const bound = connections * perBatch * runs * (run.opts.warmupS > 0 ? 2 : 1);
  res.extra.gatewayErrorCandidates = n;
  res.extra.gatewayErrorCodes = codes;
  if (n > 0) {
    const list = Object.entries(codes).map(([c, v]) => `${c} ${v}`).join(', ');
    res.notes.push(
      n <= bound
        ? `gateway error candidates: ${n} (${list}); at most ${bound} are expected from batches aborted when the load generator disconnects at the end of each run`
        : `**the gateway produced ${n} error candidates under load (${list})**, more than the ${bound} explained by disconnects at run ends`,
    );
  }
}
