/**
 * `server.max_connections`, enforced so that idle and trickling clients cannot starve the others: at the cap, a
 * new connection takes the slot of the oldest connection that holds no work (no request yet, or idle between
 * keep-alive requests), else of the oldest one still trickling its body in; only when every connection is
 * serving a request is the new one closed (docs/configuration.md#limits-and-timeouts).
 *
 * Why not node's `server.maxConnections`: it refuses the NEW connection, so 300 clients that open connections
 * and send nothing keep every normal batch out for as long as their timeouts allow. Evicting the oldest idle
 * connection costs a well-behaved client nothing (HTTP clients reconnect when a kept-alive connection was
 * closed), and a request being served is never cut.
 */
import type { Socket } from 'node:net';

export class ConnectionSlots {
  /** No request in progress: just connected (headers still arriving) or idle between requests; oldest first. */
  private readonly idle = new Set<Socket>();
  /** A batch whose body is still arriving; oldest first. */
  private readonly receiving = new Set<Socket>();
  private open = 0;
  /** Connections closed to make room, for the metrics and tests. */
  evicted = 0;
  /** New connections closed because every slot was serving a request. */
  refused = 0;

  /** @param cap the open connections allowed; may change (a reload) */
  constructor(public cap: number) {}

  get size(): number {
    return this.open;
  }

  /** A new connection: it takes a free slot, the slot of a connection holding no work, or is closed. */
  admit(socket: Socket): void {
    this.open++;
    socket.once('close', () => {
      this.open--;
      this.idle.delete(socket);
      this.receiving.delete(socket);
    });
    if (this.open > this.cap) {
      const victim = first(this.idle) ?? first(this.receiving);
      if (victim === undefined) {
        this.refused++;
        socket.destroy();
        return;
      }
      this.evicted++;
      this.idle.delete(victim);
      this.receiving.delete(victim);
      victim.destroy();
    }
    this.idle.add(socket);
  }

  /** A request arrived on the connection: it holds work until `done`. */
  busy(socket: Socket): void {
    this.idle.delete(socket);
  }

  /** The connection's batch body is being read: evictable, after every idle connection. */
  receivingBody(socket: Socket): void {
    if (!socket.destroyed) this.receiving.add(socket);
  }

  /** The body is complete: the batch is being served. */
  bodyDone(socket: Socket): void {
    this.receiving.delete(socket);
  }

  /** The request was answered (or abandoned): the connection is idle again, now the newest. */
  done(socket: Socket): void {
    this.receiving.delete(socket);
    if (!socket.destroyed) this.idle.add(socket);
  }
}

function first(set: Set<Socket>): Socket | undefined {
  for (const s of set) return s;
  return undefined;
}
