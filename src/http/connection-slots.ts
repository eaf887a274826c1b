/**
 * `server.max_connections` (docs/configuration.md#limits-and-timeouts). Not node's `maxConnections`: it refuses the
 * NEW connection, so 300 clients that connect and send nothing would keep every batch out.
 */
import type { Socket } from 'node:net';

export class ConnectionSlots {
  /** No request in progress (headers still arriving, or idle between requests); oldest first. */
  private readonly idle = new Set<Socket>();
  private readonly receiving = new Set<Socket>();
  private open = 0;
  /** By peer address: secured() finds a TLS socket's connection so. */
  private readonly handshaking = new Map<string, Socket>();
  private readonly tcpOf = new WeakMap<Socket, Socket>();
  /** A request injected in a test (light-my-request) has a socket of its own. */
  private readonly known = new WeakSet<Socket>();

  constructor(public cap: number) {}

  /** `tls`: its TLS handshake is to come (secured() follows). */
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
      const victim = this.idle.values().next().value ?? this.receiving.values().next().value;
      if (victim === undefined) {
        socket.destroy();
        return;
      }
      this.idle.delete(victim);
      this.receiving.delete(victim);
      victim.destroy();
    }
    this.idle.add(socket);
  }

  /** `tls` (the socket requests arrive on) stands for its TCP connection from now on. */
  secured(tls: Socket): void {
    const peer = peerOf(tls);
    const tcp = this.handshaking.get(peer);
    if (tcp === undefined) return;
    this.handshaking.delete(peer);
    this.tcpOf.set(tls, tcp);
  }

  busy(socket: Socket): void {
    this.idle.delete(this.slotOf(socket));
  }

  receivingBody(socket: Socket): void {
    if (!socket.destroyed && this.known.has(this.slotOf(socket))) this.receiving.add(this.slotOf(socket));
  }

  bodyDone(socket: Socket): void {
    this.receiving.delete(this.slotOf(socket));
  }

  /** Answered or abandoned. */
  done(socket: Socket): void {
    const slot = this.slotOf(socket);
    this.receiving.delete(slot);
    if (this.known.has(slot) && !socket.destroyed && !slot.destroyed) {
      this.idle.delete(slot);
      this.idle.add(slot);
    }
  }

  private slotOf(socket: Socket): Socket {
    return this.tcpOf.get(socket) ?? socket;
  }
}

function peerOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}
