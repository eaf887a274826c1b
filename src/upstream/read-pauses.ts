/**
 * Why a backend answer's read is paused, and when it goes on (upstream/backend-call.ts). Three owners pause one
 * read: the memory budget (no room), a streamed answer's reader (its pipeline is full: answer-stream.ts), and
 * the turn of the event loop (READ_PER_TURN). Each resumes only its own reason, and the read goes on once none
 * is left: with one shared pause, room coming back in the budget resumed a read the client's socket still held.
 */

/**
 * Bytes one answer reads before it lets the turn of the event loop end. libuv reads a ready socket up to 32 times
 * (2 MiB) per turn, and each 64 KiB goes through undici and into the answer's Buffer before the next: with 32
 * large answers arriving at once, one turn ran 60 to 130 ms and every `/health` waited for it
 * (docs/memory-budget.md#yielding). After each such share the answer's read pauses until the turn's end, so each
 * turn serves every connection a little, as Envoy bounds what one connection reads per event. An answer smaller
 * than this never pauses for it.
 */
export const READ_PER_TURN = 256 * 1024;

type PauseReason = 'budget' | 'client' | 'turn';

/** undici's DispatchController, as far as pausing goes. */
interface Pausable {
  pause(): void;
  resume(): void;
}

/** Each reason's bit in ReadPauses.reasons (a number, not a Set: one of these may exist per backend call). */
const BIT: Record<PauseReason, number> = { budget: 1, client: 2, turn: 4 };

export class ReadPauses {
  /** The reasons paused for now, as BIT bits. */
  private reasons = 0;
  private readSincePause = 0;

  /**
   * @param live false once the call is settled: nothing is paused or resumed after
   * @param later runs `fn` at the end of this turn of the event loop (tests run it when they choose)
   */
  constructor(
    private readonly controller: Pausable,
    private readonly live: () => boolean,
    private readonly later: (fn: () => void) => void = (fn) => void setImmediate(fn),
  ) {}

  /** `bytes` of the answer were read: once READ_PER_TURN were read since the last such pause, the rest waits for the next turn. */
  read(bytes: number): void {
    this.readSincePause += bytes;
    if (this.readSincePause < READ_PER_TURN) return;
    this.readSincePause = 0;
    this.pause('turn');
    this.later(() => this.resume('turn'));
  }

  pause(reason: PauseReason): void {
    if (!this.live()) return;
    if (this.reasons === 0) this.controller.pause();
    this.reasons |= BIT[reason];
  }

  resume(reason: PauseReason): void {
    if (!this.live() || (this.reasons & BIT[reason]) === 0) return;
    this.reasons &= ~BIT[reason];
    if (this.reasons === 0) this.controller.resume();
  }

  /** Paused now, for any reason. */
  get paused(): boolean {
    return this.reasons !== 0;
  }
}
