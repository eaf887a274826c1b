/**
 * The one way tests wait for something they cannot be told about by an event: poll a condition, with a bound.
 * A check that throws fails the wait at once (a process that exited, say); one that is not ready yet returns false.
 */
export interface WaitOptions {
  /** Fail after this long (default 5 s): long enough for a loaded CI machine, short enough to name the culprit. */
  timeoutMs?: number;
  /** Poll interval (default 20 ms). */
  everyMs?: number;
  /** More to say in the failure, e.g. a child process's output. */
  detail?: () => string;
}

export async function waitFor(what: string, check: () => boolean | Promise<boolean>, opts: WaitOptions = {}): Promise<void> {
  const { timeoutMs = 5_000, everyMs = 20 } = opts;
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) {
      const detail = opts.detail?.();
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `:\n${detail}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * A server started as a separate process is waited for as a user would: its /health answering 200. The bound
 * only ends a hang: node processes started together on a loaded machine can take well over 10 s.
 */
export async function waitHealthy(url: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    `${url}/health to answer 200`,
    async () => {
      try {
        return (await fetch(`${url}/health`)).status === 200;
      } catch {
        return false; // not listening yet
      }
    },
    { timeoutMs, everyMs: 50 },
  );
}
