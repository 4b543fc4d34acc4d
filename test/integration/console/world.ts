import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';

/**
 * An org for console tests: an owner and a member who sign in with passwords, and a worker driven through the
 * daemon protocol over HTTP exactly as a worker process would (register, poll, status transitions, interview
 * deltas), so the pages are exercised against real sessions without a worker process.
 */
export const PASSWORD = 'correct horse battery staple';

export interface ConsoleOrg {
  readonly orgId: string;
  readonly projectId: string;
  readonly apiKey: string;
  readonly registrationToken: string;
  readonly owner: Person;
  readonly member: Person;
}

export interface Person { readonly email: string; readonly userId: string; readonly token: string }

export async function consoleOrg(t: TestNode, name = `Console ${randomUUID().slice(0, 6)}`): Promise<ConsoleOrg> {
  const ownerEmail = `owner-${randomUUID().slice(0, 8)}@console.test`;
  const created = await t.call('POST', '/api/admin/orgs', { token: t.adminToken, body: { name, owner: { email: ownerEmail, password: PASSWORD } } });
  expect(created.status, created.text).to.equal(201);
  const { org, project, owner, userToken, apiKey, registrationToken } = created.json;
  const memberEmail = `member-${randomUUID().slice(0, 8)}@console.test`;
  const member = await t.call('POST', `/api/admin/orgs/${org.id}/users`, { token: t.adminToken, body: { email: memberEmail, role: 'member', password: PASSWORD } });
  expect(member.status, member.text).to.equal(201);
  return {
    orgId: org.id, projectId: project.id, apiKey: apiKey.fullKey, registrationToken,
    owner: { email: ownerEmail, userId: owner.id, token: userToken },
    member: { email: memberEmail, userId: member.json.user.id, token: member.json.userToken },
  };
}

/** A run's git workspace as a worker reports it with a status (`workspace`), two commits on `troupe/<id>`, pushed. */
export function workspaceReport(repositoryId: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    repository: repositoryId, branch: 'troupe/checkout-fix', baseCommit: 'a'.repeat(40), headCommit: 'c'.repeat(40),
    commits: [{ sha: 'c'.repeat(40), subject: 'Retry the checkout call once' }, { sha: 'b'.repeat(40), subject: 'Reproduce the flaky checkout' }],
    filesChanged: 2, insertions: 14, deletions: 3, dirty: false, pushed: true, ...over,
  };
}

export class SimulatedWorker {
  private constructor(private readonly t: TestNode, readonly workerId: string, private readonly jwt: string) {}

  static async register(t: TestNode, org: ConsoleOrg, hostname = 'build-box-1', maxAgents = 4): Promise<SimulatedWorker> {
    const r = await t.call('POST', '/v1/daemon/register', { body: { registrationToken: org.registrationToken, hostname, maxAgents } });
    expect(r.status, r.text).to.equal(200);
    return new SimulatedWorker(t, r.json.workerId, r.json.runtimeJwt);
  }

  async heartbeat(): Promise<void> {
    const r = await this.t.call('POST', '/api/daemon/heartbeat', { token: this.jwt, body: { workerId: this.workerId } });
    expect(r.status, r.text).to.equal(200);
  }

  /** Polls until the session is offered (the worker's loop), then claims it. */
  async claim(sessionId: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.t.call('POST', '/api/daemon/poll', { token: this.jwt, body: { workerId: this.workerId, capacity: 100 } });
      expect(r.status, r.text).to.equal(200);
      if ((r.json.sessions as { id: string }[]).some((s) => s.id === sessionId)) break;
      if (Date.now() > deadline) throw new Error(`session ${sessionId} was never offered`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.move(sessionId, 'claimed');
  }

  async move(sessionId: string, status: string, extra: Record<string, unknown> = {}): Promise<void> {
    const r = await this.t.call('POST', `/api/sessions/${sessionId}/status`, { token: this.jwt, body: { status, workerId: this.workerId, ...extra } });
    expect(r.status, r.text).to.equal(200);
  }

  /** Reports the agent's tool steps, each becoming a `tool` activity (`Tool: summary`) of the session. */
  async steps(sessionId: string, steps: { tool: string; summary: string }[]): Promise<void> {
    const at = Date.now();
    const r = await this.t.call('POST', `/api/sessions/${sessionId}/steps`, {
      token: this.jwt, body: { workerId: this.workerId, steps: steps.map((s, i) => ({ ...s, at: new Date(at + i).toISOString() })) },
    });
    expect(r.status, r.text).to.equal(202);
  }

  /** Streams agent output the way a worker relays its agent's tokens (the interview is named by the session). */
  async stream(sessionId: string, tokens: string[]): Promise<void> {
    const r = await this.t.call('POST', `/api/interview/${sessionId}/deltas`, { token: this.jwt, body: { tokens } });
    expect(r.status, r.text).to.equal(202);
  }
}
