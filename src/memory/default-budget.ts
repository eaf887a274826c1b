/**
 * The default of `server.memory_budget_mb` (docs/memory-budget.md#defaults): a fraction of the cgroup's memory
 * limit, else of V8's heap limit. The rest is for what the budget does not count (node, heap slack, sockets).
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

const CGROUP_FRACTION = 0.5;
const HEAP_FRACTION = 0.5;

/** Above this a cgroup v1 limit means "no limit" (the kernel writes about 2^63 there). */
const UNLIMITED = 2 ** 50;

type BudgetSource = { source: 'config' | 'cgroup' | 'heap'; bytes: number };

function readLimit(path: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
  if (text === 'max' || !/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n > 0 && n < UNLIMITED ? n : undefined;
}

export function memoryBudget(configuredMb: number | undefined): BudgetSource {
  if (configuredMb !== undefined) return { source: 'config', bytes: Math.floor(configuredMb * 1024 * 1024) };
  // cgroup v2, else v1.
  const cgroup = readLimit('/sys/fs/cgroup/memory.max') ?? readLimit('/sys/fs/cgroup/memory/memory.limit_in_bytes');
  if (cgroup !== undefined) return { source: 'cgroup', bytes: Math.floor(cgroup * CGROUP_FRACTION) };
  return { source: 'heap', bytes: Math.floor(getHeapStatistics().heap_size_limit * HEAP_FRACTION) };
}
