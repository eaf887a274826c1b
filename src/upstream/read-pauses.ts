/**
 * Why a read is paused (a backend's answer; a client's body, by turn only), each reason resumed alone: with one
 * shared pause, the turn's end resumed a read the budget still held. A streamed answer is paced by its Readable.
 */

/** Bytes one read takes before it lets the event loop's turn end (docs/memory-budget.md#yielding says why). */
export const READ_PER_TURN = 256 * 1024;

type PauseReason = 'budget' | 'turn';

interface Pausable {
  pause(): void;
  resume(): void;
}

/** Bits, not a Set: one of these may exist per backend call. */
const BIT: Record<PauseReason, number> = { budget: 1, turn: 2 };

export class ReadPauses {
  private reasons = 0;
  private readSincePause = 0;

  /** `live` is false once the call is settled; `later` runs `fn` at the turn's end (tests run it at will). */
  constructor(
    private readonly controller: Pausable,
    private readonly live: () => boolean,
    private readonly later: (fn: () => void) => void = (fn) => void setImmediate(fn),
  ) {}

  read(bytes: number): void {
    this.readSincePause += bytes;
    if (this.readSincePause < READ_PER_TURN || !this.live()) return;
    this.readSincePause = 0;
    this.pause('turn');
    this.later(() => this.resume('turn'));
  }

  pause(reason: PauseReason): void {
    if (!this.live()) return;
    if (this.reasons === 0) this.controller.pause();
    this.reasons |= BIT[reason];
  }

  /**
   * The controller resumes in a microtask, never at once: room may come inside another backend connection's parser
   * callback (its answer dropped or given back), and undici asserts that no parser is running when one resumes
   * (client-h1 Parser.resume): the throw left this read paused for good and lost the room's other callbacks.
   */
  resume(reason: PauseReason): void {
    if (!this.live() || (this.reasons & BIT[reason]) === 0) return;
    this.reasons &= ~BIT[reason];
    if (this.reasons === 0) queueMicrotask(() => this.resumeNow());
  }

  private resumeNow(): void {
    // Paused again, or settled, meanwhile.
    if (this.reasons === 0 && this.live()) this.controller.resume();
  }
}
