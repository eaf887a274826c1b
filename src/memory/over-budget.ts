/** The 503 of a request that found no room in time (docs/memory-budget.md#the-503), on every listener path. */

export const RETRY_AFTER_S = 5;

export function memoryBudgetDetail(timeoutS: number): string {
  return `no room under server.memory_budget_mb within server.admission_timeout_s (${timeoutS} s): the gateway holds as much as it may for the batches before this one; retry later`;
}
