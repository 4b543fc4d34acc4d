// Invariant: web push follows real events once they are durable. An approval gate that opens reaches the
// subscribed org users whose role may decide it, and no one else (a gate requiring admin skips members and
// viewers); a session that ends reaches the user who dispatched it. The push service on loopback decrypts each
// message (RFC 8291) so the test reads what the user would see.
import { createECDH, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { addUser, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { decryptPush, type Browser, type Notification } from '../../support/web-push.js';

for (const { set, skip } of engineSets) describe(`web push on approval gates and ended sessions (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let pushService: http.Server;
  let pushBase: string;
  const inbox = new Map<string, Buffer[]>();
  const browsers = new Map<string, Browser>();
  let users: Record<'owner' | 'admin' | 'member' | 'viewer', { userId: string; token: string }>;

  const received = (who: keyof typeof users): Notification[] => {
    const b = browsers.get(users[who].userId)!;
    return (inbox.get(b.path) ?? []).map((body) => decryptPush(body, b));
  };

  async function subscribe(user: { userId: string; token: string }) {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const b: Browser = { ecdh, auth: randomBytes(16), path: `/push/${user.userId}` };
    browsers.set(user.userId, b);
    const r = await t.inject('POST', '/api/notifications/web-push/subscribe', {
      token: user.token,
      body: { endpoint: `${pushBase}${b.path}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: b.auth.toString('base64url') } },
    });
    expect(r.status, r.text).to.equal(201);
  }

  before(async () => {
    pushService = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const list = inbox.get(req.url ?? '') ?? [];
        list.push(Buffer.concat(chunks));
        inbox.set(req.url ?? '', list);
        res.writeHead(201).end();
      });
    });
    await new Promise<void>((resolve) => pushService.listen(0, '127.0.0.1', resolve));
    pushBase = `http://127.0.0.1:${(pushService.address() as AddressInfo).port}`;
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], webPushSubject: 'mailto:ops@troupe.test' } });
    org = await provisionOrg(t);
    users = {
      owner: { userId: org.ownerId, token: org.ownerToken },
      admin: await addUser(t, org.orgId, 'admin'),
      member: await addUser(t, org.orgId, 'member'),
      viewer: await addUser(t, org.orgId, 'viewer'),
    };
    for (const u of Object.values(users)) await subscribe(u);
  });
  after(async () => {
    await t?.close();
    pushService.closeAllConnections();
    await new Promise((resolve) => pushService.close(resolve));
  });

  it('an opened gate reaches exactly the users whose role may decide it', async () => {
    const adminGate = await t.inject('POST', '/api/approval-gates', {
      token: org.ownerToken, body: { projectId: org.projectId, title: 'Deploy to production', requiredRole: 'admin' },
    });
    expect(adminGate.status, adminGate.text).to.equal(201);
    const gateTag = `approval-gate:${adminGate.json.gate.id}`;
    await eventually(() => received('owner').some((n) => n.tag === gateTag) && received('admin').some((n) => n.tag === gateTag), 'owner and admin notified');
    expect(received('owner').find((n) => n.tag === gateTag)).to.deep.include({ title: 'Approval needed', body: 'Deploy to production' });

    // A gate members may decide: once the member hears of it, the admin-only gate has long been sent to everyone it
    // was going to reach, and the member and the viewer are not among them.
    const openGate = await t.inject('POST', '/api/approval-gates', { token: org.ownerToken, body: { projectId: org.projectId, title: 'Merge the docs fix' } });
    expect(openGate.status, openGate.text).to.equal(201);
    const openTag = `approval-gate:${openGate.json.gate.id}`;
    await eventually(() => received('member').some((n) => n.tag === openTag), 'member notified of the gate members may decide');
    expect(received('member').map((n) => n.tag)).to.not.include(gateTag);
    expect(received('viewer').map((n) => n.tag)).to.not.include.members([gateTag, openTag]);
  });

  it('a session that ends reaches the user who dispatched it', async () => {
    const dispatched = await t.inject('POST', '/api/agent-dispatch', { token: users.member.token, body: { projectId: org.projectId, prompt: 'Fix the flaky login test' } });
    expect(dispatched.status, dispatched.text).to.equal(201);
    const sessionTag = `session:${dispatched.json.sessionId}`;
    expect(received('member').map((n) => n.tag)).to.not.include(sessionTag);
    const stopped = await t.inject('POST', `/api/public/sessions/${dispatched.json.sessionId}/stop`, { token: org.ownerToken });
    expect(stopped.status, stopped.text).to.equal(200);
    await eventually(() => received('member').some((n) => n.tag === sessionTag), 'dispatcher notified');
    expect(received('member').find((n) => n.tag === sessionTag)).to.deep.include({ title: 'Session stopped', body: 'Fix the flaky login test' });
    expect(received('owner').map((n) => n.tag)).to.not.include(sessionTag);
  });
});
