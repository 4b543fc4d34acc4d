import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';

/** Provisioning for the agents/integrations tests: orgs through the admin route, and users by role. */
export interface Org {
  readonly orgId: string;
  readonly ownerId: string;
  readonly ownerToken: string;
  readonly apiKey: string;
}

export async function provision(t: TestNode): Promise<Org> {
  const r = await t.call('POST', '/api/admin/orgs', {
    token: t.adminToken, body: { name: `Org ${randomUUID().slice(0, 8)}`, owner: { email: `owner-${randomUUID().slice(0, 8)}@example.test` } },
  });
  expect(r.status, r.text).to.equal(201);
  return { orgId: r.json.org.id, ownerId: r.json.owner.id, ownerToken: r.json.userToken, apiKey: r.json.apiKey.fullKey };
}

export async function addUser(t: TestNode, orgId: string, role: 'owner' | 'admin' | 'member' | 'viewer'): Promise<{ userId: string; token: string }> {
  const r = await t.call('POST', `/api/admin/orgs/${orgId}/users`, {
    token: t.adminToken, body: { email: `${role}-${randomUUID().slice(0, 8)}@example.test`, role },
  });
  expect(r.status, r.text).to.equal(201);
  return { userId: r.json.user.id, token: r.json.userToken };
}

/** Bodies no route may answer with a 5xx. */
export const hostileBodies: (string | Uint8Array)[] = [
  '', '{', 'null', '[]', '"x"', '{"__proto__":{"admin":true}}', '{"url":{"$gt":""}}', Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
  JSON.stringify({ a: 'x'.repeat(100_000) }), '{"trustLevel":"internal","extra":1}', '{"endpoint":"javascript:alert(1)","keys":{}}',
];
