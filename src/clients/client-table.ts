/**
 * Which client a key belongs to (docs/operations.md#client-keys), built once per config (runtime.ts), so a reload adds,
 * changes and removes keys for the next request. The lookup is constant-time in what the caller can learn:
 * the given key is hashed once and compared with every client's key digest, with no early exit, so neither
 * the position of the matching client nor how much of a key was right shows in the timing.
 */
import type { ClientsConfig } from '../config/schema.js';
import { digestsEqual, keyDigest } from './key-compare.js';

/** A client as a request carries it: its name (the metrics label, the limiter's key). */
export interface ClientEntry {
  readonly name: string;
  /** `clients.<name>.agents`: the agents this key may use (ROOT_AGENT for `/`); undefined: every agent. */
  readonly agents?: ReadonlySet<string>;
}

export class ClientTable {
  /** Each client with its key's digest, in config order. */
  private readonly clients: readonly { entry: ClientEntry; digest: Buffer }[];

  constructor(clients: ClientsConfig) {
    this.clients = Object.entries(clients).map(([name, { agents, key }]) => ({
      entry: agents === undefined ? { name } : { name, agents: new Set(agents) },
      digest: keyDigest(key),
    }));
  }

  /** Client names in config order. */
  get names(): string[] {
    return this.clients.map((c) => c.entry.name);
  }

  /** The client whose key this is, or undefined. Every client's digest is compared, whatever matches. */
  find(key: string): ClientEntry | undefined {
    const given = keyDigest(key);
    let found: ClientEntry | undefined;
    for (const c of this.clients) {
      // Evaluated for every client; the assignment is the only branch on the outcome.
      const equal = digestsEqual(given, c.digest);
      if (equal) found = c.entry;
    }
    return found;
  }
}
