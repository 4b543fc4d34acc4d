import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { CallResult, TestNode } from '../../support/node.js';
import { auditOutboxDepth } from '../../../storage/audit-outbox.js';
import { openSse, type SseClient } from '../streams/sse-client.js';
import type { Daemon, Org } from '../sessions/support.js';

/** User tokens of one org by the role that decides what they may do with its queue controls. */
export interface People {
  readonly orgAdmin: string;
  readonly orgViewer: string;
  /** Org viewers granted a role on the org's first project. */
  readonly projectAdmin: string;
  readonly projectEditor: string;
  readonly projectViewer: string;
  /** An API key of the org with only the read scope. */
  readonly readKey: string;
}

export async function people(t: TestNode, org: Org): Promise<People> {
  const user = async (role: string, projects?: { id: string; role: string }[]) => {
    const res = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, {
      token: t.adminToken, body: { email: `${randomUUID().slice(0, 8)}@queue.test`, role, ...(projects ? { projects } : {}) },
    });
    expect(res.status, res.text).to.equal(201);
    return res.json.userToken as string;
  };
  const on = (role: string) => [{ id: org.projectId, role }];
  const [orgAdmin, orgViewer, projectAdmin, projectEditor, projectViewer] = await Promise.all([
    user('admin'), user('viewer'), user('viewer', on('admin')), user('viewer', on('editor')), user('viewer', on('viewer')),
  ]);
  const key = await t.call('POST', `/api/org/${org.orgId}/keys`, { token: org.ownerToken, body: { name: 'reader', scopes: ['read'] } });
  expect(key.status, key.text).to.equal(201);
  return { orgAdmin, orgViewer, projectAdmin, projectEditor, projectViewer, readKey: key.json.fullKey };
}

/** The org's audit entries of the given types, oldest first, once the outbox has moved what it holds into the chain. */
export async function auditOf(t: TestNode, org: Org, types: readonly string[]): Promise<Array<{ type: string; actor: string; subject: string; payload: any }>> {
  for (let i = 0; i < 200 && (await auditOutboxDepth(t.node.deps.db)) > 0; i++) await new Promise((r) => setTimeout(r, 25));
  const res = await t.call('GET', '/api/audit?limit=100', { token: org.ownerToken });
  expect(res.status, res.text).to.equal(200);
  return (res.json.entries as Array<{ type: string; actor: string; subject: string; payload: any }>).filter((e) => types.includes(e.type)).reverse();
}

/** A worker's daemon event stream, open and past its `ready`. */
export async function connect(t: TestNode, d: Daemon, streams: SseClient[]): Promise<SseClient> {
  const s = await openSse(`${t.url}/api/daemon/events`, { token: d.runtimeJwt });
  streams.push(s);
  expect(s.status).to.equal(200);
  await s.next((f) => f.event === 'ready');
  return s;
}

/** The ids of the first-run sessions a poll offers the worker. */
export async function polled(t: TestNode, d: Daemon, capacity = 10): Promise<string[]> {
  const res = await t.inject('POST', '/api/daemon/poll', { token: d.runtimeJwt, body: { workerId: d.workerId, capacity } });
  expect(res.status, res.text).to.equal(200);
  return (res.json.sessions as Array<{ id: string; queuedPrompts?: unknown }>).filter((s) => s.queuedPrompts === undefined).map((s) => s.id);
}

/** Waits `ms` and answers whether a frame matching `match` arrived meanwhile (or before). */
export async function heardWithin(s: SseClient, match: Parameters<SseClient['next']>[0], ms: number): Promise<boolean> {
  return s.next(match, ms).then(() => true, () => false);
}

export const expectRefused = (res: CallResult, status: number, code: string, what: string): void => {
  expect([res.status, res.json?.code], `${what}: ${res.text}`).to.deep.equal([status, code]);
};
