/**
 * The default of `server.memory_budget_mb` (docs/memory-budget.md#defaults), decided once at start:
 *
 * - in a container with a memory limit (cgroup v2 `memory.max`, cgroup v1 `memory.limit_in_bytes`):
 *   CGROUP_FRACTION of that limit. The rest is for what the budget does not count: node itself, the JS heap's
 *   slack between collections, sockets' buffers, copies in flight while an answer is written;
 * - else HEAP_FRACTION of V8's heap limit (`--max-old-space-size`, or V8's own choice from the machine's memory).
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

export const CGROUP_FRACTION = 0.5;
export const HEAP_FRACTION = 0.5;

/** Above this a cgroup v1 limit means "no limit" (the kernel writes about 2^63 there). */
const UNLIMITED = 2 ** 50;

export type BudgetSource = { source: 'config' | 'cgroup' | 'heap'; bytes: number };

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

/** The cgroup's memory limit in bytes, when the process runs under one. `root` is /sys/fs/cgroup (tests vary it). */
export function cgroupMemoryLimit(root = '/sys/fs/cgroup'): number | undefined {
  return readLimit(`${root}/memory.max`) ?? readLimit(`${root}/memory/memory.limit_in_bytes`);
}

/** The budget in force: the config's, else derived as above. */
export function memoryBudget(configuredMb: number | undefined, cgroupRoot?: string): BudgetSource {
  if (configuredMb !== undefined) return { source: 'config', bytes: Math.floor(configuredMb * 1024 * 1024) };
  const cgroup = cgroupMemoryLimit(cgroupRoot);
  if (cgroup !== undefined) return { source: 'cgroup', bytes: Math.floor(cgroup * CGROUP_FRACTION) };
  return { source: 'heap', bytes: Math.floor(getHeapStatistics().heap_size_limit * HEAP_FRACTION) };
}
