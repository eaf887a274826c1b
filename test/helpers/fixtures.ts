/**
 * What a test starts, stopped when it ends: `const f = useFixtures(t)` in a test, then `f.agent()`,
 * `f.gateway()` (most often `f.gateway(oneBackend({ a }))`), `f.fileGateway()`, `f.server()`, `f.rawAgent()`, `f.cli()` and
 * `f.defer()`. Everything is closed after that test (or, for `useFixtures()` at a file's top level, after the
 * file), passed or failed, in the reverse order it was started: a gateway before the agents it calls, so no
 * sub-request of a closing gateway meets an agent already gone. How to write a test with them:
 * docs/development.md#writing-a-gateway-test.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { after } from 'node:test';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';
import { listenOn } from '../../demo/agents/protocol.js';
import { runCli, type CliRun } from './cli-process.js';
import { startFakeAgent, type FakeAgent, type FakeAgentOptions } from './fake-agent.js';
import { startGatewayFromFile, type FileGateway } from './config-file.js';
import { startGateway, type TestGateway } from './gateway.js';

/**
 * A backend of `oneBackend`: a URL, a started server (a fake agent, `f.server()`'s answer: its `url` is taken), or
 * a whole backend block (`{ url, timeout_s, ... }`, only data in it).
 */
export type BackendOf = string | { url: string } | Record<string, unknown>;

/** Whether a value is config data (what YAML can hold), not a running thing with methods or handles. */
const isData = (v: unknown): boolean =>
  v === null || (typeof v !== 'object' && typeof v !== 'function') || Array.isArray(v) || (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype && Object.values(v).every(isData));

/**
 * The config most gateway tests start from: the backends named (`{ a }`, `{ slow: { url, timeout_s: 0.5 }, good }`)
 * and one catch-all route `default` to the first of them (the gateway fixtures add probes an hour apart, see
 * `withTestDefaults`). `over` goes on top: `route` adds to the route (`fallback`, `shadow`, `split` in place of
 * `backend`), any other key to the config (`probe_interval_s` included).
 */
export function oneBackend(
  backends: Record<string, BackendOf>,
  over: { route?: Record<string, unknown>; [key: string]: unknown } = {},
): Record<string, unknown> {
  const names = Object.keys(backends);
  if (names.length === 0) throw new Error('oneBackend: name at least one backend');
  const block = (b: BackendOf): unknown => (typeof b === 'string' ? { url: b } : isData(b) ? b : { url: b.url });
  const { route, ...rest } = over;
  const to = route?.split !== undefined || route?.ensemble !== undefined ? {} : { backend: names[0] };
  return {
    backends: Object.fromEntries(names.map((n) => [n, block(backends[n]!)])), // n is one of backends' own keys
    routes: [{ name: 'default', ...to, ...route }],
    ...rest,
  };
}

export interface Fixtures {
  /** A fake agent (helpers/fake-agent.ts), closed afterwards. */
  agent(opts?: FakeAgentOptions): Promise<FakeAgent>;
  /** A gateway (helpers/gateway.ts), closed afterwards. */
  gateway(config: Record<string, unknown>, opts?: Parameters<typeof startGateway>[1]): Promise<TestGateway>;
  /** A gateway started from a config file it can reload (helpers/config-file.ts), closed and its file removed afterwards. */
  fileGateway(config: Record<string, unknown>, opts?: Parameters<typeof startGatewayFromFile>[1]): Promise<FileGateway>;
  /** A plain node:http server on 127.0.0.1 for a backend no fake agent can play (raw bytes, trickles), closed afterwards. */
  server(listener: RequestListener): Promise<{ url: string; server: Server }>;
  /**
   * An agent written by hand on `f.server()`: it passes probes (`/health` ready, `/v1/info` inference-only, or
   * `info`) and hands every other request's whole body to `answer`, for answers no fake agent writes (bytes cut,
   * out of order, paced by hand).
   */
  rawAgent(answer: (res: ServerResponse, body: Buffer, req: IncomingMessage) => void, info?: (res: ServerResponse) => void): Promise<{ url: string; server: Server }>;
  /** The `magma-gateway` command in its own process (helpers/cli-process.ts), sent SIGTERM and waited for afterwards unless it ended. */
  cli(args: string[], env?: Record<string, string | undefined>, nodeArgs?: string[]): CliRun;
  /** Anything else to undo afterwards (a Redis connection, a temp dir), in the same reverse order. */
  defer(undo: () => unknown): void;
}

/** `t`: the test's context (its `after` runs when the test ends); none: the file's `after`. */
export function useFixtures(t?: { after(fn: () => Promise<void>): void }): Fixtures {
  const undos: (() => unknown)[] = [];
  (t === undefined ? after : t.after.bind(t))(async () => {
    // Every undo runs even when one fails; the first failure is reported.
    const failures: unknown[] = [];
    for (const undo of undos.splice(0).reverse()) await Promise.resolve().then(undo).catch((err: unknown) => failures.push(err));
    if (failures.length > 0) throw failures[0];
  });
  const defer = (undo: () => unknown): void => void undos.push(undo);
  return {
    async agent(opts) {
      const a = await startFakeAgent(opts);
      defer(() => a.close());
      return a;
    },
    async gateway(config, opts) {
      const gw = await startGateway(config, opts);
      defer(() => gw.close());
      return gw;
    },
    async fileGateway(config, opts) {
      const gw = await startGatewayFromFile(config, opts);
      defer(() => gw.close());
      return gw;
    },
    async server(listener) {
      const server = createServer(listener);
      const port = await listenOn(server, 0, '127.0.0.1');
      defer(async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      });
      return { url: `http://127.0.0.1:${port}`, server };
    },
    rawAgent(answer, info = (res) => res.end(JSON.stringify(inferenceOnlyInfo('raw')))) {
      return this.server((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          if (req.url === '/health') return void res.end('{"status":"ready"}');
          if (req.url === '/v1/info') return void info(res);
          answer(res, Buffer.concat(chunks), req);
        });
      });
    },
    cli(args, env, nodeArgs) {
      const run = runCli(args, env, nodeArgs);
      defer(async () => {
        if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGTERM');
        await run.exit;
      });
      return run;
    },
    defer,
  };
}
