// Invariant (issue 16, rule 5 of routes.hostile.test.ts): every URL a body takes refuses internal address forms
// (SSRF); a webhook delivery is accepted only when validly signed, fresh and first, for the org its URL names.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../support/node.js';
import type { WalkedOperation } from '../support/openapi-walk.js';
import type { World } from './world.js';
import { signatureHeaderFor } from '../../actors/services/integrations/webhooks/providers.js';
import { CONCURRENCY, describeWalk, Findings, isClientError, pool, send, type Answer } from './walk.js';

describeWalk('addresses and webhooks', (walk) => {
  const { a, credentialFor, sampleBody, pathFor } = walk;
  let t: TestNode, world: World, operations: WalkedOperation[];
  before(() => ({ t, world, operations } = walk));

  it('fetches nothing at internal addresses: every URL member refuses SSRF address forms (4xx, or stored unreachable)', async () => {
    const findings = new Findings('ssrf');
    const forms = [
      'http://127.0.0.2/', 'http://0x7f000002/', 'http://2130706434/', 'http://0177.0.0.2/', 'http://[::1]/', 'http://[::]/',
      'http://0.0.0.0/', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:a9fe:a9fe]/', 'http://[fe80::1]/',
      'http://10.0.0.1/', 'http://172.16.0.1/', 'http://192.168.1.1/', 'http://[fd00::1]/', 'http://100.64.0.1/',
      'http://user:pass@example.test/', 'file:///etc/passwd', 'gopher://127.0.0.2:25/', 'ftp://127.0.0.2/',
    ];
    const withUrls = operations.flatMap((op) => {
      const properties = (op.body?.schema?.properties ?? {}) as Record<string, { format?: string }>;
      return Object.entries(properties).filter(([, s]) => s.format === 'uri' || s.format === 'url').map(([member]) => ({ op, member }));
    });
    expect(withUrls.length, 'routes that take URLs').to.be.greaterThan(0);
    await pool(withUrls, CONCURRENCY, async ({ op, member }) => {
      const path = pathFor(op, a());
      for (const url of forms) {
        const body = JSON.stringify({ ...(sampleBody(op) as object), [member]: url });
        const answer = await send(t.url, op.method, path, { token: credentialFor(op, a()), body, contentType: 'application/json' });
        const storedUnreachable = answer.status < 300 && JSON.stringify(answer.json ?? {}).includes('"reachable":false');
        findings.check(op, `${member}=${url}`, `${op.method} ${path}`, answer, isClientError(op, answer) || storedUnreachable, '4xx, or stored with reachable: false');
      }
    });
    findings.finish();
  });

  it('webhook signature states: only a valid, fresh, first delivery for the named org is accepted', async () => {
    const findings = new Findings('webhooks');
    const providers = ['linear', 'github', 'circleci', 'vercel'] as const;
    const secret = randomBytes(20).toString('hex');
    for (const provider of providers) {
      const put = await send(t.url, 'PUT', `/api/org/${a().orgId}/integrations/${provider}`, { token: a().ownerToken, body: JSON.stringify({ signingSecret: secret }), contentType: 'application/json' });
      expect(put.status, put.text).to.equal(200);
    }
    const op = operations.find((o) => o.template === '/api/webhooks/ingest/{provider}')!;
    for (const provider of providers) {
      const body = (extra: Record<string, unknown> = {}) => JSON.stringify({
        id: `evt_${randomUUID()}`, type: 'x', action: 'opened', webhookTimestamp: Date.now(), data: { id: randomUUID() }, ...extra,
      });
      const deliver = (raw: string, headers: Record<string, string>, org = a().orgId) =>
        send(t.url, 'POST', `/api/webhooks/ingest/${provider}${org ? `?org=${org}` : ''}`, {
          body: raw, contentType: 'application/json', headers: { 'x-github-delivery': randomUUID(), 'linear-delivery': randomUUID(), 'x-github-event': 'issues', ...headers },
        });
      const raw = body();
      const valid = signatureHeaderFor(provider, secret, raw);
      const states: [string, () => Promise<Answer>, number][] = [
        ['unsigned', () => deliver(body(), {}), 401],
        ['malformed signature', () => deliver(raw, Object.fromEntries(Object.keys(valid).map((k) => [k, 'sha256=zz']))), 401],
        ['wrong secret', () => deliver(raw, signatureHeaderFor(provider, 'not-the-secret', raw)), 401],
        ['tampered body', () => deliver(raw.replace('"x"', '"y"'), valid), 401],
        ["another org's URL", () => deliver(raw, valid, world.b.orgId), 401],
        ['no org in the URL, no registered account in the delivery', () => deliver(raw, valid, ''), 401],
        ['valid', () => deliver(raw, valid), 200],
      ];
      if (provider === 'linear') {
        const stale = body({ webhookTimestamp: Date.now() - 10 * 60_000 });
        states.push(['stale timestamp', () => deliver(stale, signatureHeaderFor(provider, secret, stale)), 401]);
      }
      for (const [name, attempt, status] of states) {
        const answer = await attempt();
        findings.check(op, `${provider}: ${name}`, `POST /api/webhooks/ingest/${provider}`, answer, answer.status === status, String(status));
      }
      const replay = await deliver(raw, valid);
      findings.check(op, `${provider}: replay under a fresh delivery id`, `POST /api/webhooks/ingest/${provider}`, replay,
        replay.status === 200 && replay.json?.duplicate === true, '200 duplicate: true');
    }
    findings.finish();
  });
});
