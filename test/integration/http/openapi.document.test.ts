// Invariant: the OpenAPI document a started node serves is one a generated client can rely on: Redocly's linter
// (recommended rules) finds no error in it, every array says what it holds, every operation that needs a body marks
// it required, no draft-07 keyword that OpenAPI 3.1 (JSON Schema 2020-12) lacks appears, `servers` is set; and the
// checked-in client types are exactly what `npm run client:generate` makes of that document today.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import { ajv, compileSchema } from '../../../schemas/ajv.js';
import { GENERATED_TYPES_PATH, renderClientTypes } from '../../../http/client/render-types.js';
import { startTestNode, type TestNode } from '../../support/node.js';

/**
 * Redocly's `recommended` set, less two rules: `info-license`, as Troupe is not published under a licence and the
 * document must not claim one to satisfy a linter; and `no-unused-components`, as the event schemas of streams are
 * components referenced from `x-sse-events` (OpenAPI 3.1 has no place for them), which the linter does not follow.
 */
const lintRules: Parameters<typeof createConfig>[0] = {
  extends: ['recommended'],
  rules: { 'info-license': 'off', 'no-unused-components': 'off' },
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every JSON object in the document with its JSON pointer, depth first. */
function* objectsIn(value: Json, pointer = ''): Generator<[string, Record<string, Json>]> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* objectsIn(item, `${pointer}/${i}`);
  } else if (value !== null && typeof value === 'object') {
    yield [pointer, value];
    for (const [key, item] of Object.entries(value)) yield* objectsIn(item, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  }
}

const isArraySchema = (schema: Record<string, Json>): boolean =>
  schema.type === 'array' || (Array.isArray(schema.type) && schema.type.includes('array'));

describe('the OpenAPI document a node serves', function () {
  this.timeout(120_000);
  let t: TestNode;
  let text: string;
  let doc: any;
  before(async () => {
    t = await startTestNode();
    const res = await t.call('GET', '/api/openapi.json');
    expect(res.status).to.equal(200);
    text = res.text;
    doc = JSON.parse(text);
  });
  after(async () => { await t?.close(); });

  it('passes the Redocly linter (recommended rules) with no error and no warning', async () => {
    const problems = await lintFromString({ source: text, absoluteRef: `${t.url}/api/openapi.json`, config: await createConfig(lintRules) });
    const show = (p: NormalizedProblem) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`;
    expect(problems.filter((p) => p.severity === 'error').map(show)).to.deep.equal([]);
    expect(problems.map(show)).to.deep.equal([]);
  });

  it('says what every array holds', () => {
    const bare = [...objectsIn(doc)].filter(([, s]) => isArraySchema(s) && !('items' in s) && !('prefixItems' in s)).map(([p]) => p);
    expect(bare).to.deep.equal([]);
  });

  it('uses no draft-07 keyword that JSON Schema 2020-12 replaced', () => {
    const draft07 = [...objectsIn(doc)].filter(([p, s]) => 'dependencies' in s && p.includes('/schema')).map(([p]) => p);
    expect(draft07).to.deep.equal([]);
  });

  it('marks a request body required exactly when the operation cannot do without one', () => {
    let required = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const body = op.requestBody;
        if (!body) continue;
        const schema = body.content['application/json']?.schema ?? body.content['application/x-www-form-urlencoded']?.schema;
        // The server reads an empty JSON or form body as {}; a raw body (a webhook's bytes) is always needed.
        const needed = schema === undefined || !compileSchema(ajv, schema)({});
        expect(body.required, `${method} ${path}`).to.equal(needed);
        if (needed) required += 1;
      }
    }
    // The daemon protocol's bodies are among them: a client that omits one is a compile error, not a 400.
    expect(doc.paths['/api/daemon/poll'].post.requestBody.required).to.equal(true);
    expect(doc.paths['/api/daemon/heartbeat'].post.requestBody.required).to.equal(true);
    expect(required).to.be.greaterThan(40);
  });

  it('types the daemon protocol replies a worker reads', () => {
    const reply = (path: string) => doc.paths[path].post.responses['200'].content['application/json'].schema;
    expect(reply('/api/daemon/poll').properties.sessions.items.required).to.include.members(['id', 'projectId', 'prompt']);
    expect(reply('/api/daemon/heartbeat').properties.mutations.items.properties.op.enum).to.include.members(['project.add', 'pool.deleted']);
  });

  it('types the events of the session and interview streams', () => {
    const events = (path: string) => doc.paths[path].get.responses['200'].content['text/event-stream']['x-sse-events'];
    expect(events('/api/sessions/events')['session.status']).to.deep.equal({ $ref: '#/components/schemas/SessionStatusEvent' });
    expect(events('/api/interview/{id}/stream')['interview.delta']).to.deep.equal({ $ref: '#/components/schemas/InterviewDeltaEvent' });
    expect(doc.components.schemas.SessionStatusEvent.required).to.include.members(['sessionId', 'status']);
  });

  it("types the events of the worker's streams: offers, stops, nudges and credential rotations", () => {
    const events = (path: string) => doc.paths[path].get.responses['200'].content['text/event-stream']['x-sse-events'];
    expect(Object.keys(events('/api/daemon/events'))).to.have.members(['ready', 'offer', 'poll', 'stop', 'mutation']);
    expect(doc.components.schemas.DaemonOfferEvent.properties.session.required).to.include.members(['id', 'projectId', 'prompt']);
    expect(doc.components.schemas.DaemonStopEvent.required).to.have.members(['sessionId', 'status', 'reason']);
    expect(events('/api/daemon/credentials/stream')['credential.rotated']).to.deep.equal({ $ref: '#/components/schemas/CredentialRotatedEvent' });
  });

  it('names where the API is served', () => {
    expect(doc.servers).to.be.an('array').that.is.not.empty;
    expect(doc.servers[0].url).to.equal('/');
  });

  it('matches the checked-in client types (run `npm run client:generate` after changing a route)', async () => {
    const checkedIn = readFileSync(new URL(`../../../${GENERATED_TYPES_PATH}`, import.meta.url), 'utf8');
    const fresh = await renderClientTypes(text);
    if (fresh !== checkedIn) {
      const a = checkedIn.split('\n');
      const b = fresh.split('\n');
      const line = a.findIndex((l, i) => l !== b[i]);
      expect.fail(`${GENERATED_TYPES_PATH} is stale (first difference at line ${line + 1}: ${JSON.stringify(a[line])} vs ${JSON.stringify(b[line])}); run npm run client:generate`);
    }
  });
});
