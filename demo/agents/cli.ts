/**
 * Process entry shared by the demo agents: `node dist/demo/agents/<agent>.js --port 8101 [--host 127.0.0.1]`,
 * or PORT / HOST in the environment, so a demo agent runs the same way a real agent server would.
 */
import { pathToFileURL } from 'node:url';
import type { AgentServer } from './agent-server.js';

/** True when `moduleUrl` is the script node was started with (ESM has no `require.main`). */
export function isMain(moduleUrl: string): boolean {
  const script = process.argv[1];
  return script !== undefined && pathToFileURL(script).href === moduleUrl;
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i !== -1) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

export function parseListenArgs(args: string[], env: NodeJS.ProcessEnv): { port: number; host: string } {
  const raw = flag(args, '--port') ?? env.PORT ?? '0';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port: ${raw}`);
  return { port, host: flag(args, '--host') ?? env.HOST ?? '127.0.0.1' };
}

/** Start an agent from the command line and stop it cleanly on SIGINT/SIGTERM. */
export async function runAgentProcess(
  name: string,
  start: (o: { port: number; host: string }) => Promise<AgentServer>,
): Promise<void> {
  let listen: { port: number; host: string };
  try {
    listen = parseListenArgs(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`${name}: ${(err as Error).message}`);
    process.exit(2);
  }
  const server = await start(listen);
  // One stable line on stdout: scripts wait for it to know the agent listens.
  console.log(`${name} listening on ${server.url}`);
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
