/**
 * Why a backend answer's read is paused, and when it goes on (upstream/backend-call.ts). Three owners pause one
 * read: the memory budget (no room), the client's socket (a streamed answer it is not taking), and the turn of
 * the event loop (READ_PER_TURN). Each resumes only its own reason, and the read goes on once none is left:
 * with one shared pause, room coming back in the budget resumed a read the client's socket still held.
 */

/**
 * Bytes one answer reads per turn of the event loop. libuv reads a ready socket up to 32 times (2 MiB) per turn,
 * and each 64 KiB goes through undici and into the answer's Buffer before the next: with 32 large answers
 * arriving at once, one turn ran 60 to 130 ms and every `/health` waited for it (docs/memory-budget.md#yielding).
 * Past this many bytes the answer's read pauses until the turn's end, so each turn serves every connection a
 * little, as Envoy bounds what one connection reads per event.
 */
export const READ_PER_TURN = 256 * 1024;

type PauseReason = 'budget' | 'client' | 'turn';

/** undici's DispatchController, as far as pausing goes. */
interface Pausable {
  pause(): void;
  resume(): void;
}

export class ReadPauses {
  private readonly reasons = new Set<PauseReason>();
  private readThisTurn = 0;

  /**
   * @param live false once the call is settled: nothing is paused or resumed after
   * @param later runs `fn` at the end of this turn of the event loop (tests run it when they choose)
   */
  constructor(
    private readonly controller: Pausable,
    private readonly live: () => boolean,
    private readonly later: (fn: () => void) => void = (fn) => void setImmediate(fn),
  ) {}

  /** `bytes` of the answer were read: past READ_PER_TURN in this turn, the rest waits for the next. */
  read(bytes: number): void {
    this.readThisTurn += bytes;
    if (this.readThisTurn < READ_PER_TURN) return;
    this.readThisTurn = 0;
    this.pause('turn');
    this.later(() => this.resume('turn'));
  }

  pause(reason: PauseReason): void {
    if (!this.live()) return;
    if (this.reasons.size === 0) this.controller.pause();
    this.reasons.add(reason);
  }

  resume(reason: PauseReason): void {
    if (!this.live() || !this.reasons.delete(reason)) return;
    if (this.reasons.size === 0) this.controller.resume();
  }

  /** Paused now, for any reason. */
  get paused(): boolean {
    return this.reasons.size > 0;
  }
}
