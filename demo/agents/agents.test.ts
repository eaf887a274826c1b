/**
 * Tests of the demo agents over real HTTP. They live beside the demo (not under test/) because the demo is
 * owned separately; run with `node --test dist/demo/agents/agents.test.js` after a build.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startAgentServer, type AgentServer } from './agent-server.js';
import { startActor } from './actor.js';
import { parseListenArgs } from './cli.js';
import { startTalker } from './talker.js';

const BIG = '12345678901234567890';
const TOOLS = '[{"name":"press_button","description":"Press a button.","parameters":{"id":{"type":"str","description":"Button name."}}}]';

interface Out {
  request_id: string;
  source_id: number;
  candidate_index: number;
  status: string;
  memory: { history?: { author: string; content: string }[]; [k: string]: unknown };
  output: { say: string; tool_calls: { name: string; arguments: Record<string, unknown>; target_robot_name: string }[] } | null;
  error: { code: string; message: string } | null;
}

function input(id: number, type: 'user' | 'env', content: string, extra = ''): string {
  return `{"id":${id},"instruction":{"type":"${type}","content":${JSON.stringify(content)}}${extra}}`;
}

async function post(s: AgentServer, inputs: string[], requestId = 'r'): Promise<{ status: number; text: string }> {
  const res = await fetch(`${s.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"request_id":"${requestId}","inputs":[${inputs.join(',')}]}`,
  });
  return { status: res.status, text: await res.text() };
}

describe('demo agents', () => {
  let talker: AgentServer;
  let actor: AgentServer;
  before(async () => {
    talker = await startTalker();
    actor = await startActor();
  });
  after(async () => {
    await talker.close();
    await actor.close();
  });

  test('probes answer the contract exactly', async () => {
    const h = await fetch(`${talker.url}/health`);
    assert.deepEqual(await h.json(), { status: 'ready' });
    assert.deepEqual(await (await fetch(`${actor.url}/v1/info`)).json(), {
      protocol_version: '2.0',
      agent_id: 'demo-actor',
      agent_version: '0.1.0',
      capabilities: { inference: true, coaching: false },
      specialized_coaching: [],
      coaching_resume: false,
      coaching_unavailable_reason: null,
    });
    const t = (await (await fetch(`${talker.url}/v1/info`)).json()) as { agent_id: string };
    assert.equal(t.agent_id, 'demo-talker');
    assert.equal((await fetch(`${talker.url}/nope`)).status, 404);
    assert.equal((await fetch(`${talker.url}/v1/responses`)).status, 405);
  });

  test('talker answers in words, in contract order, extending history and keeping big integers', async () => {
    const r = await post(talker, [
      input(7, 'user', 'Press sw0 please.', `,"memory":{"seed":${BIG},"memory_list":["be nice"]},"num_outputs":2`),
      input(3, 'env', '{"infos": "panda: press_button failed with message: stuck"}'),
    ]);
    assert.equal(r.status, 200);
    assert.ok(r.text.includes(`"seed":${BIG}`), 'big integer kept digit for digit');
    const outs = JSON.parse(r.text) as Out[];
    assert.deepEqual(
      outs.map((o) => [o.source_id, o.candidate_index]),
      [
        [7, 0],
        [7, 1],
        [3, 0],
      ],
    );
    assert.match(outs[0]!.output!.say, /Press sw0 please/);
    assert.notEqual(outs[0]!.output!.say, outs[1]!.output!.say);
    assert.match(outs[2]!.output!.say, /failed/);
    assert.deepEqual(outs[0]!.memory.memory_list, ['be nice']);
    assert.deepEqual(
      outs[0]!.memory.history!.map((e) => e.author),
      ['user', 'agent'],
    );
    assert.equal(outs[0]!.memory.history![1]!.content, outs[0]!.output!.say);
  });

  test('history carries forward: the next step appends to it', async () => {
    const first = JSON.parse((await post(talker, [input(0, 'user', 'hello')])).text) as Out[];
    const memory = JSON.stringify(first[0]!.memory);
    const second = JSON.parse((await post(talker, [input(0, 'env', '{"error": "no"}', `,"memory":${memory}`)])).text) as Out[];
    assert.equal(second[0]!.memory.history!.length, 4);
    assert.match(second[0]!.output!.say, /^\[turn 2\] That did not work: no/);
  });

  test('actor calls the first tool on the first robot, or says it has nothing to do', async () => {
    const r = await post(actor, [
      input(0, 'user', 'Press sw0.', `,"tools":${TOOLS},"attributes":{"known_robots":["panda","arm"]}`),
      input(1, 'user', 'Press it.', `,"tools":${TOOLS}`),
    ]);
    const outs = JSON.parse(r.text) as Out[];
    assert.deepEqual(outs[0]!.output!.tool_calls, [
      { name: 'press_button', arguments: { id: 'sw0' }, target_robot_name: 'panda' },
    ]);
    assert.equal(outs[0]!.output!.say, '');
    assert.deepEqual(outs[1]!.output!.tool_calls, []);
    assert.match(outs[1]!.output!.say, /nothing to do/);
  });

  test('invalid requests get FastAPI-style 422s, empty inputs an empty array', async () => {
    const bad = await post(talker, ['{"id":"1","instruction":{"type":"user","content":"x"}}']);
    assert.equal(bad.status, 422);
    const detail = (JSON.parse(bad.text) as { detail: { loc: unknown[]; type: string }[] }).detail;
    assert.deepEqual(detail[0]!.loc, ['body', 'inputs', 0, 'id']);
    const hist = await post(talker, [input(0, 'user', 'x', ',"memory":{"history":{}}')]);
    assert.equal(hist.status, 422);
    const dup = await post(talker, [input(1, 'user', 'x'), input(1, 'user', 'y')]);
    assert.equal(dup.status, 422);
    const empty = await post(talker, []);
    assert.equal(empty.status, 200);
    assert.equal(empty.text, '[]');
  });
});

describe('agent server', () => {
  test('a throwing decide yields an error candidate that keeps the memory; not ready answers 503', async (t) => {
    let ready = true;
    const s = await startAgentServer({
      info: { agent_id: 'thrower' },
      decide: () => {
        throw new Error('model exploded');
      },
      isReady: () => ready,
    });
    t.after(() => s.close());
    const r = await post(s, [input(5, 'user', 'x', `,"memory":{"k":${BIG}}`)]);
    assert.equal(r.status, 200);
    assert.ok(r.text.includes(`"memory":{"k":${BIG}}`));
    const out = (JSON.parse(r.text) as Out[])[0]!;
    assert.equal(out.status, 'error');
    assert.equal(out.error!.message, 'model exploded');
    assert.equal(out.output, null);
    ready = false;
    assert.equal((await fetch(`${s.url}/health`)).status, 503);
    assert.equal((await post(s, [input(5, 'user', 'x')])).status, 503);
  });

  test('listen arguments: --port, --port=, PORT, host default', () => {
    assert.deepEqual(parseListenArgs(['--port', '8101'], {}), { port: 8101, host: '127.0.0.1' });
    assert.deepEqual(parseListenArgs(['--port=9'], { HOST: '0.0.0.0' }), { port: 9, host: '0.0.0.0' });
    assert.deepEqual(parseListenArgs([], { PORT: '8102' }), { port: 8102, host: '127.0.0.1' });
    assert.throws(() => parseListenArgs(['--port', 'x'], {}));
  });

  test('runs as a process and stops on SIGTERM', async () => {
    const script = fileURLToPath(new URL('./talker.js', import.meta.url));
    const child = spawn(process.execPath, [script, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const url = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(buf);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}`)));
    });
    assert.equal((await fetch(`${url}/health`)).status, 200);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
