// Invariant: `troupe worker`, run as a real process against a real node process with a real agent command, runs each
// dispatched session's agent exactly once and reports what happened: exit 0 → completed with the reported cost and
// the output kept in the detail and streamed live, any other exit → failed; a stop ends the agent's whole process
// group within 2 s (p99 of 20); 100 sessions through two workers of capacity 8 each run once and all complete; a
// SIGKILLed worker's session is reclaimed by the lease and ends terminal while a second worker takes new work;
// project mutations change what it takes; a credential rotation reaches a running agent as SIGHUP and new sessions as
// the new value, a new worker starts with the org's rotated credentials and a restarted one gets those it missed;
// SIGTERM drains (finish within the timeout, the rest stopped and reported failed, exit 0), also when started with
// npx and only the npx process is sent it; and a refused registration token exits 2 with a clear message.
import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { engines, skipEngine } from '../../support/engines.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import { openSse } from '../streams/sse-client.js';
import {
  api, detail, dispatch, dropSchema, echoAgent, eventually, groupAlive, killGroup, killWorker, percentile, provision, startWorker, stopWorkers,
  tempDir, untilStatus, type Api, type ProvisionedOrg, type WorkerProcess,
} from './support.js';

const LEASE_MS = 3000;
/** The suite dispatches far more than one credential's default 120 a minute; rate limits have tests of their own. */
const WORKLOAD_LIMITS = { TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000' };

/**
 * The node runs on the machine's Postgres (a schema of its own, dropped afterwards) when it is there, else on PGlite:
 * the worker is the subject here, and Postgres keeps a loaded machine from timing the node out.
 */
const onPostgres = !skipEngine.postgres;
const schema = `t_worker_${randomBytes(4).toString('hex')}`;

describe(`troupe worker, as real processes (node on ${onPostgres ? 'Postgres' : 'PGlite'})`, function () {
  this.timeout(120_000);
  const adminToken = generateAdminToken();
  let node: NodeProcess;
  let a: Api;
  let org: ProvisionedOrg;
  const pids: number[] = [];

  before(async () => {
    node = await startNodeProcess(`worker-test-${process.pid}`, {
      TROUPE_DATA_DIR: tempDir('node'), TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken,
      TROUPE_SESSION_LEASE_MS: String(LEASE_MS), TROUPE_LOG_LEVEL: 'info', AMQP_URL: '', REDIS_URL: '', ...WORKLOAD_LIMITS,
      ...(onPostgres ? { DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
    });
    a = api(node.url);
    org = await provision(a, adminToken);
  });
  afterEach(async () => {
    await stopWorkers();
    for (const pid of pids.splice(0)) killGroup(pid);
  });
  after(async () => {
    await stopAll();
    if (onPostgres) await dropSchema(schema);
  });

  const started = (w: WorkerProcess, id: string) => w.waitFor((l) => l.event === 'session.started' && l.sessionId === id, 10_000, `agent of ${id} started`)
    .then((l) => { pids.push(l.pid as number); return l; });

  it('runs a session to completed with its output kept and streamed and its cost recorded; a failing agent → failed', async () => {
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, env: { ECHO_AGENT_TICK_MS: '300' } });
    await w.waitFor((l) => l.event === 'worker.registered');
    const mode = statSync(path.join(w.stateDir, 'worker.json')).mode & 0o777;
    expect(mode.toString(8), 'identity file').to.equal('600');
    const id = await dispatch(a, org, 'Fix the flaky checkout test');
    const stream = await openSse(`${node.url}/api/interview/${id}/stream`, { token: org.apiKey });
    await started(w, id);
    const streamed = await stream.next((f) => f.event === 'interview.delta' && f.data.tokens.some((t: string) => t.startsWith('working… step 2')), 5000);
    expect(streamed.data.interviewId).to.equal(id);
    stream.close();
    const done = await untilStatus(a, org, id, ['completed', 'failed']);
    expect(done.status).to.equal('completed');
    expect(done.costUsd).to.equal(0.01);
    expect(done.output.tail).to.include('prompt: Fix the flaky checkout test\n');
    expect(done.output.tail).to.include(`session ${id} of project ${org.projectId}`);
    expect(done.output.tail.endsWith('done\n'), 'the last line made it before the report').to.equal(true);
    expect(done.output.tail, 'the cost line is not output').to.not.include('costUsd');
    expect(done.timeline.map((t: { status: string }) => t.status)).to.deep.equal(['pending', 'claimed', 'running', 'finalizing', 'completed']);
    const finished = await w.waitFor((l) => l.event === 'session.finished' && l.sessionId === id);
    expect(finished).to.include({ exitCode: 0, outcome: 'completed' });
    await w.waitFor((l) => l.event === 'session.claimed' && l.sessionId === id);

    const failing = await dispatch(a, org, 'please fail');
    const failed = await untilStatus(a, org, failing, ['completed', 'failed']);
    expect(failed.status).to.equal('failed');
    expect(failed.error).to.equal('the agent ended with exit code 1');
    expect(failed.output.tail).to.include('prompt: please fail');
  });

  it('ends the agent\'s process group within 2 s of a stop (p99 over 20 stops)', async () => {
    // The agent leaves a child of its own behind in its group: the stop must reach it too.
    const w = startWorker({
      url: node.url, registrationToken: org.registrationToken, capacity: 8,
      agentCommand: 'sleep 600 & while true; do echo tick; sleep 0.05; done', env: {},
    });
    await w.waitFor((l) => l.event === 'worker.registered');
    const timings: number[] = [];
    for (let round = 0; round < 5; round++) {
      const ids = await Promise.all(Array.from({ length: 4 }, () => dispatch(a, org, 'run until stopped')));
      const pidsOf = await Promise.all(ids.map(async (id) => (await started(w, id)).pid as number));
      await Promise.all(ids.map(async (id, i) => {
        const t0 = Date.now();
        const stop = await a.call('POST', `/api/public/sessions/${id}/stop`, { token: org.apiKey });
        expect(stop.json).to.include({ stopped: true, newStatus: 'stopped' });
        await eventually(`process group of ${id} gone`, 15_000, () => !groupAlive(pidsOf[i]!));
        timings.push(Date.now() - t0);
      }));
    }
    const p99 = percentile(timings, 99);
    console.log(`      stop → process group gone: p50 ${percentile(timings, 50)} ms, p99 ${p99} ms over ${timings.length} stops`);
    expect(timings).to.have.length(20);
    expect(p99).to.be.at.most(2000);
    expect(w.lines.filter((l) => l.event === 'session.reported'), 'a stopped session is not reported over').to.deep.equal([]);
  });

  it('runs 100 sessions through two workers of capacity 8, each agent exactly once, all completed', async () => {
    const runs = path.join(tempDir('runs'), 'runs.log');
    // A shell agent: a hundred node start-ups would measure the machine, not the worker.
    const agentCommand = `echo "$TROUPE_SESSION_ID" >> ${runs}; read prompt; echo "did: $prompt"; echo '{"troupe": {"costUsd": 0.02}}'`;
    const env = {};
    const w1 = startWorker({ url: node.url, registrationToken: org.registrationToken, capacity: 8, name: 'w1', agentCommand, env });
    const w2 = startWorker({ url: node.url, registrationToken: org.registrationToken, capacity: 8, name: 'w2', agentCommand, env });
    await Promise.all([w1.waitFor((l) => l.event === 'worker.registered'), w2.waitFor((l) => l.event === 'worker.registered')]);
    const ids: string[] = [];
    for (let i = 0; i < 100; i += 10) ids.push(...await Promise.all(Array.from({ length: 10 }, (_, k) => dispatch(a, org, `task ${i + k}`))));
    for (const id of ids) {
      const d = await untilStatus(a, org, id, ['completed', 'failed', 'stopped'], 60_000);
      expect(d.status, id).to.equal('completed');
      expect(d.costUsd).to.equal(0.02);
    }
    const ran = readFileSync(runs, 'utf8').trim().split('\n');
    expect(ran.length, 'agent runs').to.equal(100);
    expect(new Set(ran)).to.deep.equal(new Set(ids));
    const by = (w: WorkerProcess) => w.lines.filter((l) => l.event === 'session.started').length;
    console.log(`      w1 ran ${by(w1)}, w2 ran ${by(w2)}`);
    expect(by(w1) + by(w2)).to.equal(100);
    const maxRunning = (w: WorkerProcess) => {
      let now = 0, max = 0;
      for (const l of w.lines) {
        if (l.event === 'session.started') max = Math.max(max, ++now);
        if (l.event === 'session.finished' || l.event === 'session.stopped') now--;
      }
      return max;
    };
    expect(maxRunning(w1)).to.be.at.most(8);
    expect(maxRunning(w2)).to.be.at.most(8);
  });

  it('leaves a SIGKILLed worker\'s session to the lease: reclaimed, then run to its end by a second worker that takes new work', async () => {
    const w1 = startWorker({ url: node.url, registrationToken: org.registrationToken, name: 'doomed', env: { ECHO_AGENT_LINES: '100000', ECHO_AGENT_TICK_MS: '100' } });
    await w1.waitFor((l) => l.event === 'worker.registered');
    const id = await dispatch(a, org, 'long work');
    const { pid } = await started(w1, id);
    await killWorker(w1, 'SIGKILL');
    killGroup(pid as number);
    const w2 = startWorker({ url: node.url, registrationToken: org.registrationToken, name: 'survivor', env: { ECHO_AGENT_LINES: '1', ECHO_AGENT_TICK_MS: '10' } });
    await w2.waitFor((l) => l.event === 'worker.registered');
    const ended = await untilStatus(a, org, id, ['completed', 'failed'], LEASE_MS * 5);
    expect(ended.status).to.equal('completed');
    expect(ended.activities.map((x: { kind: string }) => x.kind)).to.include('session.reclaimed');
    expect(ended.worker.hostname).to.equal('survivor');
    const fresh = await dispatch(a, org, 'new work');
    expect((await untilStatus(a, org, fresh, ['completed', 'failed'])).status).to.equal('completed');
  });

  it('follows project.remove and project.add: what it takes changes at once', async () => {
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, env: { ECHO_AGENT_LINES: '1', ECHO_AGENT_TICK_MS: '10' } });
    const { workerId } = await w.waitFor((l) => l.event === 'worker.registered');
    const enqueue = (op: string) => a.call('POST', '/api/daemon/mutations', { token: org.ownerToken, body: { workerHostId: workerId, op, params: { projectId: org.projectId } } });
    expect((await enqueue('project.remove')).status).to.equal(201);
    await w.waitFor((l) => l.event === 'mutation.applied' && l.op === 'project.remove', 5000);
    const id = await dispatch(a, org, 'not for you');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await detail(a, org, id)).status, 'not taken while its project is removed').to.equal('pending');
    expect((await enqueue('project.add')).status).to.equal(201);
    await w.waitFor((l) => l.event === 'mutation.applied' && l.op === 'project.add', 5000);
    expect((await untilStatus(a, org, id, ['completed', 'failed'], 10_000)).status).to.equal('completed');
    const modelAccess = await a.call('POST', '/api/daemon/mutations', { token: org.ownerToken, body: { workerHostId: workerId, op: 'modelAccess.set', params: { allow: ['small-model'] } } });
    expect(modelAccess.status).to.equal(201);
    await w.waitFor((l) => l.event === 'mutation.applied' && l.op === 'modelAccess.set', 5000);
    expect(JSON.parse(readFileSync(path.join(w.stateDir, 'model-access.json'), 'utf8'))).to.deep.include({ allow: ['small-model'] });
  });

  it('writes a rotated credential where new sessions read it and sends running agents SIGHUP', async () => {
    const put = (value: string) => a.call('PUT', `/api/org/${org.orgId}/credentials/llm-key`, { token: org.ownerToken, body: { provider: 'static', value } });
    const rotate = () => a.call('POST', '/api/daemon/credentials/rotate', { token: org.ownerToken, body: { orgId: org.orgId, kind: 'llm-key' } });
    expect((await put('first')).status).to.equal(200);
    const w = startWorker({
      url: node.url, registrationToken: org.registrationToken, env: { ECHO_AGENT_CREDENTIAL: 'llm-key', ECHO_AGENT_LINES: '100000', ECHO_AGENT_TICK_MS: '200' },
    });
    await w.waitFor((l) => l.event === 'worker.registered');
    // Rotated until this worker hears one: the org's subscriber count may still include the stream of an earlier
    // test's killed worker, so a count of 1 does not say this worker's stream is subscribed yet.
    await eventually('the worker hears a rotation', 10_000, async () => {
      expect((await rotate()).status).to.equal(200);
      return w.lines.some((l) => l.event === 'credential.rotated');
    });
    const id = await dispatch(a, org, 'use the key');
    await started(w, id);
    // Once the agent runs (and so handles SIGHUP), it has read the value rotated before it started.
    await eventually('the agent read the credential', 10_000, async () => ((await detail(a, org, id)).output?.tail ?? '').includes('credential llm-key: first'));
    expect((await put('second')).status).to.equal(200);
    expect((await rotate()).status).to.equal(200);
    await eventually('the running agent heard SIGHUP', 5000, async () => ((await detail(a, org, id)).output?.tail ?? '').includes('SIGHUP: credential llm-key is now second'));
    const next = await dispatch(a, org, 'use the new key');
    await started(w, next);
    await eventually('a new session reads the new value', 5000, async () => ((await detail(a, org, next)).output?.tail ?? '').includes('credential llm-key: second'));
    const mode = statSync(path.join(w.stateDir, 'credentials', 'llm-key')).mode & 0o777;
    expect(mode.toString(8)).to.equal('600');
  });

  it('starts with the org\'s rotated credentials, and after a restart has those rotated while it was down', async () => {
    const put = (value: string) => a.call('PUT', `/api/org/${org.orgId}/credentials/llm-key`, { token: org.ownerToken, body: { provider: 'static', value } });
    const rotate = () => a.call('POST', '/api/daemon/credentials/rotate', { token: org.ownerToken, body: { orgId: org.orgId, kind: 'llm-key' } });
    const kept = (stateDir: string) => {
      try { return readFileSync(path.join(stateDir, 'credentials', 'llm-key'), 'utf8'); } catch { return undefined; }
    };
    expect((await put('before the worker')).status).to.equal(200);
    expect((await rotate()).status).to.equal(200);
    const stateDir = tempDir('worker');
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, stateDir, env: { ECHO_AGENT_LINES: '1' } });
    await w.waitFor((l) => l.event === 'worker.registered');
    await eventually('a new worker has the credential rotated before it started', 10_000, async () => kept(stateDir) === 'before the worker');
    await killWorker(w, 'SIGTERM');

    expect((await put('while it was down')).status).to.equal(200);
    expect((await rotate()).status).to.equal(200);
    expect(kept(stateDir)).to.equal('before the worker');
    const again = startWorker({ url: node.url, registrationToken: org.registrationToken, stateDir, env: { ECHO_AGENT_LINES: '1' } });
    await again.waitFor((l) => l.event === 'worker.resumed');
    await eventually('the restarted worker has the rotation it missed', 10_000, async () => kept(stateDir) === 'while it was down');
    // The file is written before the line is logged: wait for the line too.
    await again.waitFor((l) => l.event === 'credential.rotated');
    expect(again.lines.filter((l) => l.event === 'credential.rotated'), 'only the missed rotation is replayed').to.have.length(1);
  });

  it('drains on SIGTERM: no new work, a short session finishes, a long one is stopped and reported failed, exit 0', async () => {
    // Shell agents: the short one must end inside the drain timeout even on a loaded machine.
    const agentCommand = 'if [ "$TROUPE_SESSION_PROMPT" = long ]; then while true; do echo tick; sleep 0.1; done; else for i in 1 2 3; do echo step $i; sleep 0.2; done; fi';
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, agentCommand, args: ['--drain-timeout', '3'] });
    await w.waitFor((l) => l.event === 'worker.registered');
    const long = await dispatch(a, org, 'long');
    const short = await dispatch(a, org, 'short');
    await Promise.all([started(w, long), started(w, short)]);
    const t0 = Date.now();
    w.child.kill('SIGTERM');
    await w.waitFor((l) => l.event === 'worker.draining');
    const later = await dispatch(a, org, 'after the drain began');
    const { code } = await w.exit;
    expect(code).to.equal(0);
    expect(Date.now() - t0).to.be.within(2900, 20_000);
    expect((await detail(a, org, short)).status).to.equal('completed');
    const stopped = await detail(a, org, long);
    expect(stopped.status).to.equal('failed');
    expect(stopped.error).to.include('drain timeout of 3s');
    expect((await detail(a, org, later)).status, 'no new work while draining').to.equal('pending');
    await a.call('POST', `/api/public/sessions/${later}/stop`, { token: org.apiKey });
  });

  it('started with npx as the README does, drains and exits on a SIGTERM sent to the npx process alone', async () => {
    // npx runs it under `sh -c`, which passes no signal on: the worker learns of the SIGTERM by its launcher exiting.
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, viaNpx: true });
    await w.waitFor((l) => l.event === 'worker.registered', 60_000, 'the worker registered through npx');
    w.child.kill('SIGTERM');
    await w.waitFor((l) => l.event === 'worker.launcher_gone', 5000);
    await w.waitFor((l) => l.event === 'worker.stopped', 10_000);
    await Promise.race([w.logClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('the worker still runs')), 10_000))]);
  });

  it('exits 2 with a clear message when the registration token is refused', async () => {
    const w = startWorker({ url: node.url, registrationToken: `trg_${'A'.repeat(40)}` });
    const { code } = await w.exit;
    expect(code).to.equal(2);
    expect(w.lines.find((l) => l.event === 'worker.registration_refused')?.msg).to.match(/refused the registration token/);
  });

  it('is the same worker after a restart with the same state dir', async () => {
    const stateDir = tempDir('worker');
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, stateDir, env: { ECHO_AGENT_LINES: '1' } });
    await w.waitFor((l) => l.event === 'worker.registered');
    await killWorker(w, 'SIGTERM');
    // Restarted with the same state dir, it is the same worker.
    const again = startWorker({ url: node.url, registrationToken: org.registrationToken, stateDir, env: { ECHO_AGENT_LINES: '1' } });
    const resumed = await again.waitFor((l) => l.event === 'worker.resumed');
    expect(resumed.workerId).to.equal(w.lines.find((l) => l.event === 'worker.registered')!.workerId);
  });
});
