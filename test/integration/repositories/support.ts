import { expect } from 'chai';
import type { CallResult, TestNode } from '../../support/node.js';
import type { Org } from '../sessions/support.js';

/** User tokens of one org by what they may do with its first project's repositories. */
export interface ProjectPeople {
  /** An org viewer who administers nothing: reads only. */
  readonly orgViewer: string;
  /** An org viewer granted `viewer` on the project. */
  readonly projectViewer: string;
  /** An org viewer granted `editor` on the project: registers and removes. */
  readonly projectEditor: string;
}

export async function projectPeople(t: TestNode, org: Org): Promise<ProjectPeople> {
  const user = async (role: string, projects?: { id: string; role: string }[]) => {
    const res = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, {
      token: t.adminToken, body: { email: `${role}-${Math.random().toString(36).slice(2)}@repos.test`, role: 'viewer', ...(projects ? { projects } : {}) },
    });
    expect(res.status, res.text).to.equal(201);
    return res.json.userToken as string;
  };
  const [orgViewer, projectViewer, projectEditor] = await Promise.all([
    user('viewer'), user('project-viewer', [{ id: org.projectId, role: 'viewer' }]), user('project-editor', [{ id: org.projectId, role: 'editor' }]),
  ]);
  return { orgViewer, projectViewer, projectEditor };
}

export const repositoriesPath = (org: Org): string => `/api/projects/${org.projectId}/repositories`;

export function register(t: TestNode, org: Org, body: Record<string, unknown>, token = org.ownerToken): Promise<CallResult> {
  return t.call('POST', repositoriesPath(org), { token, body });
}

/** Registers a repository that must be accepted; answers its view. */
export async function registered(t: TestNode, org: Org, body: Record<string, unknown>): Promise<{ id: string; url: string; name: string; defaultBranch: string }> {
  const res = await register(t, org, body);
  expect(res.status, res.text).to.equal(201);
  return res.json;
}

export async function repositoryNames(t: TestNode, org: Org, token = org.ownerToken): Promise<string[]> {
  const res = await t.call('GET', repositoriesPath(org), { token });
  expect(res.status, res.text).to.equal(200);
  return (res.json.repositories as { name: string }[]).map((r) => r.name);
}
