// Invariant: with a real node process, a real `troupe worker` process and a real agent, the session's whole
// transcript holds every line the agent printed, the prompts and every status change, with a gap-free seq; a client
// that reads it up to seq N mid-run and then follows the stream from N gets exactly the entries after N, once each;
// and `troupe session transcript ID --follow --json`, a real CLI process started before the agent runs, prints the
// same entries and exits 0 when the session ends.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { expect } from 'chai';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { engines, skipEngine } from '../../support/engines.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { openSse } from '../streams/sse-client.js';
import { api, dispatch, dropSchema, eventually, provision, repoRoot, startWorker, stopWorkers, tempDir, untilStatus, type Api, type ProvisionedOrg } from '../worker/support.js';

const onPostgres = !skipEngine.postgres;
const schema = `t_transcript_${randomBytes(4).toString('hex')}`;
const LINES = 300;
const FLOOD = 30_000;
const floodAgent = path.join(repoRoot, 'test/integration/sessions/fixtures/flood-agent.mjs');

/**
 * Between the worker and the node: every request passes through, but output batches are held `outputDelayMs` and every
 * n-th one's answer is lost after the node kept the batch (503 to the worker), as a dropped connection would.
 */
async function lossyProxy(target: string, o: { everyNthOutputAnswerLost: number; outputDelayMs: number }) {
  let outputs = 0;
  let lost = 0;
  const server = http.createServer((req, res) => {
    const isOutput = req.method === 'POST' && /^\/api\/sessions\/[^/]+\/output$/.test(req.url ?? '');
    const forward = () => {
      const upstream = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        if (isOutput && ++outputs % o.everyNthOutputAnswerLost === 0 && answer.statusCode === 202) {
          lost++;
          answer.resume();
          res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"lost on the way","code":"UNAVAILABLE"}');
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (isOutput) setTimeout(forward, o.outputDelayMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    lostAnswers: () => lost,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

async function allEntries(a: Api, org: ProvisionedOrg, id: string): Promise<any[]> {
  const all: any[] = [];
  let after = 0;
  for (;;) {
    const page = await a.call('GET', `/api/public/sessions/${id}/transcript?after=${after}&limit=1000`, { token: org.apiKey });
    expect(page.status, page.text).to.equal(200);
    all.push(...page.json.entries);
    if (page.json.next === null) return all;
    after = page.json.next;
  }
}

describe(`session transcript through a real worker and CLI (node on ${onPostgres ? 'Postgres' : 'PGlite'})`, function () {
  this.timeout(120_000);
  const adminToken = generateAdminToken();
  let node: NodeProcess;
  let a: Api;
  let org: ProvisionedOrg;

  before(async () => {
    node = await startNodeProcess(`transcript-test-${process.pid}`, {
      TROUPE_DATA_DIR: tempDir('node'), TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info',
      AMQP_URL: '', REDIS_URL: '', ...(onPostgres ? { DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
    });
    a = api(node.url);
    org = await provision(a, adminToken);
  });
  afterEach(() => stopWorkers());
  after(async () => {
    await stopAll();
    if (onPostgres) await dropSchema(schema);
  });

  it('keeps every line, prompt and status change; the stream from N and the CLI agree with the stored transcript', async () => {
    const id = await dispatch(a, org, 'Write the release notes');
    // The CLI follows from before the agent starts, as a person would right after dispatching.
    const cli = spawn(process.execPath, [path.join(repoRoot, 'ops/cli/bin.js'), 'session', 'transcript', id, '--follow', '--json', '--url', node.url], {
      cwd: repoRoot, env: { ...process.env, TROUPE_TOKEN: org.apiKey }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const printed: any[] = [];
    let cliErr = '';
    createInterface({ input: cli.stdout! }).on('line', (line) => printed.push(JSON.parse(line)));
    cli.stderr!.on('data', (d) => { cliErr += String(d); });
    const cliExit = new Promise<number | null>((resolve) => cli.once('exit', (code) => resolve(code)));

    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, env: { ECHO_AGENT_LINES: String(LINES), ECHO_AGENT_TICK_MS: '5' } });
    await w.waitFor((l) => l.event === 'session.started' && l.sessionId === id, 20_000, 'agent started');
    // Mid-run: read up to N, then follow from N.
    let n = 0;
    await eventually('the agent has printed some lines', 10_000, async () => {
      n = (await allEntries(a, org, id)).at(-1)?.seq ?? 0;
      return n > 20;
    });
    const stream = await openSse(`${node.url}/api/public/sessions/${id}/transcript/stream?after=${n}`, { token: org.apiKey });
    expect(stream.status).to.equal(200);
    expect((await a.call('POST', `/api/public/sessions/${id}/prompt`, { token: org.apiKey, body: { prompt: 'and the changelog' } })).status).to.equal(200);

    const done = await untilStatus(a, org, id, ['completed', 'failed'], 60_000);
    expect(done.status).to.equal('completed');
    await stream.next((f) => f.event === 'transcript.entry' && f.data.status === 'completed', 10_000);
    const streamed = stream.frames.filter((f) => f.event === 'transcript.entry').map((f) => f.data);
    stream.close();
    expect(await cliExit, cliErr).to.equal(0);

    const stored = await allEntries(a, org, id);
    expect(stored.map((e) => e.seq)).to.deep.equal(Array.from({ length: stored.length }, (_, i) => i + 1));
    expect(streamed, 'the stream from N').to.deep.equal(stored.filter((e) => e.seq > n));
    expect(printed, 'the CLI').to.deep.equal(stored);

    const outputs = stored.filter((e) => e.kind === 'output').map((e) => e.text);
    expect(outputs).to.include.members(['prompt: Write the release notes', 'prompt: and the changelog', `working… step ${LINES} of ${LINES}`, 'done']);
    const steps = Array.from({ length: LINES }, (_, i) => outputs.indexOf(`working… step ${i + 1} of ${LINES}`));
    expect(steps.every((at, i) => at >= 0 && (i === 0 || at > steps[i - 1]!)), 'every line, in order').to.equal(true);
    expect(outputs.join('\n'), 'the cost line is not output').to.not.include('costUsd');
    expect(stored.filter((e) => e.kind === 'prompt').map((e) => e.text)).to.deep.equal(['Write the release notes', 'and the changelog']);
    expect(stored.filter((e) => e.kind === 'status').map((e) => e.status)).to.deep.equal(['pending', 'claimed', 'running', 'finalizing', 'completed']);
    // The detail's tail is the end of the same output.
    expect(done.output.tail.endsWith(`${outputs.slice(-3).join('\n')}\n`)).to.equal(true);
  });

  it('keeps every line of a flood exactly once through a server that is slow and loses answers: the agent waits, nothing is dropped or repeated', async () => {
    const proxy = await lossyProxy(node.url, { everyNthOutputAnswerLost: 4, outputDelayMs: 40 });
    try {
      const id = await dispatch(a, org, 'Flood the log');
      const w = startWorker({ url: proxy.url, registrationToken: org.registrationToken, agentCommand: `node ${floodAgent}`, env: { FLOOD_LINES: String(FLOOD) } });
      const done = await untilStatus(a, org, id, ['completed', 'failed'], 90_000);
      expect(done.status, done.error ?? '').to.equal('completed');
      expect(proxy.lostAnswers(), 'answers the proxy lost after the node kept the batch').to.be.greaterThan(3);
      expect(w.lines.some((l) => l.event === 'session.output_backlog'), 'the worker said it paused the agent').to.equal(true);
      const outputs = (await allEntries(a, org, id)).filter((e) => e.kind === 'output').map((e) => e.text as string);
      const numbered = outputs.map((text) => Number(/^line (\d+) of/.exec(text)?.[1]));
      expect(numbered.length, 'every line once').to.equal(FLOOD);
      expect(numbered.every((n, i) => n === i + 1), 'in order, none repeated').to.equal(true);
    } finally {
      await proxy.close();
    }
  });

  it('the CLI prints a finished session as text without --follow, and refuses what the node refuses', async () => {
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken });
    const id = await dispatch(a, org, 'Say hello');
    await w.waitFor((l) => l.event === 'session.reported' && l.sessionId === id, 20_000, 'session reported');
    await untilStatus(a, org, id, ['completed']);
    const run = (args: string[], token = org.apiKey) => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(repoRoot, 'ops/cli/bin.js'), 'session', 'transcript', ...args, '--url', node.url], {
        cwd: repoRoot, env: { ...process.env, TROUPE_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => { out += String(d); });
      child.stderr!.on('data', (d) => { err += String(d); });
      child.once('exit', (code) => resolve({ code, out, err }));
    });
    const text = await run([id]);
    expect(text.code, text.err).to.equal(0);
    expect(text.out).to.include('prompt: Say hello\n').and.include('done\n').and.match(/── #\d+ \S+ status: finalizing → completed/);
    const followed = await run([id, '--follow', '--after', '3']);
    expect(followed.code, 'a finished session: --follow ends at once').to.equal(0);
    expect(followed.out).to.not.include('absent → pending');
    const other = await provision(a, adminToken, 'Globex');
    const refused = await run([id], other.apiKey);
    expect(refused.code).to.equal(1);
    expect(refused.err).to.include('404');
    expect((await run([id, '--after', '-2'])).code).to.equal(1);
  });
});
