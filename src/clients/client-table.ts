/** Which client a key belongs to: compared with every client's, no early exit, so timing shows nothing. */
import type { ClientsConfig } from '../config/schema.js';
import { digestsEqual, keyDigest } from './key-compare.js';

export interface ClientEntry {
  readonly name: string;
  readonly agents?: ReadonlySet<string>;
}

export class ClientTable {
  private readonly clients: readonly { entry: ClientEntry; digest: Buffer }[];

  constructor(clients: ClientsConfig) {
    this.clients = Object.entries(clients).map(([name, { agents, key }]) => ({
      entry: agents === undefined ? { name } : { name, agents: new Set(agents) },
      digest: keyDigest(key),
    }));
  }

  get names(): string[] {
    return this.clients.map((c) => c.entry.name);
  }

  find(key: string): ClientEntry | undefined {
    const given = keyDigest(key);
    let found: ClientEntry | undefined;
    for (const c of this.clients) {
      // The assignment is the only branch on the outcome.
      const equal = digestsEqual(given, c.digest);
      if (equal) found = c.entry;
    }
    return found;
  }
}
