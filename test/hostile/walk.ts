// The hostile walk's ground (routes*.hostile.test.ts): one request that never throws, a pool, the findings a rule
// collects over a whole walk, and the node, its document and the two orgs of world.ts that every walk file starts.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { engineSets, startTestNode, type TestNode } from '../support/node.js';
import { auditOutboxDepth } from '../../storage/audit-outbox.js';
import { fillPath, label, sampleOf, satisfies, walkOpenApi, type WalkedOperation } from '../support/openapi-walk.js';
import { buildWorld, type OrgWorld, type World } from './world.js';

/**
 * Defects found in other rooms' routes, each reproduced by the case it names: `rule` is the `it` that finds it,
 * `case` the start of the case name it prints. Reported with console.warn instead of failing; delete an entry once
 * its owner fixes it (the walk says when an entry no longer reproduces).
 */
interface KnownDefect { readonly rule: string; readonly route: string; readonly case: string; readonly defect: string }
const knownDefects: readonly KnownDefect[] = [];

export const MiB = 1024 * 1024;
/** Parallel requests in flight: enough to keep the walk fast, few enough not to measure our own queueing. */
export const CONCURRENCY = 8;
/** A request that takes longer is a hang, and reported as such. */
const REQUEST_DEADLINE_MS = 15_000;
const SCREAMING_SNAKE = /^[A-Z][A-Z0-9_]*$/;

export interface Answer {
  readonly status: number;
  readonly text: string;
  readonly json: any;
  readonly stream: boolean;
  readonly failure?: string;
}

export interface SendInit {
  token?: string;
  body?: string | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
}

/** One request; an event stream that opens is closed at once (its status is all we judge). Never throws. */
export async function send(base: string, method: string, path: string, init: SendInit = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.contentType !== undefined) headers['content-type'] = init.contentType;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), REQUEST_DEADLINE_MS);
  try {
    const res = await fetch(`${base}${path}`, { method, headers, body: init.body, signal: abort.signal });
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      abort.abort();
      return { status: res.status, text: '', json: undefined, stream: true };
    }
    const text = await res.text();
    let json: unknown;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.status, text, json, stream: false };
  } catch (err) {
    const reason = abort.signal.aborted ? `no answer within ${REQUEST_DEADLINE_MS} ms` : `connection failed: ${(err as Error).message}`;
    return { status: 0, text: '', json: undefined, stream: false, failure: reason };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs tasks with at most `limit` in flight. */
export async function pool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await task(items[next++]!);
  });
  await Promise.all(workers);
}

const describeAnswer = (a: Answer) => a.failure ?? `${a.status} ${a.stream ? '(event stream)' : a.text.slice(0, 300)}`;

/**
 * Collects violations across a whole walk so one run reports all of them; known defects are warned about, and a
 * known defect that no longer reproduces is warned about too, so the list only shrinks.
 */
export class Findings {
  private readonly violations: string[] = [];
  private readonly seenKnown = new Set<number>();
  constructor(private readonly rule: string) {}

  check(op: WalkedOperation, caseName: string, request: string, answer: Answer, ok: boolean, expected: string): void {
    if (ok) return;
    const route = label(op);
    const known = knownDefects.findIndex((d) => d.route === route && d.rule === this.rule && caseName.startsWith(d.case));
    const line = `${route} [${caseName}] ${request} → ${describeAnswer(answer)} (expected ${expected})`;
    if (known >= 0) {
      this.seenKnown.add(known);
      console.warn(`  known defect: ${line}`);
      return;
    }
    this.violations.push(line);
  }

  finish(): void {
    knownDefects.forEach((d, i) => {
      if (d.rule === this.rule && !this.seenKnown.has(i)) console.warn(`  known defect no longer reproduces, remove it: ${d.route} [${d.case}]`);
    });
    expect(this.violations, `${this.violations.length} violations:\n${this.violations.join('\n')}`).to.deep.equal([]);
  }
}

/**
 * Operations whose handler errors an external standard fixes: the OAuth token endpoint answers RFC 6749 §5.2
 * `{error, error_description}` (CONTRACT "Machine token"); refusals by the edge before its handler are `{error, code}`.
 */
const standardErrorShapes: ReadonlyMap<string, (json: any) => boolean> = new Map([
  ['POST /api/oauth/token', (json: any) => typeof json?.error === 'string' && /^[a-z_]+$/.test(json.error) && typeof json?.error_description === 'string'],
]);

export const isErrorBody = (op: WalkedOperation, a: Answer) =>
  (typeof a.json?.error === 'string' && typeof a.json?.code === 'string' && SCREAMING_SNAKE.test(a.json.code)) ||
  standardErrorShapes.get(label(op))?.(a.json) === true;
export const isClientError = (op: WalkedOperation, a: Answer) => a.status >= 400 && a.status < 500 && isErrorBody(op, a);
export const isNotServerError = (op: WalkedOperation, a: Answer) => a.status >= 200 && a.status < 500 && (a.status < 400 || isErrorBody(op, a));

// One engine set keeps the walk to a couple of minutes: the real engines when the machine has them (what production
// runs), else the embedded ones. The shared contract suites are where behaviour is compared across engines.
const { set } = engineSets.find((e) => e.set === 'real' && !e.skip) ?? engineSets[0]!;

/**
 * The world's last audit entries reach the chain through the outbox moments after their replies (decision 0041); a
 * walk that reads the chain back before and after its requests must not see them land in between.
 */
async function auditOutboxEmpty(db: Knex): Promise<void> {
  for (let waited = 0; (await auditOutboxDepth(db)) > 0; waited += 20) {
    if (waited >= 5_000) throw new Error('set-up: the audit outbox did not drain within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What a walk file reads once the walk's `before` has run. */
export interface Walk {
  t: TestNode;
  world: World;
  operations: WalkedOperation[];
  loopback: string;
  readonly a: () => OrgWorld;
  /** The strongest credential of org A that the operation's document accepts. */
  readonly credentialFor: (op: WalkedOperation, org: OrgWorld) => string | undefined;
  readonly sampleBody: (op: WalkedOperation, org?: OrgWorld) => unknown;
  /** The path with `org`'s ids, and the query parameters the document requires (so the handler is reached). */
  readonly pathFor: (op: WalkedOperation, org: OrgWorld, override?: Record<string, string>, omitQuery?: string) => string;
  readonly sampleInit: (op: WalkedOperation) => SendInit;
}

/** Starts the node and the world before the enclosing describe's tests, and closes them after. */
function hostileWalk(): Walk {
  let agentServer: http.Server;
  let started = 0;
  const walk = { a: () => walk.world.a } as Walk;

  before(async () => {
    started = Date.now();
    // A loopback A2A agent (and push endpoint): every URL the walk sends points here, so nothing leaves the machine.
    agentServer = http.createServer((req, res) => {
      const card = {
        name: 'Hostile walk agent', description: 'answers the walk', version: '1.0.0', protocolVersion: '0.3.0',
        url: `${walk.loopback}/a2a`, capabilities: {}, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
        skills: [{ id: 's', name: 'skill', description: 'd', tags: [] }],
      };
      if (req.url?.startsWith('/.well-known/')) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      req.resume();
      res.writeHead(201).end();
    });
    await new Promise<void>((resolve) => agentServer.listen(0, '127.0.0.1', resolve));
    walk.loopback = `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}`;
    walk.t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1/32'] } });
    const doc = await walk.t.call('GET', '/api/openapi.json');
    expect(doc.status).to.equal(200);
    walk.operations = walkOpenApi(doc.json);
    expect(walk.operations.length, 'the document lists the routes').to.be.greaterThan(50);
    walk.world = await buildWorld(walk.t, walk.loopback);
    await auditOutboxEmpty(walk.t.node.deps.db);
    const unreached = walk.operations.filter((op) => op.body?.schema && !satisfies(op.body.schema, sampleOf(op.body.schema, walk.loopback, 0, walk.world.a.hints)));
    console.log(`    set-up: ${walk.operations.length} operations, ${Date.now() - started} ms`);
    // Their hostile variants still run, but only the validator is exercised; add a hint in world.ts to go further.
    if (unreached.length > 0) console.log(`    no schema-valid sample body for: ${unreached.map(label).join(', ')}`);
  });

  after(async () => {
    console.log(`    whole walk: ${Date.now() - started} ms`);
    await walk.t?.close();
    agentServer?.closeAllConnections();
    await new Promise((resolve) => agentServer?.close(resolve));
  });

  return Object.assign(walk, {
    credentialFor(op: WalkedOperation, org: OrgWorld): string | undefined {
      if (op.schemes.length === 0) return undefined;
      if (op.schemes.includes('adminToken')) return walk.t.adminToken;
      if (op.schemes.includes('userToken')) return org.ownerToken;
      if (op.schemes.includes('apiKey')) return org.apiKey;
      if (op.schemes.includes('runtimeJwt')) return org.runtimeJwt;
      return org.ownerToken;
    },
    sampleBody: (op: WalkedOperation, org: OrgWorld = walk.a()) => sampleOf(op.body?.schema, walk.loopback, 0, org.hints) ?? {},
    pathFor: (op: WalkedOperation, org: OrgWorld, override: Record<string, string> = {}, omitQuery?: string) => {
      const path = fillPath(op.template, (param) => override[param] ?? walk.world.segmentFor(op.template, param, org));
      const query = op.queryParams.filter((q) => q.required && q.name !== omitQuery)
        .map((q) => `${encodeURIComponent(q.name)}=${encodeURIComponent(String(sampleOf(q.schema, walk.loopback) ?? '1'))}`);
      return query.length > 0 ? `${path}?${query.join('&')}` : path;
    },
    sampleInit: (op: WalkedOperation): SendInit =>
      op.body && op.body.kind !== 'raw' ? { body: JSON.stringify(walk.sampleBody(op)), contentType: 'application/json' } : {},
  });
}

/** One part of the walk, its tests run against a node and a world of their own. */
export function describeWalk(part: string, body: (walk: Walk) => void): void {
  describe(`hostile walk over every documented route: ${part} (${set} engines)`, function () {
    this.timeout(240_000);
    body(hostileWalk());
  });
}
