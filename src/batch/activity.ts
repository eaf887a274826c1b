/**
 * What the console (docs/console.md) shows of the gateway's recent activity and that no metric holds: the last
 * batches (a bounded ring, `admin.recent_batches`), batches per second over the last seconds, when the gateway
 * started, and the last config reload. One owner per piece: a batch's ending records it (its record built by
 * batch-record.ts, the same for a buffered and a streamed answer), reload.ts records
 * reloads; the admin views only read.
 *
 * A batch summary holds counts, names and codes only: never memory, a prompt or a key.
 */

/** One input of a batch as `GET /gateway/batches/<seq>` shows it: ids, names and codes only. */
export interface BatchInputRecord {
  /** The input's id, cut to INPUT_ID_CHARS (batch-record.ts). */
  id: string;
  route: string | null;
  arm: string | null;
  /** Who answered it (a fallback or several ensemble members: comma-joined); null when the cache did. */
  backend: string | null;
  candidates: number;
  /** From its candidates; null for a streamed answer, whose candidates are not held. */
  status: 'completed' | 'error' | 'mixed' | null;
  cached: boolean;
  /** The first error candidate's code, if any. */
  error_code: string | null;
}

/** One answered batch as `GET /gateway/batches/<seq>` shows it; the list leaves `input_rows` out. */
export interface BatchSummary {
  /** Numbers the batches this process recorded, from 1: a row's handle (request ids may repeat). */
  seq: number;
  at: string;
  /** Cut to REQUEST_ID_CHARS: the id comes from the client, the ring's memory stays bounded. */
  request_id: string;
  agent: string;
  client: string | null;
  inputs: number;
  candidates: number;
  routes: Record<string, number>;
  backends: Record<string, number>;
  error_codes: Record<string, number>;
  /** Milliseconds to the microsecond, from the batch read to its answer's end. */
  duration_ms: number;
  overhead_ms: number;
  /** The answer was streamed (docs/protocol-fidelity.md#streamed-answers). */
  streamed: boolean;
  /** Inputs the response cache answered; null without a cache. */
  cache_hits: number | null;
  /** The first `admin.batch_inputs_kept` inputs. */
  input_rows: BatchInputRecord[];
}

/** A batch as the list shows it: without its inputs. */
export type BatchListed = Omit<BatchSummary, 'input_rows'>;

/** The last reload, ok or refused (with why). */
export interface ReloadRecord {
  at: string;
  trigger: string;
  ok: boolean;
  detail: string | null;
}

export const REQUEST_ID_CHARS = 64;
/** Seconds of per-second batch counts kept for the rate (the Overview's figure; the pulse samples it). */
const RATE_WINDOW_S = 10;

export class Activity {
  readonly startedAt: number;
  private readonly ring: (BatchSummary | undefined)[] = [];
  /** Where the next summary goes in `ring` once it is full. */
  private next = 0;
  /** Batch counts per whole second, RATE_WINDOW_S + 1 slots indexed by second modulo their number. */
  private readonly perSecond: { second: number; n: number }[];
  private reload: ReloadRecord | undefined;
  private seq = 0;

  /**
   * @param capacity read at each record, so a reload that changes `admin.recent_batches` resizes the ring
   * @param now the clock (tests inject one)
   */
  constructor(
    private readonly capacity: () => number,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = now();
    this.perSecond = Array.from({ length: RATE_WINDOW_S + 1 }, () => ({ second: -1, n: 0 }));
  }

  /** One answered batch. Constant time: the ring overwrites its oldest entry. */
  recordBatch(summary: Omit<BatchSummary, 'at' | 'seq'>): void {
    const t = this.now();
    const second = Math.floor(t / 1000);
    // The ring has RATE_WINDOW_S + 1 entries and the index is taken modulo its length: always a slot.
    const slot = this.perSecond[second % this.perSecond.length] ?? { second, n: 0 };
    if (slot.second !== second) {
      slot.second = second;
      slot.n = 0;
    }
    slot.n++;
    this.seq++;
    const cap = Math.max(0, Math.floor(this.capacity()));
    if (cap === 0) return;
    const entry: BatchSummary = {
      seq: this.seq,
      at: new Date(t).toISOString(),
      ...summary,
      request_id: summary.request_id.length > REQUEST_ID_CHARS ? summary.request_id.slice(0, REQUEST_ID_CHARS) : summary.request_id,
    };
    if (this.ring.length !== cap) this.resize(cap);
    if (this.ring.length < cap) {
      this.ring.push(entry);
      return;
    }
    this.ring[this.next] = entry;
    this.next = (this.next + 1) % cap;
  }

  /** The last `limit` batches, newest first, without their inputs. */
  recent(limit = Infinity): BatchListed[] {
    return this.newest(limit).map(({ input_rows: _inputs, ...listed }) => listed);
  }

  /** Batches recorded since start (the pulse's batch rate is its growth). */
  get recorded(): number {
    return this.seq;
  }

  /** The batch numbered `seq`, inputs included, while the ring still holds it. */
  batch(seq: number): BatchSummary | undefined {
    return this.ring.find((e) => e?.seq === seq);
  }

  private newest(limit = Infinity): BatchSummary[] {
    const out: BatchSummary[] = [];
    const n = this.ring.length;
    // Newest is just before `next` once the ring has wrapped, the last pushed before that.
    for (let i = 1; i <= n && out.length < limit; i++) {
      const e = this.ring[(this.next - i + n) % n];
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** Batches per second over the last RATE_WINDOW_S whole seconds (the current one, still counting, left out). */
  batchesPerSecond(): number {
    const current = Math.floor(this.now() / 1000);
    let n = 0;
    for (const s of this.perSecond) if (s.second < current && s.second >= current - RATE_WINDOW_S) n += s.n;
    const uptimeS = Math.floor((this.now() - this.startedAt) / 1000);
    return n / Math.max(1, Math.min(RATE_WINDOW_S, uptimeS));
  }

  recordReload(r: Omit<ReloadRecord, 'at'>): void {
    this.reload = { at: new Date(this.now()).toISOString(), ...r };
  }

  lastReload(): ReloadRecord | null {
    return this.reload ?? null;
  }

  /** Keeps the newest entries that fit the new capacity, oldest first. */
  private resize(cap: number): void {
    const kept = this.newest(cap).reverse();
    this.ring.length = 0;
    this.ring.push(...kept);
    this.next = 0; // oldest first from index 0: the newest is the last, as before the ring first wraps
  }
}
