/**
 * What a streamed answer holds, counted on the batch's hold on the memory budget
 * (docs/memory-budget.md#streamed-answers): what waits for its client's socket, charged when a write finds the
 * socket's buffer full and given back when it drains or the client is gone; and the candidates received ahead of
 * their turn, charged when placed and given back when written. While the budget has no room, the answer's reader is told to pause, and to go on
 * when room comes (its batch the oldest held always may). A socket that refused a write always drains or closes,
 * and the batch's hold is released whole when its response closes, so no path keeps a count.
 */

/** The client's side of a streamed answer, as the dispatcher's sink shows it. */
export interface WaitingSocket {
  /** Bytes written and not yet taken by the socket. */
  readonly buffered: number;
  readonly gone: boolean;
  onDrain(fn: () => void): void;
}

/** The budget's side: the batch's hold (memory/budget.ts), as an answer's reader sees it. */
export interface HoldCharge {
  charge(bytes: number): boolean;
  whenRoom(fn: () => void): void;
  shrink(bytes: number): void;
}

export class SocketCharge {
  /** Bytes counted for what waits for the socket. */
  private queued = 0;
  /** A write was refused and the socket's 'drain' is listened for (once at a time). */
  private listening = false;
  /** The budget had no room for what waits: the reader is paused until room comes. */
  starved = false;

  constructor(
    private readonly socket: WaitingSocket,
    private readonly memory: HoldCharge | undefined,
    /** The reader pauses (no room) or may go on (room came; it has its own reasons to wait besides). */
    private readonly pace: { pause(): void; roomCame(): void },
    /** The socket drained, after its count was given back. */
    private readonly onDrain: () => void,
  ) {}

  /** After a write: `took`, the socket took it without refusing (its buffer below node's mark: not counted). */
  written(took: boolean): void {
    if (!took && !this.socket.gone && !this.listening) {
      this.listening = true;
      this.socket.onDrain(() => {
        this.listening = false;
        this.count(true);
        this.onDrain();
      });
    }
    this.count(took);
  }

  /** The client is gone: nothing waits for it any more. */
  gone(): void {
    this.count(true);
  }

  /**
   * A candidate placed ahead of its turn is held until the ones before it come: counted like what waits for the
   * socket, and given back by `released` once it is written.
   */
  held(bytes: number): void {
    if (this.memory !== undefined && bytes > 0) this.charged(this.memory, bytes);
  }

  released(bytes: number): void {
    if (this.memory !== undefined && bytes > 0) this.memory.shrink(bytes);
  }

  /** Bring the count to what waits now: more is charged (no room: the reader pauses), less given back. */
  private count(drained: boolean): void {
    const memory = this.memory;
    if (memory === undefined) return;
    const now = drained || this.socket.gone ? 0 : this.socket.buffered;
    const more = now - this.queued;
    this.queued = now;
    if (more < 0) memory.shrink(-more);
    else if (more > 0) this.charged(memory, more);
  }

  /** Count `bytes` more; without room the reader pauses until room comes. */
  private charged(memory: HoldCharge, bytes: number): void {
    if (memory.charge(bytes) || this.starved) return;
    this.starved = true;
    this.pace.pause();
    memory.whenRoom(() => this.roomCame(memory));
  }

  /** Room may have come: go on if the budget says so (`charge(0)` asks without counting more), else wait again. */
  private roomCame(memory: HoldCharge): void {
    if (!this.socket.gone && !memory.charge(0)) {
      memory.whenRoom(() => this.roomCame(memory));
      return;
    }
    this.starved = false;
    this.pace.roomCame();
  }
}
