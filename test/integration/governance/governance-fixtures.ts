import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { deriveSigningKeys, signToken } from '../../../actors/services/identity/tokens.js';
import type { EngineSet, TestNode } from '../../support/node.js';
import { skipEngine } from '../../support/engines.js';

/**
 * Provisioning for governance tests: an org through the admin route (owner token, API key), extra users by role,
 * and the non-human credentials that human-only routes must refuse (runtime and machine JWTs signed with the node's
 * own keys, as the daemon registration and client_credentials routes would issue them).
 */
export interface ProvisionedOrg {
  readonly orgId: string;
  readonly projectId: string;
  readonly ownerId: string;
  readonly ownerToken: string;
  readonly apiKey: string;
  /** The org's first daemon registration: runtime tokens name a live one (a revoked or unknown one is 401). */
  readonly registrationTokenId: string;
}

export async function provisionOrg(t: TestNode, name = `Org ${randomUUID().slice(0, 8)}`): Promise<ProvisionedOrg> {
  const r = await t.call('POST', '/api/admin/orgs', {
    token: t.adminToken, body: { name, owner: { email: `owner-${randomUUID().slice(0, 8)}@example.test` } },
  });
  expect(r.status, r.text).to.equal(201);
  return {
    orgId: r.json.org.id, projectId: r.json.project.id, ownerId: r.json.owner.id, ownerToken: r.json.userToken, apiKey: r.json.apiKey.fullKey,
    registrationTokenId: r.json.registrationTokenId,
  };
}

export async function addUser(t: TestNode, orgId: string, role: 'owner' | 'admin' | 'member' | 'viewer'): Promise<{ userId: string; token: string }> {
  const r = await t.call('POST', `/api/admin/orgs/${orgId}/users`, {
    token: t.adminToken, body: { email: `${role}-${randomUUID().slice(0, 8)}@example.test`, role },
  });
  expect(r.status, r.text).to.equal(201);
  return { userId: r.json.user.id, token: r.json.userToken };
}

export async function nonHumanTokens(t: TestNode, org: ProvisionedOrg): Promise<Record<'apiKey' | 'runtime' | 'machine', string>> {
  const keys = deriveSigningKeys(t.node.deps.secrets);
  const clock = t.node.deps.clock;
  const runtime = await signToken(keys, clock, 'runtime', { wid: randomUUID(), org: org.orgId, prj: [org.projectId], reg: org.registrationTokenId, scope: ['read'] });
  const machine = await signToken(keys, clock, 'machine', { cid: randomUUID(), org: org.orgId, scope: ['admin'] });
  return { apiKey: org.apiKey, runtime: runtime.token, machine: machine.token };
}

/** Every governance suite runs on the embedded engines and, where they are up, on the real ones (PostgreSQL, RabbitMQ, Redis). */
export const governanceEngineSets: ReadonlyArray<{ readonly set: EngineSet; readonly skip: boolean }> = [
  { set: 'embedded', skip: false },
  { set: 'real', skip: skipEngine.postgres || skipEngine.amqp || skipEngine.redis },
];
