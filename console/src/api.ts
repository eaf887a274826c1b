/**
 * Reading the admin API from the page. The admin token, when the gateway has one, is asked for once, kept in
 * sessionStorage (this tab only, gone when it closes) and sent as `Authorization: Bearer`; never in a URL.
 */
import { useEffect, useState } from 'preact/hooks';

const TOKEN_KEY = 'magma-gateway.admin-token';
/** How often a page asks again for its data. */
export const POLL_MS = 3000;

export class Unauthorized extends Error {}

export function savedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

function headers(): Record<string, string> {
  const token = savedToken();
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** GET an admin endpoint as JSON; throws Unauthorized on 401 and an Error naming the status otherwise. */
export async function getJson(path: string): Promise<unknown> {
  const res = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (res.status === 401) throw new Unauthorized('unauthorized');
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json() as Promise<unknown>;
}

/** Fetches `path` with the token and saves the answer as `filename` (a link cannot carry the header). */
export async function download(path: string, filename: string): Promise<void> {
  const res = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (res.status === 401) throw new Unauthorized('unauthorized');
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  /** When the data last arrived. */
  at: Date | undefined;
}

/**
 * Polls `paths` every POLL_MS (all at once, each page's few endpoints), mapping their JSON with `map`. A 401
 * calls `onUnauthorized` (the app then asks for the token) and stops.
 */
export function usePoll<T>(paths: string[], map: (json: unknown[]) => T, onUnauthorized: () => void): Polled<T> {
  const [state, setState] = useState<Polled<T>>({ data: undefined, error: undefined, at: undefined });
  const key = paths.join('|');
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async (): Promise<void> => {
      try {
        const json = await Promise.all(paths.map((p) => getJson(p)));
        if (!stopped) setState({ data: map(json), error: undefined, at: new Date() });
      } catch (err) {
        if (err instanceof Unauthorized) {
          onUnauthorized();
          return;
        }
        if (!stopped) setState((s) => ({ ...s, error: err instanceof Error ? err.message : String(err) }));
      }
      if (!stopped) timer = setTimeout(() => void tick(), POLL_MS);
    };
    void tick();
    // Restarted when the endpoints change (key), not on each render.
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [key]);
  return state;
}
