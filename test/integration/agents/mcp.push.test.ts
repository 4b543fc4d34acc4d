// Invariant (issue 35 §3, decision 0088): an approval an agent asks for is an ordinary approval gate, so the people
// who may decide it hear of it by web push ("Approval needed", the agent's summary) as for any gate. The push service
// on loopback decrypts each message (RFC 8291) so the test reads what the user would see.
import { createECDH, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { decryptPush, type Browser } from '../../support/web-push.js';
import { provisionOrg, registerDaemon, dispatch, report } from '../sessions/support.js';

describe("troupe mcp: an agent's approval request is pushed to its deciders", function () {
  this.timeout(60_000);
  let t: TestNode;
  let pushService: http.Server;
  const inbox = new Map<string, Buffer[]>();

  before(async () => {
    pushService = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        inbox.set(req.url ?? '', [...(inbox.get(req.url ?? '') ?? []), Buffer.concat(chunks)]);
        res.writeHead(201).end();
      });
    });
    await new Promise<void>((resolve) => pushService.listen(0, '127.0.0.1', resolve));
    t = await startTestNode({ config: { outboundAllow: ['127.0.0.1'], webPushSubject: 'mailto:ops@troupe.test' } });
  });
  after(async () => {
    await t?.close();
    pushService.closeAllConnections();
    await new Promise((resolve) => pushService.close(resolve));
  });

  it('the owner subscribed to web push receives the request with its summary', async () => {
    const org = await provisionOrg(t, 'Pushed');
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const browser: Browser = { ecdh, auth: randomBytes(16), path: `/push/${org.orgId}` };
    const base = `http://127.0.0.1:${(pushService.address() as AddressInfo).port}`;
    const subscribed = await t.inject('POST', '/api/notifications/web-push/subscribe', {
      token: org.ownerToken,
      body: { endpoint: `${base}${browser.path}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: browser.auth.toString('base64url') } },
    });
    expect(subscribed.status, subscribed.text).to.equal(201);

    const worker = await registerDaemon(t, org);
    const id = await dispatch(t, org);
    for (const status of ['claimed', 'running']) expect((await report(t, worker, id, status)).status).to.equal(200);
    const token = (await t.inject('POST', `/api/sessions/${id}/agent-token`, { token: worker.runtimeJwt, body: { workerId: worker.workerId } })).json.token as string;
    const asked = await t.inject('POST', `/api/sessions/${id}/agent/approvals`, { headers: { authorization: `Bearer ${token}` }, body: { summary: 'Rotate the signing key' } });
    expect(asked.status, asked.text).to.equal(201);

    const tag = `approval-gate:${asked.json.id as string}`;
    const received = () => (inbox.get(browser.path) ?? []).map((body) => decryptPush(body, browser));
    await eventually(() => received().some((n) => n.tag === tag), 'the owner was notified');
    expect(received().find((n) => n.tag === tag)).to.deep.include({ title: 'Approval needed', body: 'Agent asks: Rotate the signing key', url: `/approvals/${asked.json.id as string}` });
  });
});
