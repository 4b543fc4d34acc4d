import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';

/** One provisioned org as the admin route returns it, plus a member and a viewer of it. */
export interface Org {
  readonly orgId: string;
  readonly projectId: string;
  readonly ownerToken: string;
  readonly apiKey: string;
  readonly registrationToken: string;
  readonly registrationTokenId: string;
  readonly memberToken: string;
}

export async function provisionOrg(t: TestNode, name: string): Promise<Org> {
  const created = await t.inject('POST', '/api/admin/orgs', {
    token: t.adminToken, body: { name, owner: { email: `owner-${Math.random().toString(36).slice(2)}@${name.toLowerCase()}.test` } },
  });
  expect(created.status, created.text).to.equal(201);
  const { org, project, userToken, apiKey, registrationToken, registrationTokenId } = created.json;
  const member = await t.inject('POST', `/api/admin/orgs/${org.id}/users`, {
    token: t.adminToken, body: { email: `member-${Math.random().toString(36).slice(2)}@${name.toLowerCase()}.test`, role: 'member' },
  });
  expect(member.status, member.text).to.equal(201);
  return {
    orgId: org.id, projectId: project.id, ownerToken: userToken, apiKey: apiKey.fullKey, registrationToken, registrationTokenId,
    memberToken: member.json.userToken,
  };
}

export interface Daemon { readonly workerId: string; readonly runtimeJwt: string }

export async function registerDaemon(t: TestNode, org: Org, hostname = 'host-1'): Promise<Daemon> {
  const res = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: org.registrationToken, hostname, maxAgents: 4 } });
  expect(res.status, res.text).to.equal(200);
  return { workerId: res.json.workerId, runtimeJwt: res.json.runtimeJwt };
}

export async function dispatch(t: TestNode, org: Org, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.inject('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Fix ENG-1', ...extra } });
  expect(res.status, res.text).to.equal(201);
  return res.json.sessionId;
}

export async function report(t: TestNode, d: Daemon, sessionId: string, status: string, extra: Record<string, unknown> = {}) {
  return t.inject('POST', `/api/sessions/${sessionId}/status`, { token: d.runtimeJwt, body: { status, workerId: d.workerId, ...extra } });
}
