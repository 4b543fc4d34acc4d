import path from 'node:path';
import { startFlags, startServer, type RunningServer } from './harness.js';
import { inBatches } from './in-batches.js';
import { generateMasterKey } from '../secrets.js';

/**
 * The scenario of the SSE bench (sse.ts): the servers measured and how each is published to. The node is measured
 * on the credential rotate stream (`GET /api/daemon/credentials/stream`, runtime JWTs of daemons registered in a
 * few orgs, a rotation being a per-org broadcast), the uWS ceiling (ceilings/uws-sse.ts) on as many groups.
 */

/** What one server needs to be measured the same way as the other. */
export interface Subject {
  readonly name: string;
  readonly server: RunningServer;
  /** Where the server writes its memory reading on SIGUSR2 (BENCH_MEMORY_FILE). */
  readonly memoryFile: string;
  /** Path and token of stream i, and the group (org) it belongs to. */
  stream(i: number): { target: string; token?: string; group: number };
  /** The one stream of a group of its own (group `orgCount`): an org with a single daemon. */
  loneStream(): { target: string; token?: string; group: number };
  readonly openMarker: string;
  /** Publishes one event to a group. */
  publishOnce(group: number): Promise<void>;
  /** Publishes as fast as it can for `seconds`. */
  blast(seconds: number): Promise<void>;
}

export interface Scenario {
  readonly orgCount: number;
  readonly daemonsPerOrg: number;
  /** Concurrent rotate calls while the node is blasted. */
  readonly concurrency: number;
  /** Where the servers keep their data and memory readings; the caller removes it. */
  readonly workDir: string;
  /** Every server started is added here, for the caller to stop. */
  readonly servers: RunningServer[];
}

const now = () => performance.timeOrigin + performance.now();
const here = path.dirname(new URL(import.meta.url).pathname);
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const masterKey = generateMasterKey();

// Both servers get a young generation of fixed size: V8 grows it from 1 MB to 16 MB per semi-space under allocation
// pressure and shrinks it when idle, a process-wide swing of up to ~30 MB that is no stream's memory but moved the
// per-stream RSS reading by 3 KB from one round to the next. Fixed, the readings count what the streams hold.
const gcOnSignal = ['--expose-gc', '--min-semi-space-size=16', '--max-semi-space-size=16', '--import', path.join(here, 'gc-on-signal.mjs')];

async function call(method: string, url: string, token: string | undefined, body?: unknown): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Starts the uWS SSE ceiling: group g is `/sse?g=<g>`, published to by its own `/once` and `/blast`. */
export async function startCeilingSubject(scenario: Scenario): Promise<Subject> {
  const { orgCount } = scenario;
  const memoryFile = path.join(scenario.workDir, 'ceiling-memory.json');
  const server = await startServer(path.join(here, 'ceilings/uws-sse.ts'), { BENCH_MEMORY_FILE: memoryFile }, '0', [...startFlags(path.join(here, '../..')), ...gcOnSignal]);
  scenario.servers.push(server);
  return {
    name: 'ceiling uWS SSE',
    memoryFile,
    server,
    stream: (i) => ({ target: `/sse?g=${i % orgCount}`, group: i % orgCount }),
    loneStream: () => ({ target: `/sse?g=${orgCount}`, group: orgCount }),
    openMarker: ':ok\n\n',
    async publishOnce(group) { await call('POST', `http://127.0.0.1:${server.port}/once?g=${group}`, undefined); },
    async blast(seconds) { await call('POST', `http://127.0.0.1:${server.port}/blast?seconds=${seconds}`, undefined); },
  };
}

/** Starts a node of the checkout at `root` and provisions its orgs, daemons and credentials: the measured subject. */
export async function startNodeSubject(scenario: Scenario, name: string, root: string, nodeArgs: readonly string[]): Promise<Subject> {
  const { orgCount, daemonsPerOrg, concurrency, workDir } = scenario;
  const label = name.replace(/\W+/g, '-');
  const nodeMemory = path.join(workDir, `${label}-memory.json`);
  const nodeServer = await startServer(path.join(root, 'ops/main.ts'), {
    TROUPE_MASTER_KEY: masterKey, TROUPE_DATA_DIR: path.join(workDir, label), PORT: '0', HOST: '127.0.0.1',
    TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info', BENCH_MEMORY_FILE: nodeMemory,
    // Stopped at once: a node still in its shutdown delay when the harness's SIGKILL comes writes no --cpu-prof profile.
    TROUPE_SHUTDOWN_DELAY_MS: '0',
  }, '0', [...startFlags(root), ...gcOnSignal, ...nodeArgs]);
  scenario.servers.push(nodeServer);
  const base = `http://127.0.0.1:${nodeServer.port}`;
  process.stderr.write(`${name}: provisioning ${orgCount} orgs x ${daemonsPerOrg} daemons, and one org of one daemon...\n`);
  const orgs = await inBatches(orgCount + 1, 4, async (o) => {
    const org = await call('POST', `${base}/api/admin/orgs`, adminToken, { name: `Bench ${o}`, owner: { email: `bench${o}@bench.test` } });
    const orgId = org.org.id as string;
    await call('PUT', `${base}/api/org/${orgId}/credentials/github-token`, org.userToken, { provider: 'static', value: `ghp_bench_${o}_${'x'.repeat(40)}` });
    const daemons = await inBatches(o === orgCount ? 1 : daemonsPerOrg, 4, (i) => call('POST', `${base}/v1/daemon/register`, undefined, {
      registrationToken: org.registrationToken, hostname: `bench-${o}-${i}`, maxAgents: 4,
    }));
    return { orgId, apiKey: org.apiKey.fullKey as string, jwts: daemons.map((d) => d.runtimeJwt as string) };
  });
  const rotate = (group: number) => call('POST', `${base}/api/daemon/credentials/rotate`, orgs[group]!.apiKey, { orgId: orgs[group]!.orgId, kind: 'github-token' });
  return {
    name,
    memoryFile: nodeMemory,
    server: nodeServer,
    stream: (i) => {
      const group = i % orgCount;
      const jwts = orgs[group]!.jwts;
      return { target: '/api/daemon/credentials/stream', token: jwts[Math.floor(i / orgCount) % jwts.length], group };
    },
    loneStream: () => ({ target: '/api/daemon/credentials/stream', token: orgs[orgCount]!.jwts[0], group: orgCount }),
    openMarker: 'event: ready',
    async publishOnce(group) { await rotate(group); },
    async blast(seconds) {
      const until = now() + seconds * 1000;
      let next = 0;
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (now() < until) await rotate(next++ % orgCount);
      }));
    },
  };
}
