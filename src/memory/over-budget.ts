/**
 * The answer to a request that found no room under the memory budget in time (docs/memory-budget.md, "The
 * 503"): the same detail and Retry-After on every listener path that reads a body.
 */

/** Seconds a client is told to wait before it sends the request again. */
export const RETRY_AFTER_S = 5;

export function memoryBudgetDetail(timeoutS: number): string {
  return `no room under server.memory_budget_mb within server.admission_timeout_s (${timeoutS} s): the gateway holds as much as it may for the batches before this one; retry later`;
}
