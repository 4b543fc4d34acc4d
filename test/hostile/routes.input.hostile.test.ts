// Invariant (issue 16, rule 1 of routes.hostile.test.ts): on every documented route, bad input (malformed or mistyped
// bodies, invalid UTF-8 and other encodings, lone surrogates, nesting past 64, wrong content type, oversize bodies,
// huge strings, NUL characters, hostile path and query values) gets a 4xx `{error, code}` and changes nothing; no
// route answers 5xx to a client's mistake.
import { expect } from 'chai';
import type { TestNode } from '../support/node.js';
import { requiredOf, stringMembersOf, wrongTypeFor, type WalkedOperation } from '../support/openapi-walk.js';
import { readBack, type World } from './world.js';
import { CONCURRENCY, describeWalk, Findings, isClientError, isNotServerError, MiB, pool, send, type SendInit } from './walk.js';

describeWalk('hostile input', (walk) => {
  const { a, credentialFor, sampleBody, pathFor, sampleInit } = walk;
  let t: TestNode, world: World, operations: WalkedOperation[];
  before(() => ({ t, world, operations } = walk));

  it('answers hostile request bodies with 4xx {error, code} and changes nothing', async () => {
    const findings = new Findings('bodies');
    const before = await readBack(t, world.a);
    const withBody = operations.filter((op) => op.body !== undefined);
    await pool(withBody, CONCURRENCY, async (op) => {
      const path = pathFor(op, a());
      const token = credentialFor(op, a());
      const expectRefused = async (caseName: string, init: SendInit) => {
        const answer = await send(t.url, op.method, path, { token, ...init });
        findings.check(op, caseName, `${op.method} ${path}`, answer, isClientError(op, answer), '4xx {error, code}');
      };
      const json = (value: unknown) => ({ body: JSON.stringify(value), contentType: 'application/json' });
      await expectRefused('body over 1 MiB', { body: new Uint8Array(MiB + 1).fill(0x20), contentType: 'application/json' });
      if (op.body!.kind === 'raw') {
        // Signed webhooks: the body is opaque bytes checked against a signature; junk must still never be a 5xx.
        await expectRefused('junk raw body', { body: new Uint8Array([0xff, 0xfe, 0x00, 0x7b]), contentType: 'application/octet-stream' });
        await expectRefused('malformed JSON', { body: '{"a":', contentType: 'application/json' });
        return;
      }
      await expectRefused('malformed JSON', { body: '{"a":', contentType: 'application/json' });
      await expectRefused('JSON array', json([sampleBody(op)]));
      await expectRefused('JSON scalar', json('hostile'));
      await expectRefused('JSON null', { body: 'null', contentType: 'application/json' });
      await expectRefused('invalid UTF-8', { body: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]), contentType: 'application/json' });
      await expectRefused('wrong content type', { body: JSON.stringify(sampleBody(op)), contentType: 'text/plain' });
      await expectRefused('deeply nested JSON', { body: `${'['.repeat(20_000)}${']'.repeat(20_000)}`, contentType: 'application/json' });
      // Valid JSON the edge must still refuse (issue 16): nesting past 64 inside an object, and lone surrogates.
      const plausible = JSON.stringify(sampleBody(op));
      const inside = (member: string) => (plausible === '{}' ? `{${member}}` : `${plausible.slice(0, -1)},${member}}`);
      await expectRefused('object nested 65 deep', { body: inside(`"hostileDeep":${'['.repeat(64)}1${']'.repeat(64)}`), contentType: 'application/json' });
      await expectRefused('lone surrogate in a value', { body: inside('"hostileText":"\\ud800"'), contentType: 'application/json' });
      await expectRefused('lone surrogate in a key', { body: inside('"\\udfff":1'), contentType: 'application/json' });
      await expectRefused('UTF-16 body', { body: Buffer.from(plausible, 'utf16le'), contentType: 'application/json' });
      await expectRefused('declared charset latin1', { body: plausible, contentType: 'application/json; charset=latin1' });
      const required = requiredOf(op.body!.schema);
      if (required.length > 0) {
        await expectRefused('only unknown properties', json({ hostileUnknown: 1, constructor: { prototype: { polluted: true } }, __proto__: { polluted: true } }));
        for (const member of required) {
          const wrong = wrongTypeFor(member.schema);
          if (wrong === undefined) continue;
          await expectRefused(`wrong type for required '${member.name}'`, json({ ...(sampleBody(op) as object), [member.name]: wrong }));
        }
      }
    });
    expect(({} as Record<string, unknown>).polluted, 'no prototype pollution').to.equal(undefined);
    const after = await readBack(t, world.a);
    expect(after, 'hostile bodies changed org A').to.deep.equal(before);
    findings.finish();
  });

  it('refuses a huge string in any member (4xx), and never answers 5xx to NUL characters or unknown members', async () => {
    const findings = new Findings('huge-strings');
    const jsonOps = operations.filter((op) => op.body && op.body.kind !== 'raw');
    const huge = 'h'.repeat(600_000);
    await pool(jsonOps, CONCURRENCY, async (op) => {
      const path = pathFor(op, a());
      const token = credentialFor(op, a());
      const base = sampleBody(op) as Record<string, unknown>;
      for (const member of stringMembersOf(op.body!.schema)) {
        const answer = await send(t.url, op.method, path, { token, body: JSON.stringify({ ...base, [member]: huge }), contentType: 'application/json' });
        findings.check(op, `huge string in '${member}'`, `${op.method} ${path} with ${member} of 600 000 characters`, answer, isClientError(op, answer), '4xx {error, code}');
        // Valid JSON, but Postgres text and jsonb cannot hold U+0000: it must be refused or stored safely, never a 500.
        const body = JSON.stringify({ ...base, [member]: `nul\u0000${typeof base[member] === 'string' ? base[member] : 'x'}` });
        const nul = await send(t.url, op.method, path, { token, body, contentType: 'application/json' });
        findings.check(op, `NUL character in '${member}'`, `${op.method} ${path} ${body.slice(0, 200)}`, nul, isNotServerError(op, nul), 'no 5xx');
      }
      const extra = await send(t.url, op.method, path, { token, body: JSON.stringify({ ...base, hostileUnknown: { deep: [1, 2, 3] } }), contentType: 'application/json' });
      findings.check(op, 'unknown member beside a plausible body', `${op.method} ${path}`, extra, isNotServerError(op, extra), 'no 5xx');
    });
    findings.finish();
  });

  const hostileSegments: Record<string, string> = {
    'very long': 'L'.repeat(2000),
    'dot-dot-slash': '..%2F..%2F..%2Fetc%2Fpasswd',
    'dot-dot': '..',
    'NUL byte': 'abc%00def',
    'invalid UTF-8 escape': '%C3%28%FF',
    unicode: encodeURIComponent('ünïcødé-😀-\u202e'),
    'SQL quotes': encodeURIComponent(`' OR '1'='1'; DROP TABLE orgs; --`),
    'UUID of nothing': '00000000-0000-4000-8000-000000000000',
    percent: '%25',
  };

  it('answers hostile path parameters with 4xx {error, code}, never 5xx', async () => {
    const findings = new Findings('path-params');
    const cases = operations.flatMap((op) => op.pathParams.flatMap((param) => Object.entries(hostileSegments).map(([name, segment]) => ({ op, param, name, segment }))));
    await pool(cases, CONCURRENCY, async ({ op, param, name, segment }) => {
      const path = pathFor(op, a(), { [param]: segment });
      const answer = await send(t.url, op.method, path, { token: credentialFor(op, a()), ...sampleInit(op) });
      // A well-formed value the client names itself (a template slug, an interview channel) may be accepted.
      const mayWork = op.schemes.length === 0 || (name === 'UUID of nothing' && (world.clientNamed(op.template, param) || !world.ownsResource(op.template, param, op.method)));
      const ok = mayWork ? isNotServerError(op, answer) : isClientError(op, answer);
      findings.check(op, `${name} as {${param}}`, `${op.method} ${path.slice(0, 200)}`, answer, ok, mayWork ? 'no 5xx' : '4xx {error, code}');
    });
    findings.finish();
  });

  const hostileQueryValues: Record<string, string> = {
    'very long': 'q'.repeat(2000),
    'SQL quotes': encodeURIComponent(`' OR 1=1 --`),
    negative: '-1',
    huge: '1e309',
    'NUL byte': 'a%00b',
    'invalid UTF-8 escape': '%FF%FE',
    unicode: encodeURIComponent('ünï😀'),
    'JSON-ish': encodeURIComponent('{"$gt":""}'),
    empty: '',
  };

  it('answers hostile query values with 4xx {error, code} or 200, never 5xx', async () => {
    const findings = new Findings('query');
    const cases = operations.flatMap((op) => op.queryParams.flatMap((param) => Object.entries(hostileQueryValues).map(([name, value]) => ({ op, param: param.name, name, value }))));
    // Repeating a parameter is a hostile shape of its own.
    cases.push(...operations.filter((op) => op.queryParams.length > 0).map((op) => ({ op, param: op.queryParams[0]!.name, name: 'repeated', value: `1&${op.queryParams[0]!.name}=2` })));
    await pool(cases, CONCURRENCY, async ({ op, param, name, value }) => {
      const base = pathFor(op, a(), {}, param);
      const path = `${base}${base.includes('?') ? '&' : '?'}${param}=${value}`;
      const answer = await send(t.url, op.method, path, { token: credentialFor(op, a()), ...sampleInit(op) });
      const ok = answer.status >= 200 && answer.status < 300 ? true : isClientError(op, answer);
      findings.check(op, `${name} in ?${param}`, `${op.method} ${path.slice(0, 200)}`, answer, ok, '2xx or 4xx {error, code}');
    });
    findings.finish();
  });
});
