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
 *
 * Over TLS a slot is taken by the TCP connection as it opens: a connection still in its handshake holds no
 * work and is evicted first, like an idle one (docs/limits-and-edges.md#tls-handshakes). Once the handshake
 * is done, the TLS socket the requests arrive on stands for its TCP connection here.
 */
import type { Socket } from 'node:net';

export class ConnectionSlots {
  /** No request in progress: just connected (headers still arriving) or idle between requests; oldest first. */
  private readonly idle = new Set<Socket>();
  /** A batch whose body is still arriving; oldest first. */
  private readonly receiving = new Set<Socket>();
  private open = 0;
  /** TCP connections in their TLS handshake, by peer address: secured() finds a TLS socket's connection so. */
  private readonly handshaking = new Map<string, Socket>();
  /** A TLS socket -> the TCP connection it runs on, the one holding the slot. */
  private readonly tcpOf = new WeakMap<Socket, Socket>();
  /** Connections admitted here: a request injected in a test (light-my-request) has a socket of its own. */
  private readonly known = new WeakSet<Socket>();
  /** Connections closed to make room, for the metrics and tests. */
  evicted = 0;
  /** New connections closed because every slot was serving a request. */
  refused = 0;

  /** @param cap the open connections allowed; may change (a reload) */
  constructor(public cap: number) {}

  /**
   * A new connection: it takes a free slot, the slot of a connection holding no work, or is closed. `tls`: its
   * TLS handshake is to come (secured() follows).
   */
  admit(socket: Socket, tls = false): void {
    this.open++;
    this.known.add(socket);
    const peer = tls ? peerOf(socket) : undefined;
    if (peer !== undefined) this.handshaking.set(peer, socket);
    socket.once('close', () => {
      this.open--;
      this.idle.delete(socket);
      this.receiving.delete(socket);
      if (peer !== undefined && this.handshaking.get(peer) === socket) this.handshaking.delete(peer);
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

  /** A TLS handshake is done: `tls` (the socket requests arrive on) stands for its TCP connection from now on. */
  secured(tls: Socket): void {
    const peer = peerOf(tls);
    const tcp = this.handshaking.get(peer);
    if (tcp === undefined) return;
    this.handshaking.delete(peer);
    this.tcpOf.set(tls, tcp);
  }

  /** A request arrived on the connection: it holds work until `done`. */
  busy(socket: Socket): void {
    this.idle.delete(this.slotOf(socket));
  }

  /** The connection's batch body is being read: evictable, after every idle connection. */
  receivingBody(socket: Socket): void {
    if (!socket.destroyed && this.known.has(this.slotOf(socket))) this.receiving.add(this.slotOf(socket));
  }

  /** The body is complete: the batch is being served. */
  bodyDone(socket: Socket): void {
    this.receiving.delete(this.slotOf(socket));
  }

  /** The request was answered (or abandoned): the connection is idle again, now the newest. */
  done(socket: Socket): void {
    const slot = this.slotOf(socket);
    this.receiving.delete(slot);
    if (this.known.has(slot) && !socket.destroyed && !slot.destroyed) {
      // Re-added so that it is the newest.
      this.idle.delete(slot);
      this.idle.add(slot);
    }
  }

  /** The TCP connection holding `socket`'s slot: itself, or the one a TLS socket runs on. */
  private slotOf(socket: Socket): Socket {
    return this.tcpOf.get(socket) ?? socket;
  }
}

/** A connection's peer, which names one open TCP connection of a listening socket. */
function peerOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}

function first(set: Set<Socket>): Socket | undefined {
  for (const s of set) return s;
  return undefined;
}
