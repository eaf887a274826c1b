/**
 * Stopping on SIGTERM/SIGINT without keeping anyone waiting (docs/operations.md#signals-and-shutdown): every answer
 * to come says `Connection: close`, connections close as they become idle, and the process exits once the last
 * one has closed, not when an idle keep-alive socket would have timed out. `server.drain_timeout_s` bounds it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';

/** Written only by shutdownGateway. */
export class Drain {
  private on = false;

  get draining(): boolean {
    return this.on;
  }

  begin(): void {
    this.on = true;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    drain: Drain;
  }
}

type ShutdownOutcome = 'drained' | 'timed_out';

/** Resolves once the app is closed, or at `drain_timeout_s` after destroying whatever is left. */
export async function shutdownGateway(app: FastifyInstance, drainTimeoutS: number): Promise<ShutdownOutcome> {
  app.drain.begin();
  const server = app.server;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  // server.close() closes the connections idle at this instant; the rest close after their answer.
  server.closeIdleConnections();
  const raced = new AbortController();
  const timedOut = sleep(drainTimeoutS * 1000, undefined, { signal: raced.signal }).then((): ShutdownOutcome => {
    server.closeAllConnections();
    return 'timed_out';
  });
  const drained = serverClosed.then(() => app.close()).then((): ShutdownOutcome => 'drained');
  try {
    return await Promise.race([drained, timedOut]);
  } finally {
    raced.abort();
  }
}
