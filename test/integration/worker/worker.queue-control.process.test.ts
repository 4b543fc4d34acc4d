// Invariant: with a real node and real `troupe worker` processes, a session dispatched to a paused project stays
// `pending` for 3 s while a worker has room, and is claimed within 1 s of the resume; a paused worker takes nothing
// (another worker of the project takes it all) and, resumed, claims waiting work within 1 s; a drain asked through
// `POST /api/workers/{workerId}/drain` reaches the worker as a `worker.drain` mutation, which drains it as a SIGTERM
// does (`worker.draining`, its running session finishes) and it exits 0.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { engines, skipEngine } from '../../support/engines.js';
import { startNodeProcess, stopAll, type NodeProcess } from '../../cluster/processes.js';
import {
  api, detail, dispatch, dropSchema, startWorker, stopWorkers, tempDir, untilStatus, type Api, type ProvisionedOrg, type WorkerProcess, provision,
} from './support.js';

/** The node runs on the machine's Postgres when it is there (a schema of its own), else on PGlite, as worker.process.test.ts. */
const onPostgres = !skipEngine.postgres;
const schema = `t_queue_${randomBytes(4).toString('hex')}`;
/** A quick agent: the worker's claim, not the agent, is the subject. */
const quickAgent = 'read prompt; echo "did: $prompt"';

describe(`queue control with real worker processes (node on ${onPostgres ? 'Postgres' : 'PGlite'})`, function () {
  this.timeout(120_000);
  const adminToken = generateAdminToken();
  let node: NodeProcess;
  let a: Api;
  let org: ProvisionedOrg;

  before(async () => {
    node = await startNodeProcess(`queue-control-test-${process.pid}`, {
      TROUPE_DATA_DIR: tempDir('node'), TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info',
      AMQP_URL: '', REDIS_URL: '', ...(onPostgres ? { DATABASE_URL: engines.postgres, TROUPE_DATABASE_SCHEMA: schema } : { DATABASE_URL: '' }),
    });
    a = api(node.url);
    org = await provision(a, adminToken);
  });
  afterEach(async () => { await stopWorkers(); });
  after(async () => {
    await stopAll();
    if (onPostgres) await dropSchema(schema);
  });

  /** A worker registered and listening on its event stream (its first poll done). */
  async function readyWorker(name: string, args: string[] = []): Promise<{ w: WorkerProcess; workerId: string }> {
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, agentCommand: quickAgent, name, args });
    const { workerId } = await w.waitFor((l) => l.event === 'worker.registered');
    await w.waitFor((l) => l.event === 'stream.ready', 10_000, 'daemon event stream connected');
    return { w, workerId: workerId as string };
  }

  /** Checks every 100 ms for `ms` that the session is still pending. */
  async function staysPending(id: string, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      expect((await detail(a, org, id)).status, `session ${id} while held back`).to.equal('pending');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Resumes by `path` and answers how long after the request the worker logged the claim. */
  async function claimedAfterResume(w: WorkerProcess, path: string, id: string): Promise<number> {
    const t0 = Date.now();
    const resumed = await a.call('POST', path, { token: org.ownerToken });
    expect(resumed.status, resumed.text).to.equal(200);
    await w.waitFor((l) => l.event === 'session.claimed' && l.sessionId === id, 5_000, `claim of ${id} after the resume`);
    return Date.now() - t0;
  }

  it('holds a paused project\'s session pending for 3 s with a free worker, and the worker claims it within 1 s of the resume', async () => {
    const { w } = await readyWorker('queue-worker');
    const pause = await a.call('POST', `/api/projects/${org.projectId}/queue/pause`, { token: org.ownerToken });
    expect([pause.status, pause.json.paused]).to.deep.equal([200, true]);
    const id = await dispatch(a, org, 'wait for the resume');
    await staysPending(id, 3_000);
    expect(w.lines.some((l) => l.sessionId === id && l.event === 'session.claimed')).to.equal(false);
    const took = await claimedAfterResume(w, `/api/projects/${org.projectId}/queue/resume`, id);
    console.log(`      project resume → claimed in ${took} ms`);
    expect(took).to.be.at.most(1_000);
    expect((await untilStatus(a, org, id, ['completed', 'failed'])).status).to.equal('completed');
  });

  it('a paused worker takes nothing while another takes it all; resumed, it claims waiting work within 1 s', async () => {
    const [one, two] = await Promise.all([readyWorker('paused-one'), readyWorker('busy-two')]);
    expect((await a.call('POST', `/api/workers/${one.workerId}/pause`, { token: org.ownerToken })).json.paused).to.equal(true);
    const ids = await Promise.all([1, 2, 3].map((i) => dispatch(a, org, `task ${i}`)));
    for (const id of ids) expect((await untilStatus(a, org, id, ['completed', 'failed'])).status).to.equal('completed');
    const startedBy = (w: WorkerProcess) => w.lines.filter((l) => l.event === 'session.started').map((l) => l.sessionId);
    expect(startedBy(one.w), 'the paused worker').to.deep.equal([]);
    expect(startedBy(two.w).sort()).to.deep.equal([...ids].sort());

    expect((await a.call('POST', `/api/workers/${two.workerId}/pause`, { token: org.ownerToken })).json.paused).to.equal(true);
    const waiting = await dispatch(a, org, 'for the first worker back');
    await staysPending(waiting, 2_000);
    const took = await claimedAfterResume(one.w, `/api/workers/${one.workerId}/resume`, waiting);
    console.log(`      worker resume → claimed in ${took} ms`);
    expect(took).to.be.at.most(1_000);
    expect(two.w.lines.some((l) => l.sessionId === waiting && l.event === 'session.claimed'), 'the worker still paused').to.equal(false);
    await a.call('POST', `/api/workers/${two.workerId}/resume`, { token: org.ownerToken });
  });

  it('drains on POST /api/workers/{workerId}/drain as on SIGTERM: its session finishes and it exits 0', async () => {
    const agentCommand = 'for i in 1 2 3 4 5; do echo step $i; sleep 0.2; done';
    const w = startWorker({ url: node.url, registrationToken: org.registrationToken, agentCommand, name: 'drained', args: ['--drain-timeout', '30'] });
    const { workerId } = await w.waitFor((l) => l.event === 'worker.registered');
    await w.waitFor((l) => l.event === 'stream.ready', 10_000, 'daemon event stream connected');
    const id = await dispatch(a, org, 'finish me');
    await w.waitFor((l) => l.event === 'session.started' && l.sessionId === id);
    const t0 = Date.now();
    const drain = await a.call('POST', `/api/workers/${workerId as string}/drain`, { token: org.ownerToken });
    expect(drain.status, drain.text).to.equal(202);
    expect(drain.json.mutation).to.include({ op: 'worker.drain', status: 'pending' });
    await w.waitFor((l) => l.event === 'mutation.applied' && l.op === 'worker.drain', 5_000);
    const draining = await w.waitFor((l) => l.event === 'worker.draining', 5_000);
    console.log(`      drain asked → worker.draining in ${Date.parse(draining.time) - t0} ms`);
    const { code } = await w.exit;
    expect(code).to.equal(0);
    expect(w.lines.some((l) => l.event === 'worker.stopped')).to.equal(true);
    expect((await detail(a, org, id)).status, 'the running session finished within the drain').to.equal('completed');
    const history = await a.call('GET', `/api/daemon/mutations?workerHostId=${workerId as string}`, { token: org.ownerToken });
    expect(history.json.mutations.map((m: { op: string; status: string }) => [m.op, m.status])).to.deep.equal([['worker.drain', 'delivered']]);
  });
});
