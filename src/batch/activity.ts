/** What the console shows of recent activity that no metric holds. Never memory or a key. */

export interface BatchInputRecord {
  id: string;
  route: string | null;
  arm: string | null;
  /** Comma-joined; null when the cache answered. */
  backend: string | null;
  candidates: number;
  /** Null for a streamed answer, whose candidates are not held. */
  status: 'completed' | 'error' | 'mixed' | null;
  cached: boolean;
  error_code: string | null;
}

export interface BatchSummary {
  /** A row's handle: request ids may repeat. */
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
  duration_ms: number;
  overhead_ms: number;
  streamed: boolean;
  cache_hits: number | null;
  input_rows: BatchInputRecord[];
}

type BatchListed = Omit<BatchSummary, 'input_rows'>;
type Ringed = Omit<BatchSummary, 'at'> & { t: number };

function stamped({ t, seq, ...rest }: Ringed): BatchSummary {
  return { seq, at: new Date(t).toISOString(), ...rest };
}

interface ReloadRecord {
  at: string;
  trigger: string;
  ok: boolean;
  detail: string | null;
}

export const REQUEST_ID_CHARS = 64;
const RATE_WINDOW_S = 10;

export class Activity {
  readonly startedAt: number;
  /** Its time as a number: formatted when the console asks, not at every batch. */
  private readonly ring: (Ringed | undefined)[] = [];
  private next = 0;
  private readonly perSecond: { second: number; n: number }[];
  private reload: ReloadRecord | undefined;
  private seq = 0;

  /** @param capacity read at each record, so a reload that changes `admin.recent_batches` resizes the ring */
  constructor(
    private readonly capacity: () => number,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = now();
    this.perSecond = Array.from({ length: RATE_WINDOW_S + 1 }, () => ({ second: -1, n: 0 }));
  }

  recordBatch(summary: Omit<BatchSummary, 'at' | 'seq'>): void {
    const t = this.now();
    const second = Math.floor(t / 1000);
    const slot = this.perSecond[second % this.perSecond.length] ?? { second, n: 0 };
    if (slot.second !== second) {
      slot.second = second;
      slot.n = 0;
    }
    slot.n++;
    this.seq++;
    const cap = Math.max(0, Math.floor(this.capacity()));
    if (cap === 0) return;
    const entry: Ringed = {
      t,
      seq: this.seq,
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

  recent(limit = Infinity): BatchListed[] {
    return this.newest(limit).map((e) => {
      const { input_rows: _inputs, ...listed } = stamped(e);
      return listed;
    });
  }

  get recorded(): number {
    return this.seq;
  }

  batch(seq: number): BatchSummary | undefined {
    const e = this.ring.find((r) => r?.seq === seq);
    return e === undefined ? undefined : stamped(e);
  }

  private newest(limit = Infinity): Ringed[] {
    const out: Ringed[] = [];
    const n = this.ring.length;
    // Newest is just before `next` once the ring has wrapped, the last pushed before that.
    for (let i = 1; i <= n && out.length < limit; i++) {
      const e = this.ring[(this.next - i + n) % n];
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** Over the last RATE_WINDOW_S whole seconds (the current one, still counting, left out). */
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

  private resize(cap: number): void {
    const kept = this.newest(cap).reverse();
    this.ring.length = 0;
    this.ring.push(...kept);
    this.next = 0; // oldest first from index 0: the newest is the last, as before the ring first wraps
  }
}
