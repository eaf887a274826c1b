/**
 * Stopping the gateway on SIGTERM/SIGINT without keeping anyone waiting (docs/operations.md#signals-and-shutdown:
 * `/health` 503, new connections refused, idle ones closed; docs/configuration.md#limits-and-timeouts). Every answer
 * still to come carries `Connection: close`, so each client's connection ends with its last answer. An answer
 * whose head went out before the drain (a streamed one) could not say so: its connection is closed as soon as the
 * answer is out and the connection idle (http/batch-front.ts), as is any connection that becomes idle during the
 * drain. The process exits once the last connection has closed, not when an idle keep-alive socket would have
 * timed out; `server.drain_timeout_s` bounds the whole drain, then every remaining connection is destroyed.
 */
import type { FastifyInstance } from 'fastify';

/** Whether the gateway is draining; written only by shutdownGateway. */
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

/** How the drain ended: `drained` (every connection closed by itself) or `timed_out` (connections destroyed). */
type ShutdownOutcome = 'drained' | 'timed_out';

/**
 * Drain, then close the app (backend pools, store). Resolves once both are done, or at `drain_timeout_s`
 * after destroying whatever is left: the caller exits then.
 */
export async function shutdownGateway(app: FastifyInstance, drainTimeoutS: number): Promise<ShutdownOutcome> {
  app.drain.begin();
  const server = app.server;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  // server.close() closes the connections idle at this instant; the rest close after their answer.
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<ShutdownOutcome>((resolve) => {
    timer = setTimeout(() => {
      server.closeAllConnections();
      resolve('timed_out');
    }, drainTimeoutS * 1000);
  });
  const drained = (async (): Promise<ShutdownOutcome> => {
    await serverClosed;
    await app.close();
    return 'drained';
  })();
  try {
    return await Promise.race([drained, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
