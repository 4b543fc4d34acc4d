// Invariant: a request body is refused before it reaches a handler when it is too large (413, counted while
// streaming, and the server stays healthy), not UTF-8 (400), not JSON (400), of the wrong content type (415) or
// outside its schema (400 naming the field); raw routes get the exact bytes and form routes a field object.
import { expect } from 'chai';
import type { Route } from '../../../http/types.js';
import { rawExchange, startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

const MiB = 1024 * 1024;
const seen: unknown[] = [];

const routes: Route<TestDeps>[] = [
  {
    method: 'post',
    path: '/api/orgs',
    auth: 'none',
    summary: 'schema-checked',
    bodySchema: {
      type: 'object',
      required: ['name', 'owner'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1 },
        owner: { type: 'object', required: ['email'], properties: { email: { type: 'string', format: 'email' } } },
      },
    },
    handler: async (req) => {
      seen.push(req.body);
      return { body: { ok: true } };
    },
  },
  { method: 'post', path: '/api/echo', auth: 'none', summary: 'echo', handler: async (req) => ({ body: { body: req.body, bytes: req.rawBody.length } }) },
  { method: 'post', path: '/api/small', auth: 'none', summary: 'small cap', bodyLimit: 16, handler: async (req) => ({ body: req.body }) },
  {
    method: 'post',
    path: '/api/raw',
    auth: 'none',
    summary: 'raw',
    bodyKind: 'raw',
    handler: async (req) => ({ body: { hex: req.rawBody.toString('hex'), isBuffer: Buffer.isBuffer(req.body) } }),
  },
  { method: 'post', path: '/api/form', auth: 'none', summary: 'form', bodyKind: 'form', bodySchema: { type: 'object', required: ['grant_type'] }, handler: async (req) => ({ body: req.body }) },
  {
    method: 'get',
    path: '/api/list',
    auth: 'none',
    summary: 'query',
    querySchema: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100 } } },
    handler: async (req) => ({ body: { limit: req.query.get('limit') } }),
  },
  { method: 'get', path: '/healthz', auth: 'none', summary: 'health', handler: async () => ({ body: { ok: true } }) },
];

describe('http server: request bodies', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer(routes);
  });
  after(async () => {
    await t.close();
  });

  it('refuses a body of 1 MiB + 1 with 413 and keeps serving', async () => {
    const r = await t.call('POST', '/api/echo', { body: Buffer.alloc(MiB + 1, 0x20), headers: { 'content-type': 'application/json' } });
    expect(r.status).to.equal(413);
    expect(r.json.code).to.equal('HTTP_BODY_TOO_LARGE');
    expect((await t.call('GET', '/healthz')).status).to.equal(200);
  });

  it('counts bytes while streaming: 1 MiB + 1 sent chunked, without Content-Length, is 413 and the server stays up', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const parts: Buffer[] = [];
    for (let sent = 0; sent <= MiB; sent += chunk.length) parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
    parts.push(Buffer.from('1\r\n \r\n0\r\n\r\n'));
    const head = `POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const reply = await rawExchange(t.port, head, Buffer.concat(parts));
    expect(reply).to.match(/^HTTP\/1\.1 413 /);
    expect(reply).to.include('"code":"HTTP_BODY_TOO_LARGE"');
    expect((await t.call('GET', '/healthz')).status).to.equal(200);
  });

  it('accepts a body of exactly 1 MiB', async () => {
    const body = Buffer.from(JSON.stringify({ pad: 'x'.repeat(MiB - 10) }));
    expect(body.length).to.equal(MiB);
    const r = await t.call('POST', '/api/echo', { body, headers: { 'content-type': 'application/json' } });
    expect(r.status).to.equal(200);
    expect(r.json.bytes).to.equal(MiB);
  });

  it('counts bytes while streaming: a body without Content-Length passing the cap is 413', async () => {
    const chunked = `POST /api/small HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const payload = Buffer.from(`40\r\n${'"'.padEnd(0x40, 'a')}\r\n0\r\n\r\n`);
    const reply = await rawExchange(t.port, chunked, payload);
    expect(reply).to.match(/^HTTP\/1\.1 413 /);
    expect((await t.call('GET', '/healthz')).status).to.equal(200);
  });

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    const reply = await rawExchange(t.port, `POST /api/small HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n`, Buffer.alloc(0));
    expect(reply).to.match(/^HTTP\/1\.1 413 /);
    expect(reply).to.include('"code":"HTTP_BODY_TOO_LARGE"');
  });

  it('refuses invalid UTF-8 with 400 HTTP_BAD_UTF8', async () => {
    const r = await t.call('POST', '/api/echo', { body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), headers: { 'content-type': 'application/json' } });
    expect(r.status).to.equal(400);
    expect(r.json.code).to.equal('HTTP_BAD_UTF8');
  });

  it('refuses malformed JSON with 400 HTTP_BAD_JSON', async () => {
    const r = await t.call('POST', '/api/echo', { body: '{"a":', headers: { 'content-type': 'application/json' } });
    expect(r.status).to.equal(400);
    expect(r.json).to.deep.equal({ error: 'request body is not valid JSON', code: 'HTTP_BAD_JSON' });
  });

  it('refuses a JSON route called with another content type with 415', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']) {
      const r = await t.call('POST', '/api/echo', { body: '{}', headers: { 'content-type': contentType } });
      expect(r.status, contentType).to.equal(415);
      expect(r.json.code).to.equal('HTTP_UNSUPPORTED_MEDIA_TYPE');
    }
    const ok = await t.call('POST', '/api/echo', { body: '{"a":1}', headers: { 'content-type': 'Application/JSON; charset=UTF-8' } });
    expect(ok.json.body).to.deep.equal({ a: 1 });
  });

  it('treats an empty body on a JSON route as {} so the schema decides', async () => {
    const r = await t.call('POST', '/api/echo');
    expect(r.status).to.equal(200);
    expect(r.json.body).to.deep.equal({});
    const required = await t.call('POST', '/api/orgs');
    expect(required.status).to.equal(400);
    expect(required.json.error).to.include("'name'");
  });

  it('names the missing field in a schema error, with details', async () => {
    const r = await t.call('POST', '/api/orgs', { body: { name: 'Acme', owner: {} } });
    expect(r.status).to.equal(400);
    expect(r.json.code).to.equal('VALIDATION_FAILED');
    expect(r.json.error).to.equal("field 'owner.email' is required");
    expect(r.json.details.field).to.equal('owner.email');
  });

  it('names the offending field for type, format and unknown-property errors', async () => {
    const badType = await t.call('POST', '/api/orgs', { body: { name: 5, owner: { email: 'a@b.test' } } });
    expect(badType.json.error).to.equal("field 'name' must be string");
    const badFormat = await t.call('POST', '/api/orgs', { body: { name: 'A', owner: { email: 'nope' } } });
    expect(badFormat.json.error).to.match(/^field 'owner\.email' must match format "email"/);
    const extra = await t.call('POST', '/api/orgs', { body: { name: 'A', owner: { email: 'a@b.test' }, isAdmin: true } });
    expect(extra.json.error).to.equal("field 'isAdmin' is not allowed");
    expect(seen).to.have.length(0);
  });

  it('validates the query, coercing numbers, with 400 HTTP_BAD_QUERY naming the parameter', async () => {
    expect((await t.call('GET', '/api/list?limit=50')).json).to.deep.equal({ limit: '50' });
    const r = await t.call('GET', '/api/list?limit=500');
    expect(r.status).to.equal(400);
    expect(r.json.code).to.equal('HTTP_BAD_QUERY');
    expect(r.json.error).to.include("'limit'");
  });

  it('hands raw routes the exact bytes, whatever their content type', async () => {
    const bytes = Buffer.from([0x00, 0xff, 0xc3, 0x28, 0x7b]);
    const r = await t.call('POST', '/api/raw', { body: bytes, headers: { 'content-type': 'application/octet-stream' } });
    expect(r.json).to.deep.equal({ hex: '00ffc3287b', isBuffer: true });
  });

  it('parses form routes as fields (and accepts JSON there too), refusing other types', async () => {
    const form = await t.call('POST', '/api/form', { body: 'grant_type=client_credentials&scope=a+b', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.json).to.deep.equal({ grant_type: 'client_credentials', scope: 'a b' });
    const json = await t.call('POST', '/api/form', { body: { grant_type: 'client_credentials' } });
    expect(json.json).to.deep.equal({ grant_type: 'client_credentials' });
    const missing = await t.call('POST', '/api/form', { body: 'scope=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(missing.json.error).to.equal("field 'grant_type' is required");
    const wrong = await t.call('POST', '/api/form', { body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(wrong.status).to.equal(415);
  });
});
