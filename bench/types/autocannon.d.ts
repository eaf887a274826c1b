/** The part of autocannon's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    /** Replace `[<id>]` in the body with a unique id per request. */
    idReplacement?: boolean;
    pipelining?: number;
    /** Seconds before a request counts as a timeout. */
    timeout?: number;
    bailout?: number;
  }

  export interface Result {
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    duration: number;
    totalCompletedRequests: number;
    totalRequests: number;
    totalBytes: number;
  }

  export interface Instance extends EventEmitter {
    stop(): void;
  }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
